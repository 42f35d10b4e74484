@testable import ConcordStorage
import ConcordTestSupport
import Foundation
import Testing

/// `PGConnection.stream`: rows one at a time (libpq's single-row mode), the same rows as `query`,
/// and a connection still usable after the caller's callback or the server failed midway.
@Suite(.enabled(if: TestEngine.available.contains(.postgres), "PostgreSQL not configured"))
struct PGStreamTests {
    /// A connection to a fresh database, closed after `body`.
    private func withConnection(_ body: (PGConnection) throws -> Void) throws {
        let db = try TestDatabase(.postgres)
        let c = try PGConnection(parameters: try PostgresConfiguration(url: db.url).connectionParameters)
        defer { c.close(); withExtendedLifetime(db) {} }
        try body(c)
    }

    @Test func streamedRowsAreTheQuerysRows() throws {
        try self.withConnection { c in
            var streamed: [Int64] = [], queried: [Int64] = []
            try c.stream("SELECT x FROM generate_series(1, $1::int8) AS x", [.int(50_000)]) { streamed.append($0.int(0)) }
            try c.query("SELECT x FROM generate_series(1, $1::int8) AS x", [.int(50_000)]) { queried.append($0.int(0)) }
            #expect(streamed.count == 50_000 && streamed == queried)
            try c.stream("SELECT x FROM generate_series(1, 0) AS x") { _ in Issue.record("no rows expected") }
        }
    }

    struct Enough: Error {}

    @Test func aCallbackThatThrowsLeavesTheConnectionUsable() throws {
        try self.withConnection { c in
            try c.execute("BEGIN")
            var seen = 0
            #expect(throws: Enough.self) {
                try c.stream("SELECT x FROM generate_series(1, 100000) AS x") { _ in
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

    @Test func aServerErrorMidwayIsThrownAndTheConnectionRecovers() throws {
        try self.withConnection { c in
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
