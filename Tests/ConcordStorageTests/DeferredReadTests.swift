@testable import ConcordStorage
import ConcordTestSupport
import Foundation
import Testing

/// `PGConnection.deferBegin`: a read of one statement sends no BEGIN or COMMIT; a second statement
/// begins the transaction and checks the first again in its snapshot — the same rows, or
/// `snapshotMoved` when another connection changed them in between.
@Suite(.enabled(if: TestEngine.available.contains(.postgres), "PostgreSQL not configured"))
struct DeferredReadTests {
    private static let begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

    /// A reader (counting its statements) and a writer on a fresh database with table `t` (k, v).
    private func withConnections(_ body: (PGConnection, PGConnection, StatementCounter) throws -> Void) throws {
        let db = try TestDatabase(.postgres)
        let parameters = try PostgresConfiguration(url: db.url).connectionParameters
        let counter = StatementCounter()
        let reader = try PGConnection(parameters: parameters, counter: counter), writer = try PGConnection(parameters: parameters)
        defer { reader.close(); writer.close(); withExtendedLifetime(db) {} }
        try writer.execute("CREATE TABLE t (k int8 PRIMARY KEY, v int8 NOT NULL); INSERT INTO t VALUES (1, 10), (2, 20)")
        try body(reader, writer, counter)
    }

    private func value(_ c: PGConnection, _ k: Int64) throws -> Int64? {
        try c.scalarInt("SELECT v FROM t WHERE k = $1", [.int(k)])
    }

    @Test func aReadOfOneStatementIsThatStatementAlone() throws {
        try self.withConnections { reader, _, counter in
            reader.deferBegin(Self.begin)
            let v1 = try self.value(reader, 1)
            #expect(v1 == 10)
            #expect(reader.endDeferred() == false)   // no transaction to commit
            #expect(counter.value == 1)
            #expect(reader.isUsable)
        }
    }

    @Test func aSecondStatementBeginsTheSnapshotWithTheFirstCheckedInIt() throws {
        try self.withConnections { reader, writer, counter in
            reader.deferBegin(Self.begin)
            let v2 = try self.value(reader, 1)
            #expect(v2 == 10)
            try writer.execute("UPDATE t SET v = 21 WHERE k = 2")   // not what the first statement read
            let v3 = try self.value(reader, 2)
            #expect(v3 == 21)
            try writer.execute("UPDATE t SET v = 22 WHERE k = 2")   // after the snapshot: not seen
            let v4 = try self.value(reader, 2)
            #expect(v4 == 21)
            #expect(reader.endDeferred() == true)
            try reader.execute("COMMIT")
            #expect(counter.value == 6)   // first, BEGIN, first again, second, third, COMMIT
        }
    }

    @Test func aFirstStatementAnsweredDifferentlyInTheSnapshotIsSnapshotMoved() throws {
        try self.withConnections { reader, writer, _ in
            reader.deferBegin(Self.begin)
            let v5 = try self.value(reader, 1)
            #expect(v5 == 10)
            try writer.execute("UPDATE t SET v = 11 WHERE k = 1")
            var moved = false
            do { _ = try self.value(reader, 2) } catch let e as PostgresError { moved = e.isSnapshotMoved }
            #expect(moved)
            reader.endDeferred()
            if reader.needsRollback { try reader.execute("ROLLBACK") }
            #expect(reader.isUsable)
        }
    }

    @Test func aStreamFirstBeginsAtOnce() throws {
        try self.withConnections { reader, _, counter in
            reader.deferBegin(Self.begin)
            var rows = 0
            try reader.stream("SELECT k FROM t ORDER BY k") { _ in rows += 1 }
            #expect(rows == 2)
            #expect(reader.endDeferred() == true)
            try reader.execute("COMMIT")
            #expect(counter.value == 3)
        }
    }

    /// The store reruns a read whose first statement moved, begun at once: its body sees one snapshot.
    @Test func theStoreRunsAMovedReadAgain() throws {
        let db = try TestDatabase(.postgres, poolSize: 2)
        let store = try #require(db.store as? PostgresStore)
        let writer = try PGConnection(parameters: try PostgresConfiguration(url: db.url).connectionParameters)
        defer { writer.close() }
        try writer.execute("CREATE TABLE t (k int8 PRIMARY KEY, v int8 NOT NULL); INSERT INTO t VALUES (1, 10)")
        var runs = 0
        let seen: [Int64] = try store.read(account: "a") { tx in
            runs += 1
            let db = (tx as! PostgresTransaction).db
            let first = try db.scalarInt("SELECT v FROM t WHERE k = 1") ?? 0
            if runs == 1 { try writer.execute("UPDATE t SET v = 11 WHERE k = 1") }
            let second = try db.scalarInt("SELECT v FROM t WHERE k = 1") ?? 0
            return [first, second]
        }
        #expect(runs == 2)
        #expect(seen == [11, 11])
    }
}
