#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ConcordDomain
import ConcordObservability
import Foundation

/// Where the webhook key comes from: `webhooks.secretKey`, or the file `webhook-key` in the data
/// directory (beside the SQLite file; `./data` with PostgreSQL), generated on first start (32 bytes
/// from the OS's generator, hex, mode 0600) and read back later — like the admin token. Never
/// stored in the database, so neither it nor a backup holds a usable webhook secret.
enum WebhookKeyFile {
    static func filePath(forDatabaseAt databasePath: String) -> String {
        DataDirectory.path(forDatabaseAt: databasePath) + "/webhook-key"
    }

    static func resolve(configured: String?, database: Configuration.Database, logger: Logger) throws(StartupError) -> WebhookKey {
        if let configured {
            guard let key = WebhookKey(hex: configured) else {
                throw StartupError("webhooks.secretKey (CONCORD_WEBHOOKS_SECRET_KEY) must be 64 hexadecimal characters")
            }
            return key
        }
        let databasePath: String
        switch database {
        case .sqlite(let path): databasePath = path
        case .postgres:
            databasePath = "./data/concord.sqlite"
            try DataDirectory.create(forDatabaseAt: databasePath)
        }
        let path = self.filePath(forDatabaseAt: databasePath)
        if let existing = try self.read(path) { return existing }
        let key = WebhookKey.generate()
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd < 0 {
            if errno == EEXIST, let existing = try self.read(path) { return existing }
            throw StartupError("cannot create webhook key file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let line = Array((key.hex + "\n").utf8)
        let written = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == line.count, fsync(fd) == 0 else {
            throw StartupError("cannot write webhook key file \(path): \(String(cString: strerror(errno)))")
        }
        logger.notice("generated webhook key", metadata: ["audit": .bool(true), "file": .string(path), "keyID": .string(key.keyID)])
        return key
    }

    private static func read(_ path: String) throws(StartupError) -> WebhookKey? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let key = WebhookKey(hex: text) else { throw StartupError("webhook key file \(path) does not hold 64 hexadecimal characters") }
        return key
    }
}
