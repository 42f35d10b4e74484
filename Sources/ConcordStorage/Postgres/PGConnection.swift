import CLibPQ
import Foundation
import Synchronization

/// A PostgreSQL failure: the server's SQLSTATE (when it sent one) and whether the connection is gone.
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    /// Five-character SQLSTATE, empty when the failure is on the client side (no connection, ...).
    public var sqlState: String
    public var message: String
    /// True when the connection is unusable afterwards (server gone, network cut): the pool drops it.
    public var connectionLost: Bool

    public var description: String {
        (self.sqlState.isEmpty ? "" : "[\(self.sqlState)] ") + self.message
    }

    /// serialization_failure, deadlock_detected, unique_violation: the transaction may simply be run again.
    var isRetryable: Bool { self.sqlState == "40001" || self.sqlState == "40P01" || self.sqlState == "23505" }

    /// A deferred read's first statement answered differently inside the snapshot begun for its
    /// second one (`PGConnection.deferBegin`): the read is run again, begun at once.
    static let snapshotMoved = PostgresError(sqlState: "", message: "the first statement's rows changed before the read's snapshot", connectionLost: false)
    var isSnapshotMoved: Bool { self.sqlState.isEmpty && !self.connectionLost && self.message == Self.snapshotMoved.message }
}

/// Statements a store's connections have executed (BEGIN and COMMIT included, prepares not): what
/// a request costs PostgreSQL in round trips, for tests and the operator.
final class StatementCounter: Sendable {
    private let count = Atomic<Int>(0)
    func add() { self.count.wrappingAdd(1, ordering: .relaxed) }
    var value: Int { self.count.load(ordering: .relaxed) }
}

/// A value bound to a statement parameter. Every parameter is sent in binary format with its
/// length, so text and bytes travel unchanged (no escaping, no quoting, no NUL termination).
enum PGValue {
    case text(String)
    case int(Int64)
    case double(Double)
    case bytes([UInt8])
    case textArray([String?])
    case intArray([Int64])
    case optionalIntArray([Int64?])
    case boolArray([Bool])
    /// `uuid[]`: 16 bytes each, NULL for an element that has no UUID form (it matches nothing).
    case uuidArray([[UInt8]?])
    case byteaArray([[UInt8]])
    case null(Oid)

    // Type OIDs of pg_type (stable across PostgreSQL versions).
    static let textOID: Oid = 25, int8OID: Oid = 20, float8OID: Oid = 701, byteaOID: Oid = 17, boolOID: Oid = 16
    static let textArrayOID: Oid = 1009, int8ArrayOID: Oid = 1016, boolArrayOID: Oid = 1000
    static let uuidOID: Oid = 2950, uuidArrayOID: Oid = 2951, byteaArrayOID: Oid = 1001

    var oid: Oid {
        switch self {
        case .text: Self.textOID
        case .int: Self.int8OID
        case .double: Self.float8OID
        case .bytes: Self.byteaOID
        case .textArray: Self.textArrayOID
        case .intArray, .optionalIntArray: Self.int8ArrayOID
        case .boolArray: Self.boolArrayOID
        case .uuidArray: Self.uuidArrayOID
        case .byteaArray: Self.byteaArrayOID
        case .null(let oid): oid
        }
    }

    static func optionalText(_ s: String?) -> PGValue { s.map { .text($0) } ?? .null(Self.textOID) }

    /// The binary wire form; nil for SQL NULL. Arrays are written straight into their buffer, not
    /// an array of bytes per element first: a mapping write binds a few arrays of a thousand each.
    func encode() -> [UInt8]? {
        switch self {
        case .text(let s): return Array(s.utf8)
        case .int(let v): return Self.bigEndian(UInt64(bitPattern: v))
        case .double(let d): return Self.bigEndian(d.bitPattern)
        case .bytes(let b): return b
        case .textArray(let items):
            let size = items.reduce(0) { $0 + 4 + ($1?.utf8.count ?? 0) }
            return Self.array(elementOID: Self.textOID, count: items.count, hasNulls: items.contains { $0 == nil }, size: size) { out in
                for item in items {
                    guard var s = item else { Self.int32(-1, into: &out); continue }
                    s.withUTF8 { utf8 in
                        Self.int32(Int32(utf8.count), into: &out)
                        out.append(contentsOf: utf8)
                    }
                }
            }
        case .intArray(let items):
            return Self.array(elementOID: Self.int8OID, count: items.count, hasNulls: false, size: 12 * items.count) { out in
                for v in items { Self.int64Element(v, into: &out) }
            }
        case .boolArray(let items):
            return Self.array(elementOID: Self.boolOID, count: items.count, hasNulls: false, size: 5 * items.count) { out in
                for b in items {
                    Self.int32(1, into: &out)
                    out.append(b ? 1 : 0)
                }
            }
        case .optionalIntArray(let items):
            return Self.array(elementOID: Self.int8OID, count: items.count, hasNulls: items.contains { $0 == nil }, size: 12 * items.count) { out in
                for v in items {
                    if let v { Self.int64Element(v, into: &out) } else { Self.int32(-1, into: &out) }
                }
            }
        case .uuidArray(let items):
            return Self.bytesArray(elementOID: Self.uuidOID, items)
        case .byteaArray(let items):
            return Self.bytesArray(elementOID: Self.byteaOID, items)
        case .null: return nil
        }
    }

    private static func bigEndian(_ v: UInt64) -> [UInt8] { withUnsafeBytes(of: v.bigEndian) { Array($0) } }
    private static func int32(_ v: Int32, into out: inout [UInt8]) {
        withUnsafeBytes(of: UInt32(bitPattern: v).bigEndian) { out.append(contentsOf: $0) }
    }
    /// An `int8` element: its length (8), then its bytes.
    private static func int64Element(_ v: Int64, into out: inout [UInt8]) {
        self.int32(8, into: &out)
        withUnsafeBytes(of: UInt64(bitPattern: v).bigEndian) { out.append(contentsOf: $0) }
    }

    /// One-dimensional array in PostgreSQL's binary array format (array_recv): ndim, has-nulls,
    /// element type, then (length, lower bound) and each element as (byte length or -1, bytes),
    /// which `elements` writes (`count` of them, about `size` bytes).
    private static func array(elementOID: Oid, count: Int, hasNulls: Bool, size: Int, _ elements: (inout [UInt8]) -> Void) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(20 + size)
        let empty = count == 0
        self.int32(empty ? 0 : 1, into: &out)
        self.int32(hasNulls ? 1 : 0, into: &out)
        self.int32(Int32(bitPattern: elementOID), into: &out)
        guard !empty else { return out }
        self.int32(Int32(count), into: &out)
        self.int32(1, into: &out)
        elements(&out)
        return out
    }

    private static func bytesArray(elementOID: Oid, _ items: [[UInt8]?]) -> [UInt8] {
        let size = items.reduce(0) { $0 + 4 + ($1?.count ?? 0) }
        return self.array(elementOID: elementOID, count: items.count, hasNulls: items.contains { $0 == nil }, size: size) { out in
            for item in items {
                if let item {
                    self.int32(Int32(item.count), into: &out)
                    out.append(contentsOf: item)
                } else {
                    self.int32(-1, into: &out)
                }
            }
        }
    }
}

/// The rows of one result, read in binary format. Valid until the next statement on the connection.
struct PGRow {
    let result: OpaquePointer
    let row: Int32

    func isNull(_ column: Int32) -> Bool { PQgetisnull(self.result, self.row, column) != 0 }

    private func bytes(_ column: Int32) -> UnsafeRawBufferPointer {
        let n = Int(PQgetlength(self.result, self.row, column))
        guard let p = PQgetvalue(self.result, self.row, column) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: p, count: n)
    }

    func text(_ column: Int32) -> String { String(decoding: self.bytes(column), as: UTF8.self) }
    func optionalText(_ column: Int32) -> String? { self.isNull(column) ? nil : self.text(column) }
    func blob(_ column: Int32) -> [UInt8] { Array(self.bytes(column)) }
    /// A column's raw binary value, valid until the next statement on the connection.
    func withBytes<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T { try body(self.bytes(column)) }

    /// int2, int4 or int8 by their width; 0 for NULL.
    func int(_ column: Int32) -> Int64 {
        let b = self.bytes(column)
        var v: UInt64 = 0
        for byte in b { v = v << 8 | UInt64(byte) }
        switch b.count {
        case 2: return Int64(Int16(truncatingIfNeeded: v))
        case 4: return Int64(Int32(truncatingIfNeeded: v))
        case 8: return Int64(bitPattern: v)
        default: return 0
        }
    }

    func double(_ column: Int32) -> Double {
        let b = self.bytes(column)
        guard b.count == 8 else { return 0 }
        var v: UInt64 = 0
        for byte in b { v = v << 8 | UInt64(byte) }
        return Double(bitPattern: v)
    }

    func bool(_ column: Int32) -> Bool { self.bytes(column).first.map { $0 != 0 } ?? false }
}

/// One row of a binary COPY: each field's bytes (nil: NULL), valid during the call only.
struct PGCopyRow {
    let fields: UnsafeBufferPointer<UnsafeRawBufferPointer?>

    func isNull(_ column: Int) -> Bool { column >= self.fields.count || self.fields[column] == nil }
    func bytes(_ column: Int) -> UnsafeRawBufferPointer {
        column < self.fields.count ? self.fields[column] ?? UnsafeRawBufferPointer(start: nil, count: 0) : UnsafeRawBufferPointer(start: nil, count: 0)
    }
    func utf8(_ column: Int) -> UnsafeBufferPointer<UInt8> { self.bytes(column).bindMemory(to: UInt8.self) }

    /// int2, int4 or int8 by their width; 0 for NULL.
    func int(_ column: Int) -> Int64 {
        let b = self.bytes(column)
        switch b.count {
        case 2: return Int64(Int16(bigEndian: b.loadUnaligned(as: Int16.self)))
        case 4: return Int64(Int32(bigEndian: b.loadUnaligned(as: Int32.self)))
        case 8: return Int64(bigEndian: b.loadUnaligned(as: Int64.self))
        default: return 0
        }
    }
}

/// One libpq connection with its prepared statements. Not thread-safe: the pool hands it to one
/// thread at a time.
final class PGConnection {
    private let handle: OpaquePointer
    /// SQL text → prepared statement name on this connection.
    private var prepared: [String: String] = [:]
    private(set) var isClosed = false
    /// Set when a failure showed the connection is gone; the pool then drops it.
    private(set) var isBroken = false
    /// Counts each statement executed (the store's, shared by its connections).
    private let counter: StatementCounter?
    /// A read transaction not begun yet (`deferBegin`).
    private var deferred: DeferredRead?
    /// What it connected with: a sibling reading the same snapshot connects the same way.
    private let parameters: [(String, String)]

    /// Connects with libpq keyword/value parameters (no string escaping involved).
    init(parameters: [(String, String)], counter: StatementCounter? = nil) throws(PostgresError) {
        self.counter = counter
        self.parameters = parameters
        let keys = parameters.map { strdup($0.0) } + [nil]
        let values = parameters.map { strdup($0.1) } + [nil]
        defer {
            for p in keys { free(p) }
            for p in values { free(p) }
        }
        let conn: OpaquePointer? = keys.withUnsafeBufferPointer { k in
            values.withUnsafeBufferPointer { v in
                k.withMemoryRebound(to: UnsafePointer<CChar>?.self) { kk in
                    v.withMemoryRebound(to: UnsafePointer<CChar>?.self) { vv in
                        PQconnectdbParams(kk.baseAddress, vv.baseAddress, 0)
                    }
                }
            }
        }
        guard let conn else { throw PostgresError(sqlState: "", message: "out of memory", connectionLost: true) }
        guard PQstatus(conn) == CONNECTION_OK else {
            let message = Self.oneLine(String(cString: PQerrorMessage(conn)))
            PQfinish(conn)
            throw PostgresError(sqlState: "", message: message, connectionLost: true)
        }
        // libpq's default prints server notices ("relation … already exists, skipping", DROP … CASCADE
        // listings) to stderr, outside the structured log; none of them needs an answer.
        PQsetNoticeProcessor(conn, { _, _ in }, nil)
        self.handle = conn
    }

    deinit { self.close() }

    func close() {
        guard !self.isClosed else { return }
        self.isClosed = true
        PQfinish(self.handle)
    }

    /// True while libpq believes the connection is up (it learns otherwise only on use) and no
    /// transaction is left open on it.
    var isUsable: Bool {
        !self.isClosed && !self.isBroken && PQstatus(self.handle) == CONNECTION_OK && PQtransactionStatus(self.handle) == PQTRANS_IDLE
    }

    /// True when the connection is up with a transaction open (or failed) on it: it needs a ROLLBACK.
    var needsRollback: Bool {
        !self.isClosed && !self.isBroken && PQstatus(self.handle) == CONNECTION_OK && PQtransactionStatus(self.handle) != PQTRANS_IDLE
    }

    /// Waits up to `timeoutMs` for asynchronous notifications (`LISTEN`) and returns their
    /// payloads (empty on timeout). Throws when the connection is lost.
    func notifications(timeoutMs: Int32) throws(PostgresError) -> [String] {
        var payloads = self.pendingNotifications()
        guard payloads.isEmpty else { return payloads }
        var descriptor = pollfd(fd: PQsocket(self.handle), events: Int16(POLLIN), revents: 0)
        guard descriptor.fd >= 0 else { throw PostgresError(sqlState: "", message: "connection lost", connectionLost: true) }
        if poll(&descriptor, 1, timeoutMs) > 0 {
            guard PQconsumeInput(self.handle) == 1, PQstatus(self.handle) == CONNECTION_OK else {
                self.isBroken = true
                throw PostgresError(sqlState: "", message: Self.oneLine(String(cString: PQerrorMessage(self.handle))), connectionLost: true)
            }
            payloads = self.pendingNotifications()
        }
        return payloads
    }

    private func pendingNotifications() -> [String] {
        var payloads: [String] = []
        while let notice = PQnotifies(self.handle) {
            payloads.append(String(cString: notice.pointee.extra))
            PQfreemem(notice)
        }
        return payloads
    }

    /// Runs one or more statements without parameters (simple query protocol).
    func execute(_ sql: String) throws(PostgresError) {
        try self.beginDeferred()
        try self.executeNow(sql)
    }

    private func executeNow(_ sql: String) throws(PostgresError) {
        self.counter?.add()
        let result = PQexec(self.handle, sql)
        defer { PQclear(result) }
        try self.check(result)
    }

    /// Runs a parameterised statement, prepared once per connection, and calls `row` for each row.
    /// Returns the number of rows affected (INSERT/UPDATE/DELETE) or returned.
    @discardableResult
    func query(_ sql: String, _ parameters: [PGValue] = [], row: (PGRow) throws -> Void = { _ in }) throws -> Int {
        var first = false
        switch self.deferred {
        case .notBegun: first = true
        case .firstStatementRan, .lostBeforeFirstAnswer: try self.beginDeferred()
        case nil: break
        }
        let result = try self.executePrepared(sql, parameters, firstOfDeferredRead: first)
        defer { PQclear(result) }
        if first { self.deferred = .firstStatementRan(sql: sql, parameters: parameters, rows: Self.rowBytes(result)) }
        let rows = PQntuples(result)
        for i in 0..<rows { try row(PGRow(result: result, row: i)) }
        let affected = String(cString: PQcmdTuples(result))
        return Int(affected) ?? Int(rows)
    }

    /// `query` without a named prepared statement (libpq's unnamed one: parsed and planned at each
    /// call), for a statement naming a table that lives briefly (an upload's staging table): a
    /// named statement would stay on the connection, and in its server process, after the table went.
    @discardableResult
    func queryUnprepared(_ sql: String, _ parameters: [PGValue] = [], row: (PGRow) throws -> Void = { _ in }) throws -> Int {
        try self.beginDeferred()
        self.counter?.add()
        let types = parameters.map(\.oid)
        let result: OpaquePointer? = types.withUnsafeBufferPointer { t in
            Self.withEncoded(parameters) { values, lengths, formats in
                PQexecParams(self.handle, sql, Int32(parameters.count), t.baseAddress, values, lengths, formats, 1)
            }
        }
        defer { PQclear(result) }
        try self.check(result)
        guard let result else { return 0 }
        let rows = PQntuples(result)
        for i in 0..<rows { try row(PGRow(result: result, row: i)) }
        let affected = String(cString: PQcmdTuples(result))
        return Int(affected) ?? Int(rows)
    }

    /// `query` for results too large to hold: libpq's single-row mode hands the rows over one at a
    /// time as they arrive, so a million-row result never sits whole in memory (the mapping index's
    /// load: 924 MiB for a 1M × 2 account). When `row` throws, the rest of the result is
    /// read and dropped, leaving the connection ready for the transaction's ROLLBACK.
    func stream(_ sql: String, _ parameters: [PGValue] = [], row: (PGRow) throws -> Void) throws {
        try self.beginDeferred()
        let name = try self.statementName(sql, parameters)
        self.counter?.add()
        let sent = Self.withEncoded(parameters) { values, lengths, formats in
            PQsendQueryPrepared(self.handle, name, Int32(parameters.count), values, lengths, formats, 1)
        }
        guard sent == 1, PQsetSingleRowMode(self.handle) == 1 else {
            let message = Self.oneLine(String(cString: PQerrorMessage(self.handle)))
            self.drain()
            let lost = PQstatus(self.handle) == CONNECTION_BAD
            if lost { self.isBroken = true }
            throw PostgresError(sqlState: "", message: message, connectionLost: lost)
        }
        var failure: (any Error)?
        while let result = PQgetResult(self.handle) {
            defer { PQclear(result) }
            guard failure == nil else { continue }
            if PQresultStatus(result) == PGRES_SINGLE_TUPLE {
                do { try row(PGRow(result: result, row: 0)) } catch { failure = error }
            } else {
                do { try self.check(result) } catch { failure = error }
            }
        }
        if let failure { throw failure }
    }

    /// `COPY (query) TO STDOUT (FORMAT binary)`, each row handed to `row` as it arrives: PostgreSQL
    /// streams the rows while this side decodes each in place, with no result object per row or per
    /// batch (a bulk read of a million rows: the mapping index's load). COPY binds no parameters:
    /// `query` may spell only values this process formats (integer keys). When `row` throws, the
    /// rest is read and dropped, leaving the connection ready for the transaction's ROLLBACK.
    func copyRows(_ query: String, row: (PGCopyRow) throws -> Void) throws {
        try self.beginDeferred()
        self.counter?.add()
        let start = PQexec(self.handle, "COPY (\(query)) TO STDOUT (FORMAT binary)")
        guard let start, PQresultStatus(start) == PGRES_COPY_OUT else {
            defer { PQclear(start) }
            try self.check(start)
            self.drain()
            throw PostgresError(sqlState: "", message: "COPY did not start", connectionLost: false)
        }
        PQclear(start)
        var failure: (any Error)?
        var reader = PGCopyReader()
        defer { reader.deallocate() }
        while true {
            var buffer: UnsafeMutablePointer<CChar>?
            let n = PQgetCopyData(self.handle, &buffer, 0)
            guard n >= 0 else { break }   // -1: done; -2: failed (the result below says why)
            guard let buffer else { continue }
            defer { PQfreemem(buffer) }
            guard failure == nil else { continue }
            do { try reader.read(UnsafeRawBufferPointer(start: buffer, count: Int(n)), row) } catch { failure = error }
        }
        while let result = PQgetResult(self.handle) {
            defer { PQclear(result) }
            if failure == nil { do { try self.check(result) } catch { failure = error } }
        }
        if let failure { throw failure }
        guard reader.ended else { throw PostgresError(sqlState: "", message: Self.oneLine(String(cString: PQerrorMessage(self.handle))), connectionLost: PQstatus(self.handle) == CONNECTION_BAD) }
    }

    // MARK: - A second reader of one snapshot

    /// A new connection (outside any pool) in a `REPEATABLE READ READ ONLY` transaction that reads
    /// this connection's transaction's snapshot (`pg_export_snapshot`, `SET TRANSACTION SNAPSHOT`):
    /// the two see exactly the same rows, so one read can run its statements on both at once. The
    /// snapshot is valid while this transaction stays open. End it with `endSnapshotSibling`.
    func openSnapshotSibling() throws -> PGConnection {
        try self.beginDeferred()   // a snapshot exported outside a transaction would end with its statement
        self.counter?.add()
        let result = PQexec(self.handle, "SELECT pg_export_snapshot()")
        defer { PQclear(result) }
        try self.check(result)
        guard PQntuples(result) == 1, let value = PQgetvalue(result, 0, 0) else {
            throw PostgresError(sqlState: "", message: "pg_export_snapshot answered no row", connectionLost: false)
        }
        let snapshot = String(cString: value)
        // PostgreSQL's identifier, spelled into the statement: hexadecimal digits and dashes only.
        guard !snapshot.isEmpty, snapshot.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 70) }) else {
            throw PostgresError(sqlState: "", message: "unexpected snapshot identifier", connectionLost: false)
        }
        let sibling = try PGConnection(parameters: self.parameters, counter: self.counter)
        do {
            try sibling.executeNow("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try sibling.executeNow("SET TRANSACTION SNAPSHOT '\(snapshot)'")
        } catch {
            sibling.close()
            throw error
        }
        return sibling
    }

    /// Ends a sibling's read and closes it.
    func endSnapshotSibling() {
        if self.needsRollback { try? self.executeNow("ROLLBACK") }
        self.close()
    }

    /// A prepared statement's result (never nil), checked.
    private func executePrepared(_ sql: String, _ parameters: [PGValue], firstOfDeferredRead: Bool = false) throws(PostgresError) -> OpaquePointer {
        let name = try self.statementName(sql, parameters)
        self.counter?.add()
        let result: OpaquePointer? = Self.withEncoded(parameters) { values, lengths, formats in
            PQexecPrepared(self.handle, name, Int32(parameters.count), values, lengths, formats, 1)
        }
        do {
            try self.check(result)
        } catch {
            PQclear(result)
            if firstOfDeferredRead, error.connectionLost { self.deferred = .lostBeforeFirstAnswer }
            throw error
        }
        guard let result else { throw PostgresError(sqlState: "", message: "out of memory", connectionLost: false) }
        return result
    }

    // MARK: - Reads begun on their second statement

    /// Where a deferred read stands (`deferBegin`).
    private enum DeferredRead {
        /// Nothing sent yet.
        case notBegun
        /// The first statement ran on its own; its SQL, parameters and rows are kept to be checked.
        case firstStatementRan(sql: String, parameters: [PGValue], rows: [UInt8])
        /// The first statement found the connection gone: nothing was answered, the read may start over elsewhere.
        case lostBeforeFirstAnswer
    }

    /// Makes the next statements one read transaction begun by `begin` (`BEGIN ISOLATION LEVEL
    /// REPEATABLE READ READ ONLY`) only if there are two of them: a read of one statement
    /// (authenticating a token; a warm mapping read's device and mapping version) runs on its own,
    /// without BEGIN or COMMIT — one statement is one snapshot already. When a second statement
    /// comes, the transaction begins, the first statement runs again in it and must answer the same
    /// rows byte for byte, so everything the read saw is that one snapshot's; otherwise the read
    /// throws `PostgresError.snapshotMoved` and is run again, begun at once. `endDeferred()` ends it.
    func deferBegin(_ begin: String) {
        self.deferredBegin = begin
        self.deferred = .notBegun
    }
    private var deferredBegin = ""

    /// Ends `deferBegin`'s mode; true when the read's transaction was begun (it needs a COMMIT).
    @discardableResult
    func endDeferred() -> Bool {
        self.deferred = nil
        return PQtransactionStatus(self.handle) != PQTRANS_IDLE
    }

    /// True when the deferred read's first statement found the connection gone before any answer.
    var lostBeforeFirstAnswer: Bool {
        if case .lostBeforeFirstAnswer = self.deferred { return true }
        return false
    }

    /// Begins a deferred read's transaction before a statement that needs it: at once when nothing
    /// ran yet (a stream or a simple statement first), else with the first statement checked again.
    private func beginDeferred() throws(PostgresError) {
        guard let state = self.deferred else { return }
        if case .lostBeforeFirstAnswer = state { throw PostgresError(sqlState: "", message: "connection lost", connectionLost: true) }
        self.deferred = nil
        try self.executeNow(self.deferredBegin)
        guard case .firstStatementRan(let sql, let parameters, let rows) = state else { return }
        let again = try self.executePrepared(sql, parameters)
        defer { PQclear(again) }
        guard Self.rowBytes(again) == rows else { throw PostgresError.snapshotMoved }
    }

    /// Every row of a result as bytes (each value: null flag, length, bytes), to compare two answers.
    private static func rowBytes(_ result: OpaquePointer) -> [UInt8] {
        var out: [UInt8] = []
        let rows = PQntuples(result), columns = PQnfields(result)
        for r in 0..<rows {
            for c in 0..<columns {
                if PQgetisnull(result, r, c) != 0 { out.append(0); continue }
                let n = Int(PQgetlength(result, r, c))
                out.append(1)
                withUnsafeBytes(of: UInt32(n).bigEndian) { out.append(contentsOf: $0) }
                if n > 0, let p = PQgetvalue(result, r, c) {
                    out.append(contentsOf: UnsafeRawBufferPointer(start: p, count: n))
                }
            }
        }
        return out
    }

    /// Reads and drops whatever results are still coming.
    private func drain() {
        while let result = PQgetResult(self.handle) { PQclear(result) }
    }

    /// `body` with the parameters in libpq's binary form: pointers into one buffer, valid during the call.
    private static func withEncoded<T>(_ parameters: [PGValue],
                                       _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> T) -> T {
        let encoded = parameters.map { $0.encode() }
        let lengths: [Int32] = encoded.map { Int32($0?.count ?? 0) }
        let formats: [Int32] = Array(repeating: 1, count: parameters.count)
        var storage: [UInt8] = []
        storage.reserveCapacity(lengths.reduce(0) { $0 + Int($1) } + 1)
        var offsets: [Int?] = []
        for e in encoded {
            if let e {
                offsets.append(storage.count)
                storage.append(contentsOf: e)
            } else {
                offsets.append(nil)
            }
        }
        storage.append(0)   // never empty: a zero-length value still needs a valid, non-NULL pointer
        return storage.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
            let pointers: [UnsafePointer<CChar>?] = offsets.map { $0.map { base + $0 } }
            return pointers.withUnsafeBufferPointer { values in
                lengths.withUnsafeBufferPointer { l in
                    formats.withUnsafeBufferPointer { f in body(values.baseAddress, l.baseAddress, f.baseAddress) }
                }
            }
        }
    }

    /// The first column of the first row as an integer, nil when there is no row or it is NULL.
    func scalarInt(_ sql: String, _ parameters: [PGValue] = []) throws -> Int64? {
        var value: Int64?
        try self.query(sql, parameters) { r in if value == nil, !r.isNull(0) { value = r.int(0) } }
        return value
    }

    private func statementName(_ sql: String, _ parameters: [PGValue]) throws(PostgresError) -> String {
        if let name = self.prepared[sql] { return name }
        let name = "concord_\(self.prepared.count + 1)"
        let types = parameters.map(\.oid)
        let result = types.withUnsafeBufferPointer { t in
            PQprepare(self.handle, name, sql, Int32(types.count), t.baseAddress)
        }
        defer { PQclear(result) }
        try self.check(result)
        self.prepared[sql] = name
        return name
    }

    private func check(_ result: OpaquePointer?) throws(PostgresError) {
        let status = result.map { PQresultStatus($0) } ?? PGRES_FATAL_ERROR
        switch status {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        default:
            var sqlState = ""
            var message = ""
            if let result {
                if let s = PQresultErrorField(result, Int32(UInt8(ascii: "C"))) { sqlState = String(cString: s) }
                if let m = PQresultErrorField(result, Int32(UInt8(ascii: "M"))) { message = String(cString: m) }
            }
            if message.isEmpty { message = Self.oneLine(String(cString: PQerrorMessage(self.handle))) }
            // Class 08 (connection exception), 57P01..03 (admin shutdown, crash shutdown, cannot connect
            // now) or libpq's own view of the socket: this connection will not work again.
            let lost = PQstatus(self.handle) == CONNECTION_BAD || sqlState.hasPrefix("08") || sqlState.hasPrefix("57P")
            if lost { self.isBroken = true }
            throw PostgresError(sqlState: sqlState, message: message, connectionLost: lost)
        }
    }

    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
    }
}

/// Reads binary COPY data (the header, then each tuple: its field count, then each field as a length,
/// -1 for NULL, and its bytes; a count of -1 ends it), one CopyData message at a time.
private struct PGCopyReader {
    private var fields = UnsafeMutableBufferPointer<UnsafeRawBufferPointer?>.allocate(capacity: 32)
    private var headerRead = false
    private(set) var ended = false
    private static let signature: [UInt8] = [0x50, 0x47, 0x43, 0x4F, 0x50, 0x59, 0x0A, 0xFF, 0x0D, 0x0A, 0x00]

    func deallocate() { self.fields.deallocate() }

    mutating func read(_ message: UnsafeRawBufferPointer, _ row: (PGCopyRow) throws -> Void) throws {
        var at = 0
        func need(_ n: Int) throws {
            guard at + n <= message.count else { throw PostgresError(sqlState: "", message: "malformed binary COPY data", connectionLost: false) }
        }
        func int32() throws -> Int32 { try need(4); defer { at += 4 }; return Int32(bigEndian: message.loadUnaligned(fromByteOffset: at, as: Int32.self)) }
        if !self.headerRead {
            try need(19)
            guard message.prefix(11).elementsEqual(Self.signature) else { throw PostgresError(sqlState: "", message: "not binary COPY data", connectionLost: false) }
            at = 15
            let extensionLength = Int(try int32())
            try need(max(0, extensionLength))
            at += max(0, extensionLength)
            self.headerRead = true
        }
        while at < message.count {
            try need(2)
            let count = Int(Int16(bigEndian: message.loadUnaligned(fromByteOffset: at, as: Int16.self)))
            at += 2
            if count == -1 { self.ended = true; return }
            guard count >= 0 else { throw PostgresError(sqlState: "", message: "malformed binary COPY data", connectionLost: false) }
            if count > self.fields.count {
                self.fields.deallocate()
                self.fields = .allocate(capacity: count)
            }
            for i in 0..<count {
                let length = Int(try int32())
                if length < 0 { self.fields[i] = nil; continue }
                try need(length)
                self.fields[i] = UnsafeRawBufferPointer(rebasing: message[at..<at + length])
                at += length
            }
            try row(PGCopyRow(fields: UnsafeBufferPointer(rebasing: self.fields[0..<count])))
        }
    }
}
