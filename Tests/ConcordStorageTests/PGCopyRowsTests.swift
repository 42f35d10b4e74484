@testable import ConcordStorage
import ConcordTestSupport
import Foundation
import Testing

/// `PGConnection.copyRows`: binary COPY decoded in place. Integers come at their column's width
/// (a key column may be `integer` or `bigint` as the schema has it); NULL, text and bytea as their
/// bytes; a callback that throws leaves the connection ready for ROLLBACK.
@Suite(.enabled(if: TestEngine.available.contains(.postgres), "PostgreSQL not configured"))
struct PGCopyRowsTests {
    private func withConnection(_ body: (PGConnection) throws -> Void) throws {
        let db = try TestDatabase(.postgres)
        let c = try PGConnection(parameters: try PostgresConfiguration(url: db.url).connectionParameters)
        defer { c.close(); withExtendedLifetime(db) {} }
        try body(c)
    }

    /// Each integer width, at its edges, read by `int` as the same Int64.
    static let integers: [(sqlType: String, value: Int64)] = [
        ("int2", 0), ("int2", -1), ("int2", Int64(Int16.max)), ("int2", Int64(Int16.min)),
        ("int4", 7), ("int4", -2), ("int4", Int64(Int32.max)), ("int4", Int64(Int32.min)),
        ("int8", 42), ("int8", -3), ("int8", Int64.max), ("int8", Int64.min),
    ]

    @Test func integersOfEveryWidthDecodeToTheirValue() throws {
        try self.withConnection { c in
            for (type, value) in Self.integers {
                var seen: [Int64] = []
                try c.copyRows("SELECT '\(value)'::\(type)") { seen.append($0.int(0)) }
                #expect(seen == [value], "\(type) \(value)")
            }
        }
    }

    @Test func textByteaAndNullComeAsTheirBytes() throws {
        try self.withConnection { c in
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

    struct Enough: Error {}

    @Test func aCallbackThatThrowsLeavesTheConnectionUsable() throws {
        try self.withConnection { c in
            try c.execute("BEGIN")
            var seen = 0
            #expect(throws: Enough.self) {
                try c.copyRows("SELECT x FROM generate_series(1, 100000) AS x") { _ in
                    seen += 1
                    if seen == 5 { throw Enough() }
                }
            }
            #expect(seen == 5)
            try c.execute("ROLLBACK")
            #expect(try c.scalarInt("SELECT 41 + 1") == 42)
        }
    }
}
