import ConcordDomain
import CSQLite
import Foundation

/// Why the SQLite store cannot start (newer schema, unreadable file, ...): one line for the operator.
public struct SQLiteStoreError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var description: String { self.message }
}

/// The SQLite engine of `ConcordStore`.
///
/// Threading: one writer connection behind a lock (SQLite serialises writers anyway) and a pool of
/// reader connections, each used by one thread at a time. Reads never wait for the writer (WAL).
///
/// Durability: WAL with `synchronous=FULL` on the writer. The WAL is fsynced at every commit, so an
/// acknowledged write survives `kill -9` AND power loss. (WAL+NORMAL would survive an application
/// crash — what the contract strictly requires — but could lose the last commits on power loss; we
/// pay one fsync per write transaction instead, which batching keeps to one per request.)
public final class SQLiteStore: ConcordStore, @unchecked Sendable {
    // @unchecked Sendable: `writer` is only touched while holding `writerLock`; `idleReaders` and
    // `openReaders` only while holding `readersCondition`; each reader is used by one thread between
    // check-out and check-in. Connections are never shared concurrently. `closed` is written while
    // holding both locks and read while holding either.
    let writer: Connection
    private let writerLock = NSLock()
    private let readersCondition = NSCondition()
    private var idleReaders: [Connection] = []
    private var openReaders = 0
    private let maxReaders: Int
    /// Set by `close()`, read under `writerLock` (writes) or `readersCondition` (reads).
    private var closed = false
    public let path: String

    /// Opens (creating) the database at `path`, migrates it, and refuses a newer schema.
    public init(path: String, maxReaders: Int = 8) throws {
        self.path = path
        self.maxReaders = max(1, maxReaders)
        do {
            self.writer = try Connection(path: path)
            try self.writer.execute("PRAGMA journal_mode=WAL")
            try self.writer.execute("PRAGMA synchronous=FULL")
            try self.writer.execute("PRAGMA foreign_keys=OFF")
            try SQLiteMigrations.migrate(self.writer)
        } catch let e as SQLiteStoreError {
            throw e
        } catch let e as SQLiteError {
            throw SQLiteStoreError(message: "cannot open database \(path): \(e.message)")
        }
    }

    /// The schema version this build writes.
    public static var schemaVersion: Int { SQLiteMigrations.latestVersion }

    public func read<T>(_ body: (any StoreReadTransaction) throws -> T) throws -> T {
        let connection = try self.checkOutReader()
        defer { self.checkIn(connection) }
        return try Self.mapErrors {
            // One deferred transaction: every statement of the body sees the same snapshot.
            try connection.transaction(immediate: false) { try body(SQLiteTransaction(connection)) }
        }
    }

    public func write<T>(_ body: (any StoreWriteTransaction) throws -> T) throws -> T {
        self.writerLock.lock()
        defer { self.writerLock.unlock() }
        guard !self.closed else { throw DomainError.unavailable(message: "The database is closed.") }
        return try Self.mapErrors {
            try self.writer.transaction(immediate: true) { try body(SQLiteTransaction(self.writer)) }
        }
    }

    /// Answers whether the database answers (for `/ready`).
    public func ping() -> Bool {
        // The setting need not exist: what counts is that the query ran (`try?` would flatten
        // an absent setting's nil into "not ready").
        (try? self.read { tx in _ = try tx.setting("ping"); return true }) ?? false
    }

    /// Busy or locked after the busy timeout (another process holds the write lock): 503, retry.
    private static func mapErrors<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as SQLiteError where e.primaryCode == SQLITE_BUSY || e.primaryCode == SQLITE_LOCKED {
            throw DomainError.unavailable(message: "The database is busy; retry later.")
        }
    }

    /// Closes every connection once the writer and all checked-out readers are back; later reads and
    /// writes throw `unavailable` and `ping()` answers false. Called once at shutdown; later calls do nothing.
    public func close() {
        self.writerLock.lock()
        defer { self.writerLock.unlock() }
        self.readersCondition.lock()
        self.closed = true
        while self.idleReaders.count < self.openReaders { self.readersCondition.wait() }
        for c in self.idleReaders { c.close() }
        self.idleReaders.removeAll()
        self.openReaders = 0
        self.readersCondition.unlock()
        self.writer.close()
    }

    private func checkOutReader() throws -> Connection {
        self.readersCondition.lock()
        while true {
            guard !self.closed else {
                self.readersCondition.unlock()
                throw DomainError.unavailable(message: "The database is closed.")
            }
            if let c = self.idleReaders.popLast() {
                self.readersCondition.unlock()
                return c
            }
            if self.openReaders < self.maxReaders {
                self.openReaders += 1
                self.readersCondition.unlock()
                do {
                    let c = try Connection(path: self.path)
                    // Readers never write: enforce it, so a bug cannot bypass the writer lock.
                    try c.execute("PRAGMA query_only=1")
                    return c
                } catch {
                    self.readersCondition.lock()
                    self.openReaders -= 1
                    self.readersCondition.signal()
                    self.readersCondition.unlock()
                    throw DomainError.unavailable(message: "Cannot open a database connection.")
                }
            }
            self.readersCondition.wait()
        }
    }

    private func checkIn(_ c: Connection) {
        self.readersCondition.lock()
        self.idleReaders.append(c)
        self.readersCondition.signal()
        self.readersCondition.unlock()
    }
}
