@testable import ConcordStorage
import ConcordTestSupport
import Foundation
import Testing

/// A connection to a fresh database, closed after `body`: for the suites of `PGConnection`'s bulk
/// readers below.
private func withConnection(_ body: (PGConnection) throws -> Void) throws {
    let db = try TestDatabase(.postgres)
    let c = try PGConnection(parameters: try PostgresConfiguration(url: db.url).connectionParameters)
    defer { c.close(); withExtendedLifetime(db) {} }
    try body(c)
}

private struct Enough: Error {}

/// A read of 100 000 rows (`read` runs `sql` and calls `each` per row) whose callback throws at the
/// fifth row: the error comes out, and after ROLLBACK the connection answers again.
private func expectAThrowingCallbackLeavesTheConnectionUsable(
    _ read: (PGConnection, _ sql: String, _ each: () throws -> Void) throws -> Void
) throws {
    try withConnection { c in
        try c.execute("BEGIN")
        var seen = 0
        #expect(throws: Enough.self) {
            try read(c, "SELECT x FROM generate_series(1, 100000) AS x") {
                seen += 1
                if seen == 5 { throw Enough() }
            }
        }
        #expect(seen == 5)
        try c.execute("ROLLBACK")
        #expect(c.isUsable)
        #expect(try c.scalarInt("SELECT 41 + 1") == 42)
    }
}

/// `PGConnection.stream`: rows one at a time (libpq's single-row mode), the same rows as `query`,
/// and a connection still usable after the caller's callback or the server failed midway.
@Suite(.enabled(if: TestEngine.available.contains(.postgres), "PostgreSQL not configured"))
struct PGStreamTests {

    @Test func streamedRowsAreTheQuerysRows() throws {
        try withConnection { c in
            var streamed: [Int64] = [], queried: [Int64] = []
            try c.stream("SELECT x FROM generate_series(1, $1::int8) AS x", [.int(50_000)]) { streamed.append($0.int(0)) }
            try c.query("SELECT x FROM generate_series(1, $1::int8) AS x", [.int(50_000)]) { queried.append($0.int(0)) }
            #expect(streamed.count == 50_000 && streamed == queried)
            try c.stream("SELECT x FROM generate_series(1, 0) AS x") { _ in Issue.record("no rows expected") }
        }
    }

    @Test func aCallbackThatThrowsLeavesTheConnectionUsable() throws {
        try expectAThrowingCallbackLeavesTheConnectionUsable { c, sql, each in try c.stream(sql) { _ in try each() } }
    }

    @Test func aServerErrorMidwayIsThrownAndTheConnectionRecovers() throws {
        try withConnection { c in
            try c.execute("BEGIN")
            var seen = 0
            #expect(throws: PostgresError.self) {
                try c.stream("SELECT 1 / (x - 30000) FROM generate_series(1, 100000) AS x") { _ in seen += 1 }
            }
            #expect(seen < 100_000)
            #expect(c.needsRollback)
            try c.execute("ROLLBACK")
            #expect(try c.scalarInt("SELECT 7") == 7)
        }
    }
}

/// `PGConnection.copyRows`: binary COPY decoded in place. Integers come at their column's width
/// (a key column may be `integer` or `bigint` as the schema has it); NULL, text and bytea as their
/// bytes; a callback that throws leaves the connection ready for ROLLBACK.
@Suite(.enabled(if: TestEngine.available.contains(.postgres), "PostgreSQL not configured"))
struct PGCopyRowsTests {

    /// Each integer width, at its edges, read by `int` as the same Int64.
    static let integers: [(sqlType: String, value: Int64)] = [
        ("int2", 0), ("int2", -1), ("int2", Int64(Int16.max)), ("int2", Int64(Int16.min)),
        ("int4", 7), ("int4", -2), ("int4", Int64(Int32.max)), ("int4", Int64(Int32.min)),
        ("int8", 42), ("int8", -3), ("int8", Int64.max), ("int8", Int64.min),
    ]

    @Test func integersOfEveryWidthDecodeToTheirValue() throws {
        try withConnection { c in
            for (type, value) in Self.integers {
                var seen: [Int64] = []
                try c.copyRows("SELECT '\(value)'::\(type)") { seen.append($0.int(0)) }
                #expect(seen == [value], "\(type) \(value)")
            }
        }
    }

    @Test func textByteaAndNullComeAsTheirBytes() throws {
        try withConnection { c in
            var rows: [(String, [UInt8], Bool, Int64)] = []
            try c.copyRows("SELECT 'é x'::text, '\\x00ff10'::bytea, NULL::int4, x::int4 FROM generate_series(1, 3) AS x") { r in
                rows.append((String(decoding: r.utf8(0), as: UTF8.self), Array(r.bytes(1)), r.isNull(2), r.int(3)))
            }
            #expect(rows.map(\.0) == ["é x", "é x", "é x"])
            #expect(rows.map(\.1) == [[0, 255, 16], [0, 255, 16], [0, 255, 16]])
            #expect(rows.map(\.2) == [true, true, true])
            #expect(rows.map(\.3) == [1, 2, 3])
        }
    }

    @Test func aCallbackThatThrowsLeavesTheConnectionUsable() throws {
        try expectAThrowingCallbackLeavesTheConnectionUsable { c, sql, each in try c.copyRows(sql) { _ in try each() } }
    }
}
