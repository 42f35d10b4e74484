import ConcordDomain

/// `concord rotate-change-key`: adds a key for signing change tokens and makes it the one new
/// tokens use. Tokens signed with earlier keys stay valid; running servers accept
/// tokens of the new key at once (they look it up when a token names it) and sign with it from
/// their next start.
enum RotateChangeKeyCommand {
    static let usage = "usage: concord rotate-change-key [--database D] [--config FILE]"

    static func run(_ arguments: [String], environment: [String: String]) -> Int32 {
        let configuration: Configuration
        do {
            let flags = try OperatorCommands.flags(arguments, known: ["--database", "--config"])
            configuration = try ConfigurationLoader.load(flags: flags, environment: environment)
        } catch {
            printError("concord: \(error.message) (\(self.usage))")
            return 2
        }
        let storage: StorageHook
        do {
            storage = try StorageHook.open(configuration.database)
        } catch {
            printError("concord: \(error.message)")
            return 1
        }
        defer { storage.close() }
        do {
            let id = try ConcordService.rotateChangeKey(store: storage.store)
            printToStdout("change-token key \(id) is now current for \(configuration.database); earlier keys stay valid\n")
            return 0
        } catch {
            printError("concord: cannot rotate the change-token key: \(error.message)")
            return 1
        }
    }
}
