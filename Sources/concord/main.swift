import ConcordApp
import Foundation

// Everything lives in ConcordApp so it can be tested; main only passes the process in.
exit(CommandLineInterface.run(arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
