#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the command line asks for.
public enum Command: Sendable, Equatable {
    case serve(Configuration)
    case version
    case help
}

/// `concord serve [flags]`, `concord version`, `concord help`.
public enum CommandLineInterface {
    /// The version `concord version` prints.
    public static let version = "0.1.0"

    public static let usage = """
        Concord — maps per-device photo-library identifiers to account-wide cloud identifiers.

        Usage:
          concord serve [--host H] [--port P] [--database D] [--admin-token T] [--config FILE] [--log-level L]
          concord version
          concord help
          concord healthcheck [--url http://HOST:PORT/PATH]
          concord backup --to FILE [--database D] [--config FILE]
          concord rotate-change-key [--database D] [--config FILE]
          concord webhooks listen --port P --secret whsec_... [--host 127.0.0.1]

        serve options (each also an environment variable):
          --host H          address to listen on (CONCORD_HOST, default 0.0.0.0)
          --port P          TCP port, 0 for any free port (CONCORD_PORT, default 8080)
          --database D      sqlite:PATH, a file path, or postgres://user:password@host:port/dbname
                            (CONCORD_DATABASE, default sqlite:./data/concord.sqlite)
          --admin-token T   admin bearer token (CONCORD_ADMIN_TOKEN; default: generated on first
                            start and kept in the data directory's admin-token file)
          --config FILE     JSON configuration file (CONCORD_CONFIG); see docs/configuration.md
          --log-level L     trace, debug, info, notice, warning or error (CONCORD_LOG_LEVEL, default info)
          --trusted-proxies LIST           reverse proxies whose Forwarded / X-Forwarded-For is believed:
                                           IP addresses or CIDR blocks, comma-separated (CONCORD_TRUSTED_PROXIES)
          --max-connections-per-address N  connections one client address may hold (default 1000, 0: no cap)
          --max-waiting-per-account N      long-polls one account may have held (default 100, 0: no share)
          --metrics-token T                bearer token GET /metrics asks for (CONCORD_METRICS_TOKEN; default: open)

        healthcheck: exit 0 when GET answers 200; default URL http://127.0.0.1:$CONCORD_PORT/health.
        backup: a consistent copy of the SQLite database, safe while a server serves it; never
        overwrites FILE.
        rotate-change-key: a new key signs change tokens from each server's next start; tokens
        signed with earlier keys stay valid (servers look up a key a token names).
        webhooks listen: for developing a push relay; receives webhook POSTs, verifies their
        signatures with the secret (repeat --secret for a previous one), answers 204 (401 for a bad
        signature, 400 for missing headers) and prints each new event as "type id data" on stdout.

        Precedence: defaults < config file < environment < flags.
        Exit status: 0 after a clean shutdown, 1 when the server cannot start, 2 for a usage or
        configuration error.
        """

    /// Parses the arguments after the program name.
    public static func parse(_ arguments: [String], environment: [String: String]) throws(ConfigurationError) -> Command {
        guard let command = arguments.first else { throw ConfigurationError("missing command: expected serve, version or help (see 'concord help')") }
        let rest = Array(arguments.dropFirst())
        switch command {
        case "help", "--help", "-h":
            return .help
        case "version", "--version":
            guard rest.isEmpty else { throw ConfigurationError("unexpected argument \(rest[0]) after version") }
            return .version
        case "serve":
            if rest.contains("--help") || rest.contains("-h") { return .help }
            return .serve(try ConfigurationLoader.load(flags: try self.flags(rest), environment: environment))
        default:
            throw ConfigurationError("unknown command \(command): expected serve, version or help (see 'concord help')")
        }
    }

    /// `--name value` and `--name=value` pairs, names checked against the known flags.
    static func flags(_ arguments: [String]) throws(ConfigurationError) -> [(name: String, value: String)] {
        var result: [(name: String, value: String)] = []
        var i = 0
        while i < arguments.count {
            let argument = arguments[i]
            guard argument.hasPrefix("--") else { throw ConfigurationError("unexpected argument \(argument) (see 'concord help')") }
            let name: String
            let value: String
            if let eq = argument.firstIndex(of: "=") {
                name = String(argument[..<eq])
                value = String(argument[argument.index(after: eq)...])
                try self.checkKnown(name)
            } else {
                name = argument
                try self.checkKnown(name)
                guard i + 1 < arguments.count else { throw ConfigurationError("missing value for \(name)") }
                i += 1
                value = arguments[i]
            }
            result.append((name, value))
            i += 1
        }
        return result
    }

    private static func checkKnown(_ name: String) throws(ConfigurationError) {
        guard ConfigurationLoader.flagNames.contains(name) else { throw ConfigurationError("unknown option \(name) (see 'concord help')") }
    }

    /// Runs the command line and returns the exit status: usage and configuration errors
    /// are one line on stderr and status 2.
    public static func run(arguments: [String], environment: [String: String]) -> Int32 {
        if let status = OperatorCommands.run(arguments, environment: environment) { return status }
        let command: Command
        do {
            command = try self.parse(arguments, environment: environment)
        } catch {
            printError("concord: \(error.message)")
            return 2
        }
        switch command {
        case .help:
            printOut(self.usage + "\n")
            return 0
        case .version:
            printOut("concord \(self.version)\n")
            return 0
        case .serve(let configuration):
            return serve(configuration)
        }
    }

    private static func printOut(_ text: String) {
        let bytes = Array(text.utf8)
        bytes.withUnsafeBytes { _ = write(1, $0.baseAddress, $0.count) }
    }
}
