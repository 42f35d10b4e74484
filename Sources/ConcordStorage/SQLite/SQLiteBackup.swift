#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CSQLite

/// Why a backup was not made: one line for the operator.
public enum SQLiteBackupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The destination exists; a backup never overwrites anything.
    case destinationExists(path: String)
    /// The source cannot be read or the copy cannot be written.
    case failed(message: String)

    public var description: String {
        switch self {
        case .destinationExists(let path): "\(path) already exists; a backup never overwrites a file"
        case .failed(let message): message
        }
    }
}

/// `close(2)`, named apart: inside the extension `close` means `SQLiteStore.close()`.
private func closeDescriptor(_ fd: Int32) { _ = close(fd) }

extension SQLiteStore {
    /// Writes a consistent copy of the database at `source` to a new file `destination`,
    /// safe while a server writes to it.
    ///
    /// `VACUUM INTO` on a separate, read-only connection: it copies one read transaction's
    /// snapshot (WAL lets the writer go on meanwhile), so the copy holds every transaction
    /// committed before it started and none half-done. Read-only, so it never migrates or
    /// otherwise touches the source — a newer binary may back up an older schema and vice versa.
    ///
    /// The copy is written to a temporary file beside `destination`, fsynced, then hard-linked
    /// into place (`link` fails on an existing name: no overwrite, even in a race) — so
    /// `destination` appears complete or not at all.
    public static func backup(databaseAt source: String, to destination: String) throws(SQLiteBackupError) {
        if Self.exists(destination) { throw .destinationExists(path: destination) }

        var db: OpaquePointer?
        let rc = sqlite3_open_v2(source, &db, SQLITE_OPEN_READONLY, nil)
        defer { sqlite3_close_v2(db) }
        guard rc == SQLITE_OK, let db else {
            let reason = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            throw .failed(message: "cannot open database \(source): \(reason)")
        }
        // The server's writer holds the write lock only briefly; wait for it rather than fail.
        sqlite3_busy_timeout(db, 10_000)

        let temporary = destination + ".partial-\(getpid())"
        unlink(temporary)   // a leftover of an earlier, killed run of this same pid
        defer { unlink(temporary) }

        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, "VACUUM INTO ?1", -1, &stmt, nil) == SQLITE_OK, let stmt else {
            throw .failed(message: "cannot back up \(source): \(String(cString: sqlite3_errmsg(db)))")
        }
        defer { sqlite3_finalize(stmt) }
        // SQLITE_TRANSIENT: SQLite copies the path before the call returns.
        sqlite3_bind_text(stmt, 1, temporary, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
        let step = sqlite3_step(stmt)
        guard step == SQLITE_DONE else {
            throw .failed(message: "cannot back up \(source) to \(destination): \(String(cString: sqlite3_errmsg(db)))")
        }

        try Self.syncToDisk(path: temporary, what: "backup file")
        if link(temporary, destination) != 0 {
            let code = errno
            if code == EEXIST { throw .destinationExists(path: destination) }
            throw .failed(message: "cannot create \(destination): \(String(cString: strerror(code)))")
        }
        // The new name must survive a power loss too.
        try Self.syncToDisk(path: Self.directory(of: destination), what: "directory")
    }

    /// Backs up this store's database; see `backup(databaseAt:to:)`.
    public func backup(to destination: String) throws(SQLiteBackupError) {
        try Self.backup(databaseAt: self.path, to: destination)
    }

    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    private static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private static func syncToDisk(path: String, what: String) throws(SQLiteBackupError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .failed(message: "cannot open \(what) \(path): \(String(cString: strerror(errno)))") }
        defer { closeDescriptor(fd) }
        var rc: Int32
        repeat { rc = fsync(fd) } while rc != 0 && errno == EINTR
        guard rc == 0 else { throw .failed(message: "cannot sync \(what) \(path): \(String(cString: strerror(errno)))") }
    }
}
