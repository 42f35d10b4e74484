import ConcordDomain
import CSQLite
import Foundation
#if canImport(Glibc)
import Glibc
#endif

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
/// Durability (decided here): WAL with `synchronous=NORMAL` on the writer by default. SQLite's
/// documentation: in WAL mode with NORMAL, a commit is durable across an application crash (the WAL
/// is written before COMMIT returns; the OS holds it), and the database is never corrupted; only a
/// power loss or OS crash may roll back the last commits. The contract asks that an acknowledged write
/// survive `kill -9` of the server, which NORMAL gives (ConcurrencyAndCrashTests checks it). Cost
/// measured on this project's VM disk (ext4): FULL 4.4 ms per commit, NORMAL 0.02 ms — with FULL
/// every writer waits behind one fsync, capping writes near 230 commits/s. `.full` (configuration
/// key `sqliteSynchronous`) is there for deployments that want power-loss durability at that cost.
public final class SQLiteStore: ConcordStore, @unchecked Sendable {
    // @unchecked Sendable: `writerConnection` is only touched while holding `writerLock`; each
    // reader is used by one thread between the pool's `get()` and `release(_:)`. Connections are
    // never shared concurrently.
    private var writerConnection: Connection?
    private let writerLock = NSLock()
    private let writeHealth = WriteHealth()
    /// The reader connections (query-only), opened on demand.
    private let readers: Pool<Connection>
    /// Checkpoints the WAL off the request path (set up once the writer is open and migrated).
    private var checkpointer: WALCheckpointer?
    public let path: String
    public let feedSignals = FeedSignals()
    public var isSharedAcrossProcesses: Bool { false }

    /// `PRAGMA synchronous` of the writer connection (see the durability note above).
    public enum Synchronous: String, Sendable {
        /// fsync at every commit: survives power loss.
        case full = "FULL"
        /// fsync at checkpoints only: survives application crash, not power loss.
        case normal = "NORMAL"
    }

    /// Opens (creating) the database at `path`, migrates it, and refuses a newer schema.
    public convenience init(path: String, maxReaders: Int = 8, synchronous: Synchronous = .normal, memory: SQLiteMemory = SQLiteMemory()) throws {
        try self.init(path: path, maxReaders: maxReaders, synchronous: synchronous, memory: memory, checkpointFrames: WALCheckpointer.defaultFrames)
    }

    /// `checkpointFrames`: the WAL lengths past which a commit starts a background checkpoint or runs one itself (tests).
    init(path: String, maxReaders: Int = 8, synchronous: Synchronous = .normal, memory: SQLiteMemory = SQLiteMemory(),
         checkpointFrames: (background: Int, inline: Int)) throws {
        self.path = path
        self.readers = Pool(maximumCount: maxReaders,
                            messages: .init(closed: "Storage is closed.", cannotOpen: "Cannot open a database connection.")) {
            let c = try Connection(path: path, memory: memory)
            // Readers never write: enforce it, so a bug cannot bypass the writer lock.
            try c.execute("PRAGMA query_only=1")
            return c
        }
        // A new database is created readable by its owner only: it holds the change-token secret and
        // token hashes. SQLite gives its -wal and -shm files the database file's permissions.
        let fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        if fd >= 0 { Glibc.close(fd) }
        do {
            let writer = try Connection(path: path, memory: memory)
            try writer.execute("PRAGMA journal_mode=WAL")
            try writer.execute("PRAGMA synchronous=" + synchronous.rawValue)
            try writer.execute("PRAGMA foreign_keys=OFF")
            // Deleted content is overwritten with zeros, not left in free pages of the file (a
            // deleted account's names and journal text). The WAL holds it until the next
            // checkpoint (docs/operations.md says what backups keep).
            try writer.execute("PRAGMA secure_delete=ON")
            // A large write (an upload's commit of a million objects) grows the WAL to its size; a
            // checkpoint afterwards truncates it to this instead of keeping the file at its peak.
            try writer.execute("PRAGMA journal_size_limit=\(64 << 20)")
            // A write reads the rows it changes, then changes them: with PhotoKit's random
            // identifiers, a batch of 10 000 touches about as many pages of `objects` and of each
            // random-keyed index. The writer's larger cache keeps them between the two passes
            // instead of reading each page twice.
            try writer.execute("PRAGMA cache_size=-\(memory.writerCacheKiB)")
            try SQLiteMigrations.migrate(writer)
            // No checkpoint inside a commit any more: a background one, on a connection of its own
            // with the writer's durability setting (WALCheckpointer).
            let checkpointer = WALCheckpointer(frames: checkpointFrames) {
                let c = try Connection(path: path, memory: SQLiteMemory(cacheKiB: 1024, mmapBytes: 0))
                try c.execute("PRAGMA synchronous=" + synchronous.rawValue)
                return c
            }
            checkpointer.attach(to: writer)
            self.checkpointer = checkpointer
            self.writerConnection = writer
        } catch let e as SQLiteStoreError {
            throw e
        } catch let e as SQLiteError {
            throw SQLiteStoreError(message: "cannot open database \(path): \(e.message)")
        }
    }

    /// A store dropped without `close()`: its background checkpoint ends with it.
    deinit {
        if let w = self.writerConnection { self.checkpointer?.detach(from: w) }
        self.checkpointer?.close()
    }

    /// The schema version this build writes.
    public static var schemaVersion: Int { SQLiteMigrations.latestVersion }

    public func readServer<T>(_ body: (any ServerReadTransaction) throws -> T) throws -> T {
        try self.withReader { try body(SQLiteTransaction($0, accountID: "")) }
    }

    public func writeServer<T>(_ body: (any ServerWriteTransaction) throws -> T) throws -> T {
        try self.withWriter { try body(SQLiteTransaction($0, accountID: "")) }
    }

    public func read<T>(account accountID: String, _ body: (any AccountReadTransaction) throws -> T) throws -> T {
        try self.withReader { try body(SQLiteTransaction($0, accountID: accountID)) }
    }

    /// SQLite has one writer for the whole file, so an account's writes are serialised by it.
    /// Feeds it appended to are announced once it has committed (a rollback announces nothing).
    public func write<T>(account accountID: String, _ body: (any AccountWriteTransaction) throws -> T) throws -> T {
        let touched = FeedRecorder()
        let result = try self.withWriter { connection in
            let tx = SQLiteTransaction(connection, accountID: accountID)
            tx.add(observer: touched)
            return try body(tx)
        }
        touched.publish(on: self.feedSignals)
        return result
    }

    /// One deferred transaction on a pooled reader: every statement of the body sees the same snapshot.
    private func withReader<T>(_ body: (Connection) throws -> T) throws -> T {
        try self.readers.withConnection { connection in
            try Self.mapErrors { try connection.transaction(immediate: false) { try body(connection) } }
        }
    }

    /// One `BEGIN IMMEDIATE` transaction on the writer connection.
    private func withWriter<T>(_ body: (Connection) throws -> T) throws -> T {
        self.writerLock.lock()
        defer { self.writerLock.unlock() }
        guard let writer = self.writerConnection else { throw DomainError.unavailable(message: "Storage is closed.") }
        return try self.writeHealth.tracking {
            try Self.mapStorageErrors { try Self.mapErrors { try writer.transaction(immediate: true) { try body(writer) } } }
        }
    }

    /// The writer connection, for tests and maintenance (caller must not use it concurrently with writes).
    var writer: Connection {
        get throws {
            guard let w = self.writerLock.withLock({ self.writerConnection }) else { throw DomainError.unavailable(message: "Storage is closed.") }
            return w
        }
    }

    /// Closes the store at shutdown: waits for the write in flight, checkpoints the WAL into the
    /// database file, closes every connection. Later calls answer `unavailable`.
    public func close() {
        self.writerLock.lock()
        if let w = self.writerConnection {
            if let checkpointer = self.checkpointer {
                checkpointer.detach(from: w)
                checkpointer.close()
            }
            try? w.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self.writerConnection = nil   // deinit closes it
        }
        self.writerLock.unlock()
        self.readers.close(waitingForConnectionsInUse: false)   // readers in use now are dropped when released (deinit closes them)
    }

    /// Answers whether the database answers (for `/ready`).
    /// Readable, and writable unless writes have been failing (then a probe write decides).
    public func ping() -> Bool {
        let readable = (try? self.readServer { tx -> Bool in
            _ = try tx.setting("ping")
            return true
        }) ?? false
        return readable && self.writeHealth.probe(self)
    }

    /// Busy or locked after the busy timeout (another process holds the write lock): 503, retry.
    private static func mapErrors<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as SQLiteError where e.primaryCode == SQLITE_BUSY || e.primaryCode == SQLITE_LOCKED {
            throw DomainError.unavailable(message: "The database is busy; retry later.")
        }
    }

    /// The writer's failures for lack of storage (disk full, read-only file system, I/O error):
    /// the transaction rolled back, nothing was stored: 507.
    private static func mapStorageErrors<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as SQLiteError where e.primaryCode == SQLITE_FULL || e.primaryCode == SQLITE_IOERR || e.primaryCode == SQLITE_READONLY {
            throw DomainError.insufficientStorage(message: "Storage cannot take writes (\(e.message)); nothing was stored. Retry later.")
        }
    }
}

/// How much memory each SQLite connection may use (the writer and every reader).
public struct SQLiteMemory: Sendable, Equatable {
    /// `PRAGMA cache_size`: the page cache of one connection, in KiB (heap memory).
    public var cacheKiB: Int
    /// `PRAGMA mmap_size`: how much of the file is read through a memory map, in bytes. Mapped
    /// pages are the kernel's page cache, shared by every connection, and count in the
    /// process's resident size (`RssFile`) while they are mapped.
    public var mmapBytes: Int

    /// The writer connection's page cache: four times a reader's (64 MiB at the default), so a
    /// batch's pages stay cached from its reads to its writes (docs/scaling.md).
    public var writerCacheKiB: Int { 4 * self.cacheKiB }

    public init(cacheKiB: Int = 16 * 1024, mmapBytes: Int = 0) {
        self.cacheKiB = cacheKiB
        self.mmapBytes = mmapBytes
    }
}
