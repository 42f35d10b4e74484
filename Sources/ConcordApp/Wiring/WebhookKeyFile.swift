#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ConcordDomain
import ConcordObservability

/// Where the webhook key comes from: `webhooks.secretKey`, or the `webhook-key` file in the data
/// directory, generated on first start (32 bytes from the kernel's CSPRNG, 64 hex digits, mode
/// 0600) and reused on later starts — as the admin token is. The key never enters the database,
/// so a copy of the database alone opens no webhook secret.
enum WebhookKeyFile {
    static let fileName = "webhook-key"

    /// The key configured as 64 hex digits, or else the one in the data directory's file (created
    /// when missing), and the file this call created (nil otherwise), which a startup that fails
    /// later removes again. PostgreSQL has no data directory of its own: the file lives in ./data,
    /// and instances sharing one database must all be configured with the same key.
    static func resolve(configured: String?, database: Configuration.Database, logger: Logger?) throws(StartupError) -> (key: WebhookKey, generatedFile: String?) {
        if let configured {
            guard let key = WebhookKey(hex: configured) else {
                throw StartupError("webhooks.secretKey (CONCORD_WEBHOOKS_SECRET_KEY) must be 64 hex digits (e.g. openssl rand -hex 32)")
            }
            return (key, nil)
        }
        let databasePath: String
        switch database {
        case .sqlite(let path): databasePath = path
        case .postgres: databasePath = "./data/concord.sqlite"
        }
        // Resolved before storage opens (the service seals with it): the directory may not exist yet.
        try DataDirectory.create(forDatabaseAt: databasePath)
        return try self.loadOrCreate(directory: DataDirectory.path(forDatabaseAt: databasePath), logger: logger)
    }

    /// Reads `directory/webhook-key`, or creates it with a new key when it does not exist. Two
    /// processes starting at once agree on one key (the loser of `O_EXCL` reads the winner's).
    /// The log names the file, never the key.
    static func loadOrCreate(directory: String, logger: Logger? = nil) throws(StartupError) -> (key: WebhookKey, generatedFile: String?) {
        let path = directory + "/" + Self.fileName
        let (key, created) = try SecretFile.loadOrCreate(path, what: "webhook key", read: self.readKey, generate: WebhookKey.generate, line: { $0.hex })
        guard created else { return (key, nil) }
        logger?.notice("generated webhook key", metadata: ["audit": .bool(true), "file": .string(path), "keyID": .string(key.keyID)])
        return (key, path)
    }

    /// The key stored at `path`; nil when the file does not exist.
    private static func readKey(_ path: String) throws(StartupError) -> WebhookKey? {
        if access(path, F_OK) != 0 && errno == ENOENT { return nil }
        switch ConfigurationLoader.readFile(path) {
        case .success(let bytes):
            var text = bytes[...]
            while let last = text.last, last == 0x0A || last == 0x0D || last == 0x20 || last == 0x09 { text.removeLast() }
            guard let key = WebhookKey(hex: String(decoding: text, as: UTF8.self)) else {
                // Never replaced silently: a new key would make every stored secret unreadable.
                throw StartupError("webhook key file \(path) does not hold 64 hex digits; restore it, or set webhooks.secretKey")
            }
            return key
        case .failure(let reason):
            throw StartupError("cannot read webhook key file \(path): \(reason)")
        }
    }
}
