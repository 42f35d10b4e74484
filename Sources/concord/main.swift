import ConcordApp
import Foundation

// Everything lives in ConcordApp so it can be tested; main only passes the process in.
// A server starts itself again once with huge pages for malloc's large blocks (HugePageMalloc).
if CommandLine.arguments.dropFirst().first == "serve" {
    HugePageMalloc.restartIfUseful(arguments: CommandLine.arguments, environment: ProcessInfo.processInfo.environment)
}
exit(CommandLineInterface.run(arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
