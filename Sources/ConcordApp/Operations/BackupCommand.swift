import ConcordStorage

/// `concord backup --to FILE [--database D] [--config FILE]`: a consistent copy of the SQLite
/// database, safe while a server is serving from it (see `SQLiteStore.backup(databaseAt:to:)`).
/// The database comes from the same sources as `serve` (flags > `CONCORD_*` > config file).
///
/// Exit status: 0 when the copy is complete and synced, 1 when it failed, 2 for a usage
/// error, an existing destination, or a PostgreSQL database (use `pg_dump`).
enum BackupCommand {
    static let usage = "usage: concord backup --to FILE [--database D] [--config FILE]"

    /// Runs the subcommand on the arguments after `backup`; returns the exit status.
    static func run(_ arguments: [String], environment: [String: String]) -> Int32 {
        let flags: [(name: String, value: String)]
        do {
            flags = try OperatorCommands.flags(arguments, known: ["--to", "--database", "--config"])
        } catch {
            printError("concord: \(error.message) (\(self.usage))")
            return 2
        }
        guard let destination = flags.last(where: { $0.name == "--to" })?.value, !destination.isEmpty else {
            printError("concord: missing --to FILE (\(self.usage))")
            return 2
        }
        let configuration: Configuration
        do {
            configuration = try ConfigurationLoader.load(flags: flags.filter { $0.name != "--to" }, environment: environment)
        } catch {
            printError("concord: \(error.message)")
            return 2
        }
        switch configuration.database {
        case .postgres:
            printError("concord: backup copies SQLite databases only; back up PostgreSQL with pg_dump")
            return 2
        case .sqlite(let path):
            do {
                try SQLiteStore.backup(databaseAt: path, to: destination)
            } catch .destinationExists(let path) {
                printError("concord: \(path) already exists; a backup never overwrites a file")
                return 2
            } catch {
                printError("concord: \(error.description)")
                return 1
            }
            printToStdout("backed up \(configuration.database) to \(destination)\n")
            return 0
        }
    }
}
