import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// The mapping writes run their statements on generic plans (`PostgresTransaction.planGenerically`):
/// a transaction that reaches one switches for its remaining statements, one that does not keeps
/// the default, and each statement's generic plan probes indexes rather than reading a table
/// (planned for values it has not seen, with no `enable_seqscan` nudge).
@Suite(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason)))
struct PostgresGenericPlanTests {
    static let device = BatchedWriteTests.device

    /// `acc` with device `mac` holding `count` objects, each linked to a record of its content.
    static func mappedLibrary(count: Int) throws -> TestDatabase {
        let db = try BatchedWriteTests.open(.postgres)
        let objects = (0..<count).map { StoredObject(object: .asset(BatchedWriteTests.id($0), fingerprint: contentFingerprint($0)), link: nil) }
        let records = (0..<count).map { CloudRecord(guid: String(format: "0C44A1D2-0000-4000-8000-%012X", $0), type: .asset, fingerprint: contentFingerprint($0)) }
        try db.store.write(account: "acc") { tx in
            try tx.putObjects(Self.device, objects)
            try tx.insertRecords(records, createdAt: Date())
            try tx.setLinks(Self.device, zip(objects, records).map { ($0.object.localIdentifier, $1.guid) })
        }
        return db
    }

    static func planCacheMode(_ tx: any AccountWriteTransaction) throws -> String? {
        var mode: String?
        try (tx as! PostgresTransaction).db.query("SELECT current_setting('plan_cache_mode')") { r in mode = r.text(0) }
        return mode
    }

    @Test func aMappingWriteSwitchesToGenericPlansUntilItsCommit() throws {
        let db = try Self.mappedLibrary(count: 10)
        let keys = (0..<5).map { ContentKey(type: .asset, fingerprint: contentFingerprint($0)) }
        let modes = try db.store.write(account: "acc") { tx throws -> (before: String?, found: Int, after: String?) in
            let before = try Self.planCacheMode(tx)
            let found = try tx.unlinkedRecords(Self.device, matching: keys).count
            return (before, found, try Self.planCacheMode(tx))
        }
        #expect(modes.before == "auto")
        #expect(modes.found == 0)   // all linked already
        #expect(modes.after == "force_generic_plan")
        // The next transaction, on the same connection (the pool holds one idle), is back to the default.
        let next = try db.store.write(account: "acc") { tx throws -> String? in
            _ = try tx.objects(Self.device, localIdentifiers: [BatchedWriteTests.id(1)])
            return try Self.planCacheMode(tx)
        }
        #expect(next == "auto")
    }

    /// Each statement prepared with its parameters' types, then `EXPLAIN EXECUTE`d under
    /// `force_generic_plan`, on tables of 6000 rows.
    @Test func theMappingStatementsGenericPlansProbeIndexes() throws {
        let db = try Self.mappedLibrary(count: 6000)
        let c = try PGConnection(parameters: try PostgresConfiguration(url: db.url).connectionParameters)
        defer { c.close() }
        try c.execute("ANALYZE objects; ANALYZE records; ANALYZE links; SET plan_cache_mode = force_generic_plan")
        // A generic plan does not look at the values: a few of each type do.
        let ids = "ARRAY['ID-1', 'ID-2', 'ID-3']"
        let numbers = "ARRAY[1, 2, 3]::int8[]"
        let guids = "ARRAY[gen_random_uuid(), gen_random_uuid(), gen_random_uuid()]"
        let types = "ARRAY[1, 1, 1]::int8[]"
        let fingerprints = "ARRAY[sha256('1'), sha256('2'), sha256('3')]"
        let statements: [(name: String, sql: String, types: String, arguments: String)] = [
            ("mappingObjectsByLocalID", PostgresTransaction.mappingObjectsByLocalID, "int8, int8, text[]", ids),
            ("unlinkedRecordsByContent", PostgresTransaction.unlinkedRecordsByContent, "int8, int8, int8[], bytea[]", "\(types), \(fingerprints)"),
            ("objectsByContent", PostgresTransaction.objectsByContent, "int8, int8, int8[], bytea[]", "\(types), \(fingerprints)"),
            ("linksByGUIDAndNumber", PostgresTransaction.linksByGUIDAndNumber, "int8, int8, uuid[], int8[]", "\(guids), \(numbers)"),
            ("linksByOrderAndLocalID", PostgresTransaction.linksByOrderAndLocalID, "int8, int8, int8[], text[]", "\(numbers), \(ids)"),
            ("linksByGUIDAndLocalID", PostgresTransaction.linksByGUIDAndLocalID, "int8, int8, uuid[], text[]", "\(guids), \(ids)"),
        ]
        for (n, s) in statements.enumerated() {
            try c.execute("PREPARE p\(n)(\(s.types)) AS \(s.sql)")
            var plan = ""
            // BEGIN … ROLLBACK: EXPLAIN of an INSERT plans it only, but the statement is a write.
            try c.execute("BEGIN")
            try c.query("EXPLAIN EXECUTE p\(n)(1, 2, \(s.arguments))") { r in plan += r.text(0) + "\n" }
            try c.execute("ROLLBACK")
            #expect(plan.contains("Index"), "\(s.name):\n\(plan)")
            for table in ["objects", "records", "links"] {
                #expect(!plan.contains("Seq Scan on \(table)"), "\(s.name):\n\(plan)")
            }
        }
    }
}
