#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A secret the server generates on first start into a file of its data directory (mode 0600) and
/// reads back on later starts: the admin token, the webhook key.
enum SecretFile {
    /// The secret at `path`, read by `read` (nil: no such file); else a new one from `generate`,
    /// written as `line(secret)` and a newline, and `created` true. Two processes starting at once
    /// agree on one secret: the loser of `O_EXCL` reads the winner's. `what` names the secret in errors.
    static func loadOrCreate<Secret>(_ path: String, what: String, read: (String) throws(StartupError) -> Secret?,
                                     generate: () -> Secret, line: (Secret) -> String) throws(StartupError) -> (secret: Secret, created: Bool) {
        if let existing = try read(path) { return (existing, false) }

        let secret = generate()
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd < 0 {
            // Another process created it between our read and our create: use theirs.
            if errno == EEXIST, let existing = try read(path) { return (existing, false) }
            throw StartupError("cannot create \(what) file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let bytes = Array((line(secret) + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count, fsync(fd) == 0 else {
            throw StartupError("cannot write \(what) file \(path): \(String(cString: strerror(errno)))")
        }
        return (secret, true)
    }
}
