#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Commands for operators besides `serve`: `healthcheck` (for container health checks) and
/// `backup`, `rotate-change-key`, and `webhooks listen` for developers. Kept apart from `Command` so the server's command line stays as it is.
enum OperatorCommands {
    /// Runs `arguments` when they name an operator command and returns its exit status;
    /// nil for anything else (which `CommandLineInterface` handles).
    static func run(_ arguments: [String], environment: [String: String]) -> Int32? {
        guard let command = arguments.first else { return nil }
        let rest = Array(arguments.dropFirst())
        switch command {
        case "healthcheck": return Healthcheck.run(rest, environment: environment)
        case "backup": return BackupCommand.run(rest, environment: environment)
        case "rotate-change-key": return RotateChangeKeyCommand.run(rest, environment: environment)
        case "webhooks": return WebhooksCommand.run(rest, environment: environment)
        default: return nil
        }
    }

    /// `--name value` and `--name=value` pairs, names checked against `known`.
    static func flags(_ arguments: [String], known: [String]) throws(ConfigurationError) -> [(name: String, value: String)] {
        var result: [(name: String, value: String)] = []
        var i = 0
        while i < arguments.count {
            let argument = arguments[i]
            guard argument.hasPrefix("--") else { throw ConfigurationError("unexpected argument \(argument)") }
            if let eq = argument.firstIndex(of: "=") {
                let name = String(argument[..<eq])
                guard known.contains(name) else { throw ConfigurationError("unknown option \(name)") }
                result.append((name, String(argument[argument.index(after: eq)...])))
            } else {
                guard known.contains(argument) else { throw ConfigurationError("unknown option \(argument)") }
                guard i + 1 < arguments.count else { throw ConfigurationError("missing value for \(argument)") }
                i += 1
                result.append((argument, arguments[i]))
            }
            i += 1
        }
        return result
    }
}

/// Text on stdout, unbuffered (the process exits right after).
func printToStdout(_ text: String) {
    let bytes = Array(text.utf8)
    bytes.withUnsafeBytes { _ = write(1, $0.baseAddress, $0.count) }
}
