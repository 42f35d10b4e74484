import CSQLite
import Foundation

/// An SQLite failure with its extended result code (`sqlite3_extended_result_codes` is on).
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    public var code: Int32
    public var message: String
    public var sql: String?

    /// The primary result code (`SQLITE_BUSY`, ...), without the extended bits.
    public var primaryCode: Int32 { self.code & 0xFF }
    public var description: String {
        "SQLite error \(self.code): \(self.message)" + (self.sql.map { " in «\($0)»" } ?? "")
    }
}

/// The rowid of the last INSERT on `db`.
func sqlite3LastInsertRowID(_ db: Connection) -> Int64 { sqlite3_last_insert_rowid(db.handle) }

/// A value to bind to a statement parameter.
enum SQLValue {
    case int(Int64)
    case double(Double)
    case text(String)
    case blob([UInt8])
    case null
}

/// `SQLITE_TRANSIENT`: SQLite copies the bound bytes before the call returns.
let SQLITE_TRANSIENT_DESTRUCTOR = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One SQLite connection. Not thread-safe: the store hands it to one thread at a time.
final class Connection {
    let handle: OpaquePointer
    let path: String
    private var cache: [String: Statement] = [:]
    /// `runRows`' statement texts by shape, built once per connection.
    private var valuesSQLCache: [String: String] = [:]
    /// True once `close()` ran; the handle must not be used after that.
    private(set) var isClosed = false

    /// Opens `path` (creating it). The handle is closed even when opening fails, as SQLite requires.
    init(path: String, busyTimeoutMilliseconds: Int32 = 5000, memory: SQLiteMemory = SQLiteMemory()) throws {
        var db: OpaquePointer?
        // NOMUTEX: each connection is used by one thread at a time (the store's locks ensure it),
        // so SQLite's own per-connection mutex is redundant.
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open database"
            sqlite3_close_v2(db)
            throw SQLiteError(code: rc, message: "\(message) (\(path))", sql: nil)
        }
        self.handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        let registered = CompactText.register(on: db)
        guard registered == SQLITE_OK else {
            // Fully initialised: deinit closes the handle.
            throw SQLiteError(code: registered, message: "cannot register concord_compact (\(path))", sql: nil)
        }
        // The default page cache (2 MiB) is far smaller than a 100 000-object library: batches then
        // pay a read syscall per page. A larger cache (and, when configured, memory-mapped reads)
        // keeps lookups in memory; both are per connection (see SQLiteMemory).
        try? self.execute("PRAGMA cache_size=-\(memory.cacheKiB); PRAGMA mmap_size=\(memory.mmapBytes); PRAGMA temp_store=MEMORY")
    }

    deinit { self.close() }

    /// Finalizes the cached statements and closes the handle; later calls do nothing.
    func close() {
        guard !self.isClosed else { return }
        self.isClosed = true
        self.cache.removeAll()   // finalizes the statements before the close
        sqlite3_close_v2(self.handle)
    }

    func error(_ rc: Int32, sql: String?) -> SQLiteError {
        SQLiteError(code: sqlite3_extended_errcode(self.handle) != 0 ? sqlite3_extended_errcode(self.handle) : rc,
                    message: String(cString: sqlite3_errmsg(self.handle)), sql: sql)
    }

    /// Runs one or more statements without results (PRAGMAs, DDL, BEGIN/COMMIT).
    func execute(_ sql: String) throws {
        var errmsg: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(self.handle, sql, nil, nil, &errmsg)
        if rc != SQLITE_OK {
            let message = errmsg.map { String(cString: $0) } ?? "error"
            sqlite3_free(errmsg)
            throw SQLiteError(code: sqlite3_extended_errcode(self.handle), message: message, sql: sql)
        }
    }

    /// A prepared statement from the cache, reset and with its bindings cleared.
    func statement(_ sql: String) throws -> Statement {
        if let s = self.cache[sql] {
            s.reset()
            return s
        }
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(self.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw self.error(rc, sql: sql) }
        let s = Statement(stmt, connection: self, sql: sql)
        self.cache[sql] = s
        return s
    }

    /// Runs `sql` with `values`, calling `row` for each result row.
    func query(_ sql: String, _ values: [SQLValue] = [], row: (Statement) throws -> Void) throws {
        let s = try self.statement(sql)
        defer { s.reset() }
        try s.bind(values)
        while try s.step() { try row(s) }
    }

    /// Runs `sql` with `values`; returns the number of rows changed.
    @discardableResult
    func run(_ sql: String, _ values: [SQLValue] = []) throws -> Int {
        let s = try self.statement(sql)
        defer { s.reset() }
        try s.bind(values)
        while try s.step() {}
        return Int(sqlite3_changes(self.handle))
    }

    /// Runs one statement per chunk of `rows`: `head` followed by the chunk's rows as a `VALUES` list
    /// (`(?k+1, …, ?k+width), …`) and `tail`, where `fixed` binds `?1…?k` (the same in every chunk;
    /// `head` and `tail` may use them). Chunks are powers of two up to `maxRows`, so a handful of
    /// statement shapes are prepared and cached per connection however large the batch; a batch is
    /// then a few statements instead of one per row. `rows` is flat: `width` values per row.
    /// Returns the number of rows the statements changed.
    @discardableResult
    func runRows(_ head: String, width: Int, tail: String = "", fixed: [SQLValue] = [], _ rows: [SQLValue], maxRows: Int = 512) throws -> Int {
        precondition(width > 0 && rows.count % width == 0)
        let total = rows.count / width
        var done = 0, changed = 0
        while done < total {
            var n = maxRows
            while n > total - done { n /= 2 }
            let key = "\(n) \(width) \(fixed.count)\u{0}\(head)\u{0}\(tail)"
            let sql: String
            if let known = self.valuesSQLCache[key] {
                sql = known
            } else {
                sql = Self.valuesSQL(head, width: width, rows: n, first: fixed.count + 1, tail: tail)
                self.valuesSQLCache[key] = sql
            }
            changed += try self.run(sql, fixed + rows[(done * width)..<((done + n) * width)])
            done += n
        }
        return changed
    }

    /// `head VALUES (?first, …), … tail` for `rows` rows of `width` numbered parameters.
    private static func valuesSQL(_ head: String, width: Int, rows: Int, first: Int, tail: String) -> String {
        var sql = head + " VALUES "
        var p = first
        for r in 0..<rows {
            sql += r == 0 ? "(" : ", ("
            for c in 0..<width {
                if c > 0 { sql += ", " }
                sql += "?\(p)"
                p += 1
            }
            sql += ")"
        }
        return tail.isEmpty ? sql : sql + " " + tail
    }

    /// A single integer (first column of the first row), nil when no row or NULL.
    func scalarInt(_ sql: String, _ values: [SQLValue] = []) throws -> Int64? {
        var result: Int64?
        try self.query(sql, values) { s in if !s.isNull(0) { result = s.int(0) } }
        return result
    }

    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws.
    /// `immediate` takes the write lock at BEGIN so a read-then-write cannot fail half-way with BUSY.
    func transaction<T>(immediate: Bool, _ body: () throws -> T) throws -> T {
        try self.execute(immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED")
        do {
            let value = try body()
            try self.execute("COMMIT")
            return value
        } catch {
            // ROLLBACK fails only when SQLite already rolled back (e.g. after SQLITE_FULL); nothing left to undo.
            try? self.execute("ROLLBACK")
            throw error
        }
    }
}

/// A prepared statement, finalized in `deinit`.
final class Statement {
    let stmt: OpaquePointer
    unowned let connection: Connection
    let sql: String

    init(_ stmt: OpaquePointer, connection: Connection, sql: String) {
        self.stmt = stmt
        self.connection = connection
        self.sql = sql
    }

    deinit { sqlite3_finalize(self.stmt) }

    func reset() {
        sqlite3_reset(self.stmt)
        sqlite3_clear_bindings(self.stmt)
    }

    func bind(_ values: [SQLValue]) throws {
        for (i, v) in values.enumerated() {
            let index = Int32(i + 1)
            let rc: Int32
            switch v {
            case .int(let x): rc = sqlite3_bind_int64(self.stmt, index, x)
            case .double(let x): rc = sqlite3_bind_double(self.stmt, index, x)
            // With its byte length: a NUL inside is data, not the end of the text.
            case .text(let x):
                var s = x
                rc = s.withUTF8 { b in
                    b.withMemoryRebound(to: CChar.self) { c in
                        // An empty string may have no storage: bind "" (a valid, NUL-terminated pointer).
                        guard let base = c.baseAddress else { return sqlite3_bind_text(self.stmt, index, "", 0, SQLITE_TRANSIENT_DESTRUCTOR) }
                        return sqlite3_bind_text(self.stmt, index, base, Int32(c.count), SQLITE_TRANSIENT_DESTRUCTOR)
                    }
                }
            case .blob(let x):
                rc = x.withUnsafeBytes { buf in
                    sqlite3_bind_blob(self.stmt, index, buf.baseAddress, Int32(buf.count), SQLITE_TRANSIENT_DESTRUCTOR)
                }
            case .null: rc = sqlite3_bind_null(self.stmt, index)
            }
            guard rc == SQLITE_OK else { throw self.connection.error(rc, sql: self.sql) }
        }
    }

    /// Advances; true when a row is available.
    func step() throws -> Bool {
        let rc = sqlite3_step(self.stmt)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw self.connection.error(rc, sql: self.sql)
        }
    }

    func isNull(_ i: Int32) -> Bool { sqlite3_column_type(self.stmt, i) == SQLITE_NULL }
    func int(_ i: Int32) -> Int64 { sqlite3_column_int64(self.stmt, i) }
    func double(_ i: Int32) -> Double { sqlite3_column_double(self.stmt, i) }
    /// A text column; a BLOB in it is a GUID's or fingerprint's stored form (`CompactText`), read as its text.
    func text(_ i: Int32) -> String {
        if sqlite3_column_type(self.stmt, i) == SQLITE_BLOB {
            let n = Int(sqlite3_column_bytes(self.stmt, i))
            return CompactText.expand(UnsafeRawBufferPointer(start: sqlite3_column_blob(self.stmt, i), count: n))
        }
        guard let p = sqlite3_column_text(self.stmt, i) else { return "" }
        let n = Int(sqlite3_column_bytes(self.stmt, i))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }
    func optionalText(_ i: Int32) -> String? { self.isNull(i) ? nil : self.text(i) }
    func isBlob(_ i: Int32) -> Bool { sqlite3_column_type(self.stmt, i) == SQLITE_BLOB }
    func isText(_ i: Int32) -> Bool { sqlite3_column_type(self.stmt, i) == SQLITE_TEXT }
    /// `body` on a BLOB column's bytes, without copying them.
    func withBlob<T>(_ i: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let n = Int(sqlite3_column_bytes(self.stmt, i))
        return try body(UnsafeRawBufferPointer(start: sqlite3_column_blob(self.stmt, i), count: n))
    }
    /// `body` on a text column's UTF-8 bytes as stored (a BLOB's bytes as they are), without copying them.
    func withUTF8<T>(_ i: Int32, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T {
        let p = sqlite3_column_text(self.stmt, i)
        let n = Int(sqlite3_column_bytes(self.stmt, i))
        return try body(UnsafeBufferPointer(start: p, count: p == nil ? 0 : n))
    }
    func blob(_ i: Int32) -> [UInt8] {
        let n = Int(sqlite3_column_bytes(self.stmt, i))
        guard n > 0, let p = sqlite3_column_blob(self.stmt, i) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: n))
    }
}

/// A JSON array of strings, bound as one parameter and expanded with `json_each(?)`: one statement
/// for a whole batch of identifiers instead of one per identifier.
func jsonArray(_ strings: some Sequence<String>) -> String {
    var out = [UInt8]()
    out.reserveCapacity(64)
    out.append(UInt8(ascii: "["))
    var first = true
    for s in strings {
        if !first { out.append(UInt8(ascii: ",")) }
        first = false
        appendJSONString(s, to: &out)
    }
    out.append(UInt8(ascii: "]"))
    return String(decoding: out, as: UTF8.self)
}

/// Appends `s` as a JSON string (quoted, escaped) to `out`.
func appendJSONString(_ s: String, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    let utf8 = s.utf8
    // Fast path: identifiers rarely hold a quote or backslash (and never a control character).
    if !utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20 }) {
        out.append(contentsOf: utf8)
    } else {
        for b in utf8 {
            switch b {
            case UInt8(ascii: "\""): out.append(UInt8(ascii: "\\")); out.append(b)
            case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\")); out.append(b)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += Array("\\u00".utf8)
                out.append(hex[Int(b >> 4)]); out.append(hex[Int(b & 15)])
            default: out.append(b)
            }
        }
    }
    out.append(UInt8(ascii: "\""))
}
