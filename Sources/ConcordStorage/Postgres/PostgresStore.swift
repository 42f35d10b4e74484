import CLibPQ
import ConcordDomain
import Foundation
import Synchronization

/// Why the PostgreSQL store cannot start (bad URL, unreachable, newer schema): one line for the operator.
public struct PostgresStoreError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public init(message: String) { self.message = message }
    public var description: String { self.message }
}

/// Where and how to connect: parsed from `postgres://user:password@host:port/dbname?key=value`
/// (`postgresql://` too). User, password and database name are percent-decoded; query items are
/// passed to libpq as connection parameters (`sslmode`, `connect_timeout`, ...).
public struct PostgresConfiguration: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var user: String?
    public var password: String?
    public var database: String
    public var options: [String: String]
    /// Connections kept open at most (reads and writes share them).
    public var poolSize: Int

    public init(host: String = "127.0.0.1", port: Int = 5432, user: String? = nil, password: String? = nil,
                database: String, options: [String: String] = [:], poolSize: Int = 8) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
        self.options = options
        self.poolSize = poolSize
    }

    /// Parses a `postgres://` or `postgresql://` URL; throws a one-line reason.
    public init(url: String, poolSize: Int = 8) throws(PostgresStoreError) {
        guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://"), let c = URLComponents(string: url) else {
            throw PostgresStoreError(message: "not a postgres://user:password@host:port/dbname URL")
        }
        var path = c.path
        if path.hasPrefix("/") { path.removeFirst() }
        guard !path.isEmpty, !path.contains("/") else { throw PostgresStoreError(message: "the URL names no database (postgres://user:password@host:port/dbname)") }
        var host = c.host ?? ""
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }   // IPv6 literal
        var options: [String: String] = [:]
        for item in c.queryItems ?? [] {
            guard let value = item.value else { continue }
            options[item.name] = value
        }
        self.init(host: host.isEmpty ? "127.0.0.1" : (host.removingPercentEncoding ?? host), port: c.port ?? 5432,
                  user: c.user, password: c.password, database: path, options: options, poolSize: poolSize)
    }

    /// libpq keyword/value pairs.
    var connectionParameters: [(String, String)] {
        var p: [(String, String)] = [("host", self.host), ("port", String(self.port)), ("dbname", self.database),
                                     ("application_name", "concord"), ("connect_timeout", "5"),
                                     // Notice a server that vanished without closing the socket.
                                     ("keepalives", "1"), ("keepalives_idle", "10"), ("keepalives_interval", "5"), ("keepalives_count", "3")]
        if let user = self.user { p.append(("user", user)) }
        if let password = self.password { p.append(("password", password)) }
        for (k, v) in self.options.sorted(by: { $0.key < $1.key }) {
            p.removeAll { $0.0 == k }
            p.append((k, v))
        }
        return p
    }

    /// `host:port/dbname`, safe to log.
    public var displayName: String { "\(self.host.contains(":") ? "[\(self.host)]" : self.host):\(self.port)/\(self.database)" }
}

/// The PostgreSQL engine of `ConcordStore`, for one or several Concord instances sharing one database.
///
/// Connections: a pool of at most `poolSize` libpq connections, opened on demand, each used by one
/// thread at a time; every statement is prepared once per connection; lists travel as arrays
/// (`= ANY($1)`, `unnest`), so a batch is one round trip whatever its size.
///
/// Reads run in a `REPEATABLE READ READ ONLY` transaction: one snapshot, like SQLite's, and take no
/// lock — writers of an account commit one after the other (below), so any snapshot holds a prefix
/// of the account's changes in sequence order, and readers never wait for each other or for writers.
/// The transaction begins only when a read sends a second statement (`PGConnection.deferBegin`): a
/// read of one statement — who holds a token, with a device token's device and its account's
/// mapping version (`DeviceCheck`), which is all a warm mapping request asks — runs on its own,
/// which is one snapshot as well, taken when the statement starts, so it sees every write committed
/// (acknowledged, through any instance) before. A warm mapping request is one statement, no BEGIN
/// or COMMIT.
/// Writes run in a `READ COMMITTED` transaction whose first statement takes `pg_advisory_xact_lock`
/// on its account (or on the settings, for a server-wide write):
/// the domain's write bodies read, decide and write, so they need what SQLite's single writer gives —
/// no other writer of the same account in between, on this instance or another. Accounts stay
/// independent. The lock is held until commit, so a device's change sequence numbers commit in
/// order and a token is only handed out after its change is visible.
/// A write that still fails with a serialization failure, deadlock or unique violation is run again
/// (up to 5 times): write bodies only compute their result from the transaction, so rerunning is safe.
///
/// Faults: a failed connection is dropped and the next use opens a new one, so the store recovers by
/// itself when PostgreSQL comes back; meanwhile calls throw `DomainError.unavailable` (503 + Retry-After).
/// A commit whose answer was lost is reported as unavailable, never as success.
public final class PostgresStore: ConcordStore, @unchecked Sendable {
    // @unchecked Sendable: every stored property is immutable and Sendable but the pool, which
    // guards itself; a connection is used by exactly one thread between `get()` and `release(_:)`.
    /// Every connection, reads and writes alike; a caller waits at most 10 s for a free one before
    /// answering unavailable.
    private let pool: Pool<PGConnection>
    private let writeHealth = WriteHealth()
    public let configuration: PostgresConfiguration
    public let feedSignals = FeedSignals()
    public var isSharedAcrossProcesses: Bool { true }
    /// Hears other instances' feed commits once `listenForOtherInstances()` started it.
    private let listener: PostgresFeedListener
    private let listening = Mutex(false)
    /// Mapping-log bytes written since the last `VACUUM mapping_deltas` this instance started.
    private let logBytesSinceVacuum = Mutex(0)
    /// The log's rows are pruned as new ones come (`keptMappingLogVersions`), but their out-of-line
    /// bytes stay in its TOAST table until a vacuum: autovacuum comes once a minute at most, and a
    /// first mapping writes ~160 bytes an identifier (87 MB left behind at a million × 2). Every
    /// this many bytes written, the instance vacuums the table itself (off the request path: a
    /// small table, its dead bytes reused by the next rows). The table's size is about what it
    /// keeps (`keptMappingLogBytes`) and this, so the two are small.
    static let mappingLogVacuumBytes = 2 << 20
    /// Has `objects`, `records` and `links` analysed after large writes (`TableStatistics`).
    let statistics = TableStatistics()
    /// Every statement this store's connections executed.
    private let statements = StatementCounter()

    /// Connects, migrates (under an advisory lock) and refuses a newer schema.
    public init(configuration: PostgresConfiguration) throws(PostgresStoreError) {
        self.configuration = configuration
        self.listener = PostgresFeedListener(parameters: configuration.connectionParameters, signals: self.feedSignals)
        let first: PGConnection
        let statements = self.statements
        do {
            first = try PGConnection(parameters: configuration.connectionParameters, counter: statements)
        } catch {
            throw PostgresStoreError(message: "cannot connect to postgres \(configuration.displayName): \(error.message)")
        }
        do {
            try PostgresMigrations.migrate(first)
        } catch let e as PostgresStoreError {
            throw e
        } catch {
            throw PostgresStoreError(message: "cannot migrate postgres \(configuration.displayName): \(error)")
        }
        // The tables' sizes as PostgreSQL last estimated them (on any instance): a new process's
        // first large write is then measured against them, not against zero. Best effort: without
        // them it counts from zero, as a store on a new database does.
        let statistics = self.statistics
        _ = try? first.query("SELECT relname::text, reltuples::bigint FROM pg_class WHERE oid = ANY($1::regclass[])",
                             [.textArray(TableStatistics.tables)]) { r in statistics.analysed(r.text(0), rows: r.int(1)) }
        let parameters = configuration.connectionParameters
        self.pool = Pool(maximumCount: configuration.poolSize, waitLimit: 10, initial: [first],
                         messages: .init(closed: "The database is closed.", cannotOpen: "The database is unavailable; retry later.",
                                         busy: "Every database connection is busy; retry later."),
                         make: { try PGConnection(parameters: parameters, counter: statements) }, isUsable: { $0.isUsable }, discard: { $0.close() })
    }

    /// The schema version this build writes.
    public static var schemaVersion: Int { PostgresMigrations.latestVersion }

    public func readServer<T>(_ body: (any ServerReadTransaction) throws -> T) throws -> T {
        try self.transaction(begin: Self.beginRead, deferred: true, retries: 0) { c in try body(PostgresTransaction(c, accountID: "", readOnly: true)) }
    }

    public func writeServer<T>(_ body: (any ServerWriteTransaction) throws -> T) throws -> T {
        try self.writeHealth.tracking {
            try self.transaction(begin: "BEGIN", retries: 5) { c in
                let tx = PostgresTransaction(c, accountID: "")
                try tx.lockSettings()
                return try body(tx)
            }
        }
    }

    public func read<T>(account accountID: String, _ body: (any AccountReadTransaction) throws -> T) throws -> T {
        try self.transaction(begin: Self.beginRead, deferred: true, retries: 0) { c in try body(PostgresTransaction(c, accountID: accountID, readOnly: true)) }
    }

    /// The account's advisory lock is the transaction's first statement: one place, so no write can forget it.
    /// Feeds it appended to are announced to other instances by `NOTIFY` inside the transaction, and
    /// to this one once it has committed.
    public func write<T>(account accountID: String, _ body: (any AccountWriteTransaction) throws -> T) throws -> T {
        var touched: [FeedTopic] = []
        var webhookEventsQueued = false
        var written = (objects: 0, records: 0, links: 0)
        var logBytes = 0
        let result = try self.writeHealth.tracking {
            try self.transaction(begin: "BEGIN", retries: 5) { c in
                let tx = PostgresTransaction(c, accountID: accountID)
                defer { written = (tx.objectRowsWritten, tx.recordRowsWritten, tx.linkRowsWritten); logBytes = tx.mappingLogBytesWritten }
                let feeds = FeedRecorder()
                tx.add(observer: feeds)
                try tx.lockAccount()
                let result = try body(tx)
                touched = Array(Set(feeds.feeds))
                webhookEventsQueued = feeds.webhookEventsQueued
                for topic in touched {
                    try c.query("SELECT pg_notify($1, $2)", [.text(PostgresFeedListener.channel), .text(self.listener.payload(topic))])
                }
                return result
            }
        }
        self.feedSignals.publish(.committed(touched))
        if webhookEventsQueued { self.feedSignals.publish(.webhookEventsQueued) }
        for table in self.statistics.wrote(objects: written.objects, records: written.records, links: written.links) {
            DispatchQueue.global(qos: .utility).async { self.analyse(table) }
        }
        if logBytes > 0 { self.logWritten(logBytes) }
        return result
    }

    /// Counts committed mapping-log bytes; past `mappingLogVacuumBytes`, vacuums the log once.
    private func logWritten(_ bytes: Int) {
        let due = self.logBytesSinceVacuum.withLock { total in
            total += bytes
            guard total >= Self.mappingLogVacuumBytes else { return false }
            total = 0
            return true
        }
        guard due else { return }
        DispatchQueue.global(qos: .utility).async {
            guard let connection = try? self.pool.get() else { return }   // best effort, as `analyse`
            _ = try? connection.execute("VACUUM mapping_deltas")
            self.pool.release(connection)
        }
    }

    /// `ANALYZE table` on a pooled connection (off the request path), then its new row estimate.
    /// Best effort: when no connection comes within the pool's wait, or the store is closed, it is
    /// skipped and autovacuum analyses the table later.
    private func analyse(_ table: String) {
        guard let connection = try? self.pool.get() else { return self.statistics.analysed(table, rows: nil) }
        var rows: Int64?
        if (try? connection.execute(Self.analyseStatement(table))) != nil {
            rows = (try? connection.scalarInt("SELECT reltuples::bigint FROM pg_class WHERE oid = $1::regclass", [.text(table)])) ?? nil
        }
        self.pool.release(connection)
        self.statistics.analysed(table, rows: rows)
    }

    /// `records` and `links` are analysed from a sample of 3 000 rows (`default_statistics_target`
    /// 10, not 100): a tenth of the cost. Their statements probe indexes row by row, so their plans
    /// need the tables' sizes and how rows spread over accounts and devices, not fine histograms;
    /// `objects` keeps the full sample. One implicit transaction: a failure undoes the `SET` too.
    static func analyseStatement(_ table: String) -> String {
        guard table == "records" || table == "links" else { return "ANALYZE \(table)" }
        return "SET default_statistics_target = 10; ANALYZE \(table); RESET default_statistics_target"
    }

    /// Starts the connection that hears other instances' feed commits (`concord serve` does; a
    /// store opened for a command or a test need not). Stopped by `close()`.
    public func listenForOtherInstances() {
        let start = self.listening.withLock { listening in
            defer { listening = true }
            return !listening
        }
        if start { self.listener.start() }
    }

    private static let beginRead = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

    /// Answers whether the database answers (for `/ready`).
    /// Readable, and writable unless writes have been failing (then a probe write decides).
    public func ping() -> Bool {
        let readable = (try? self.readServer { tx in _ = try tx.setting("ping"); return true }) ?? false
        return readable && self.writeHealth.probe(self)
    }

    /// Closes every connection once the checked-out ones are back; later calls throw `unavailable`.
    public func close() {
        if self.listening.withLock({ $0 }) { self.listener.stop() }
        self.pool.close(waitingForConnectionsInUse: true)
    }

    /// Connections open right now (for tests and metrics).
    public var openConnections: Int { self.pool.openCount }

    /// Statements executed since the store opened, BEGIN and COMMIT included (prepares are not):
    /// what requests cost PostgreSQL in round trips (tests count a warm mapping request's).
    public var statementsExecuted: Int { self.statements.value }

    // MARK: - Transactions

    /// `deferred`: a read whose transaction begins with its second statement (`PGConnection.deferBegin`).
    /// It runs again, begun at once, when its first statement's rows changed before the snapshot,
    /// and on a fresh connection when that statement found an idle connection dead (as `begin` does).
    private func transaction<T>(begin: String, deferred: Bool = false, retries: Int, _ body: (PGConnection) throws -> T) throws -> T {
        var attempt = 0
        var deferred = deferred, freshTried = false
        while true {
            let connection: PGConnection
            if deferred {
                connection = try self.pool.get()
                connection.deferBegin(begin)
            } else {
                connection = try self.begin(begin)
            }
            do {
                let value = try body(connection)
                if !deferred || connection.endDeferred() { try connection.execute("COMMIT") }
                self.pool.release(connection)
                return value
            } catch {
                let lostBeforeFirstAnswer = deferred && connection.lostBeforeFirstAnswer
                if deferred { connection.endDeferred() }
                if connection.needsRollback { try? connection.execute("ROLLBACK") }
                self.pool.release(connection)
                guard let e = error as? PostgresError else { throw error }
                if e.isSnapshotMoved {
                    deferred = false
                    continue
                }
                if lostBeforeFirstAnswer, !freshTried {
                    freshTried = true
                    continue
                }
                if e.isRetryable, attempt < retries {
                    attempt += 1
                    continue
                }
                throw Self.domainError(e)
            }
        }
    }

    /// A pooled connection with a transaction begun. An idle connection may have died with a server
    /// restart: nothing ran on it yet, so a fresh one is tried once before answering unavailable.
    private func begin(_ sql: String) throws -> PGConnection {
        for attempt in 0..<2 {
            let connection = try self.pool.get()
            do {
                try connection.execute(sql)
                return connection
            } catch {
                self.pool.release(connection)
                if !error.connectionLost || attempt == 1 { throw Self.domainError(error) }
            }
        }
        throw DomainError.unavailable(message: "The database is unavailable; retry later.")
    }

    /// Turns a PostgreSQL failure into the domain's terms: gone or overloaded → unavailable (503);
    /// a value PostgreSQL cannot store (e.g. NUL in text) → badRequest; the rest → internal.
    static func domainError(_ e: PostgresError) -> DomainError {
        // 53100 disk_full, 25006 read_only_sql_transaction (a read-only standby or
        // default_transaction_read_only), 58030 io_error: the write was not stored.
        if e.sqlState == "53100" || e.sqlState == "25006" || e.sqlState == "58030" {
            return .insufficientStorage(message: "The database cannot take writes ([\(e.sqlState)]); nothing was stored. Retry later.")
        }
        if e.connectionLost || e.isRetryable || e.sqlState.hasPrefix("53") || e.sqlState == "57014" || e.sqlState == "55P03" {
            return .unavailable(message: "The database is unavailable; retry later.")
        }
        if e.sqlState == "22021" || e.sqlState == "22P05" {
            return .badRequest(message: "A value contains characters the database cannot store.", field: nil)
        }
        return .internalError(message: "PostgreSQL: \(e)")
    }
}

/// Administrative statements outside the store (creating or dropping a database or schema for
/// tests and tools): one connection, the statements, closed again.
public enum PostgresAdmin {
    /// Runs `sql` (one or more statements, no parameters) on the database `url` names.
    public static func execute(url: String, _ sql: String) throws(PostgresStoreError) {
        let configuration = try PostgresConfiguration(url: url)
        do {
            let c = try PGConnection(parameters: configuration.connectionParameters)
            defer { c.close() }
            // libpq prints server notices (e.g. DROP SCHEMA … CASCADE listing every table) to stderr.
            try c.execute("SET client_min_messages TO warning")
            try c.execute(sql)
        } catch {
            throw PostgresStoreError(message: "postgres \(configuration.displayName): \(error.message)")
        }
    }
}
