#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CSQLite
import Foundation
import Synchronization

/// The app's handle on storage: how `/ready` asks whether storage answers, and how
/// shutdown closes it. `StorageHook.open` is the one place that builds it.
///
/// Interim: until ConcordStorage's engine is wired in here, the hook keeps one SQLite
/// connection to the configured file and answers readiness with a real query. When the
/// engine lands, `open` opens the engine instead, `isReady` becomes its health check and
/// `close` its clean shutdown; route code does not change.
public struct StorageHook: Sendable {
    /// True when storage answers a trivial query right now. May block briefly.
    public var isReady: @Sendable () -> Bool
    /// Closes storage; called once at shutdown after the last request finished.
    public var close: @Sendable () -> Void

    public init(isReady: @escaping @Sendable () -> Bool, close: @escaping @Sendable () -> Void) {
        self.isReady = isReady
        self.close = close
    }

    /// Opens the configured database; throws a one-line reason when it cannot.
    static func open(_ database: Configuration.Database) throws(StartupError) -> StorageHook {
        switch database {
        case .postgres:
            throw StartupError("postgres support is not built yet; use sqlite:PATH")
        case .sqlite(let path):
            try DataDirectory.create(forDatabaseAt: path)
            let connection = try ReadinessConnection(path: path)
            return StorageHook(isReady: { connection.ping() }, close: { connection.close() })
        }
    }
}

/// A failure to start: printed as one line on stderr, exit status 1.
public struct StartupError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { self.message }
}

/// The directory holding the SQLite file (and the generated admin token).
enum DataDirectory {
    static func path(forDatabaseAt path: String) -> String {
        let url = URL(fileURLWithPath: path)
        return url.deletingLastPathComponent().path
    }

    /// Creates the database's directory (and parents) if missing.
    static func create(forDatabaseAt path: String) throws(StartupError) {
        let directory = self.path(forDatabaseAt: path)
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw StartupError("cannot create data directory \(directory): \(Self.reason(error))")
        }
    }

    static func reason(_ error: any Error) -> String {
        if let posix = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError, posix.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(posix.code)))
        }
        return (error as NSError).localizedDescription
    }
}

/// One SQLite connection used only to answer readiness.
final class ReadinessConnection: Sendable {
    /// The raw handle, only used under the mutex; nil once closed.
    private let handle: Mutex<OpaquePointer?>

    init(path: String) throws(StartupError) {
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nil)
        if rc != SQLITE_OK {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_close_v2(db)
            throw StartupError("cannot open database \(path): \(message)")
        }
        sqlite3_busy_timeout(db, 1000)
        // A file that is not SQLite opens fine and fails on first use: check now.
        if sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", nil, nil, nil) != SQLITE_OK {
            let message = String(cString: sqlite3_errmsg(db))
            sqlite3_close_v2(db)
            throw StartupError("cannot use database \(path): \(message)")
        }
        self.handle = Mutex(db)
    }

    func ping() -> Bool {
        self.handle.withLock { db in
            guard let db else { return false }
            return sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", nil, nil, nil) == SQLITE_OK
        }
    }

    func close() {
        self.handle.withLock { db in
            sqlite3_close_v2(db)
            db = nil
        }
    }
}
