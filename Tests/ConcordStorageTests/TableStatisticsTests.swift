import ConcordDomain
@testable import ConcordStorage
import ConcordTestSupport
import Foundation
import Testing

/// PostgreSQL's row counts are refreshed right after large writes (`TableStatistics`):
/// the bookkeeping as a table, and the `ANALYZE` itself on a real server.
@Suite struct TableStatisticsTests {
    /// Writes (objects, records) in order; the tables due after each.
    @Test(arguments: [
        ([(999, 0)], [[String]()]),
        ([(1_000, 0)], [["objects"]]),
        ([(600, 0), (400, 3)], [[], ["objects"]]),
        ([(0, 1_200), (1_200, 1_200)], [["records"], ["objects"]]),   // records still being analysed
        ([(0, 0)], [[]]),
    ] as [([(Int, Int)], [[String]])])
    func aTableIsDueOnceATenthOrAThousandRowsWereWritten(_ writes: [(Int, Int)], _ due: [[String]]) {
        let statistics = TableStatistics()
        #expect(writes.map { statistics.wrote(objects: $0.0, records: $0.1) } == due)
    }

    /// Rows written while an `ANALYZE` runs count towards the next; a failed one keeps the old count.
    @Test func aBigTableIsDueAfterATenthOfItsRows() {
        let statistics = TableStatistics()
        #expect(statistics.wrote(objects: 1_000, records: 0) == ["objects"])
        #expect(statistics.wrote(objects: 50_000, records: 0) == [])
        statistics.analysed("objects", rows: 1_000_000)
        #expect(statistics.wrote(objects: 40_000, records: 0) == [])
        #expect(statistics.wrote(objects: 10_000, records: 0) == ["objects"])
        statistics.analysed("objects", rows: nil)
        #expect(statistics.wrote(objects: 99_999, records: 0) == [])
        #expect(statistics.wrote(objects: 1, records: 0) == ["objects"])
        statistics.analysed("objects", rows: 2_000_000)
        #expect(statistics.analysing == 0)
    }

    /// A store that wrote 12 000 objects, and their `ANALYZE` seen done.
    static func analysedLibrary() throws -> TestDatabase {
        let db = try BatchedWriteTests.open(.postgres)
        let objects = (0..<12_000).map { StoredObject(object: .asset(BatchedWriteTests.id($0), fingerprint: contentFingerprint($0)), link: nil) }
        try db.store.write(account: "acc") { tx in try tx.putObjects(BatchedWriteTests.device, objects) }
        let c = try PGConnection(parameters: try PostgresConfiguration(url: db.url).connectionParameters)
        defer { c.close() }
        // Waits for the row estimate itself: `last_analyze` is already set on a fresh database (a
        // migration analyses the tables it rewrites), so it cannot tell that this write was analysed.
        var estimate: Int64 = 0
        for _ in 0..<100 where estimate != 12_000 {
            estimate = try c.scalarInt("SELECT reltuples::bigint FROM pg_class WHERE oid = 'objects'::regclass") ?? 0
            if estimate != 12_000 { usleep(100_000) }
        }
        #expect(estimate == 12_000)
        return db
    }

    @Test(.enabled(if: TestEngine.available.contains(.postgres), "PostgreSQL not configured"))
    func aLargeWriteIsAnalysedRightAway() throws {
        _ = try Self.analysedLibrary()
    }

    /// Another process opening the database (a second instance, a restart) measures its writes
    /// against the estimate it finds, not against an empty table.
    @Test(.enabled(if: TestEngine.available.contains(.postgres), "PostgreSQL not configured"))
    func aNewStoreStartsFromTheTablesEstimatedSizes() throws {
        let db = try Self.analysedLibrary()
        let second = try PostgresStore(configuration: PostgresConfiguration(url: db.url, poolSize: 1))
        defer { second.close() }
        #expect(second.statistics.wrote(objects: 1_000, records: 0) == [])
        #expect(second.statistics.wrote(objects: 200, records: 0) == ["objects"])   // a tenth of 12 000
    }
}
