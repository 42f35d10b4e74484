#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ConcordDomain
import ConcordObservability

/// Where the admin token comes from: the configuration, or a file in the data
/// directory generated on first start (256 bits from /dev/urandom, hex, mode 0600)
/// and reused on later starts.
enum AdminToken {
    /// Configured admin tokens shorter than this refuse the start.
    static let recommendedLength = 32

    /// The file holding a generated token for a database at `databasePath`.
    static func filePath(forDatabaseAt databasePath: String) -> String {
        DataDirectory.path(forDatabaseAt: databasePath) + "/admin-token"
    }

    /// The effective token, and the file it was generated into by this call (nil when it was
    /// configured or read back), which a startup that fails later removes again.
    /// A generated token goes to its file only; the log names the file, never the token. A
    /// configured token shorter than `recommendedLength` refuses the start, naming the setting
    ///: a guessable admin token is every account on the server.
    static func resolve(configured: String?, database: Configuration.Database, logger: Logger) throws(StartupError) -> (token: String, generatedFile: String?) {
        if let configured {
            guard configured.utf8.count >= Self.recommendedLength else {
                throw StartupError("adminToken (--admin-token, CONCORD_ADMIN_TOKEN) has \(configured.utf8.count) characters; "
                                   + "it needs at least \(Self.recommendedLength) (e.g. openssl rand -hex 32)")
            }
            return (configured, nil)
        }
        let databasePath: String
        switch database {
        case .sqlite(let path): databasePath = path
        case .postgres:
            // No data directory of its own: the generated token lives in ./data (configure one
            // token for every instance sharing a database, see docs/scaling.md).
            databasePath = "./data/concord.sqlite"
            try DataDirectory.create(forDatabaseAt: databasePath)
        }
        let path = self.filePath(forDatabaseAt: databasePath)
        let (token, created) = try SecretFile.loadOrCreate(path, what: "admin token", read: self.readToken, generate: self.generate, line: { $0 })
        guard created else { return (token, nil) }
        logger.notice("generated admin token", metadata: ["audit": .bool(true), "file": .string(path)])
        return (token, path)
    }

    /// The token stored at `path`; nil when the file does not exist.
    private static func readToken(_ path: String) throws(StartupError) -> String? {
        if access(path, F_OK) != 0 && errno == ENOENT { return nil }
        switch ConfigurationLoader.readFile(path) {
        case .success(let bytes):
            let text = String(decoding: bytes, as: UTF8.self).trimmingWhitespace()
            guard !text.isEmpty, !text.contains(where: { $0.isWhitespace }) else {
                throw StartupError("admin token file \(path) is empty or malformed; delete it to generate a new token")
            }
            return text
        case .failure(let reason):
            throw StartupError("cannot read admin token file \(path): \(reason)")
        }
    }

    /// 32 random bytes from the kernel's CSPRNG, as 64 hex digits.
    static func generate() -> String { Hex.encode(Secrets.randomBytes(32)) }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        var s = self[...]
        while let c = s.first, c.isWhitespace { s.removeFirst() }
        while let c = s.last, c.isWhitespace { s.removeLast() }
        return String(s)
    }
}
