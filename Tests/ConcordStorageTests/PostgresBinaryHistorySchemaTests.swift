import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// PostgreSQL migration 20 (history details in binary, the fingerprints' hash indexes at their
/// default fill): a database written at schema 19 — the mapped two-device seed and a device history
/// in text — migrates in place: its answers are as before, the text entries still read, new entries
/// are binary (`details` NULL) and read back, and the history's byte bound counts both forms by the
/// text's size. Also the mapping log's byte bound (`keptMappingLogBytes`).
@Suite(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason)))
struct PostgresBinaryHistorySchemaTests {
    static let g1 = PostgresFullPagesSchemaTests.g1
    static let g2 = PostgresFullPagesSchemaTests.g2
    /// Schema 19 holds the same tables and columns as schema 18 (reordered, narrower), and two
    /// history entries of mac in text: one with details (15 bytes), one without (the test appends the third).
    static let seed = PostgresFullPagesSchemaTests.seed + """
        UPDATE devices SET last_change_seq = 3 WHERE device_id = 'mac';
        INSERT INTO changes (account_key, device_key, seq, created_at, details) VALUES
            (1, 1, 1, 3000, 'aiMAC-1' || chr(10) || 'auMAC-2'), (1, 1, 2, 3001, NULL);
        """
    static let mac = DeviceRef(accountID: "acc", deviceID: "mac")

    @Test func aSchema19DatabaseMigratesAndAnswersAsBefore() throws {
        try OldSchemaDatabase.postgresSchema(atVersion: 19, seed: Self.seed) { url in
            let store = try PostgresStore(configuration: PostgresConfiguration(url: url, poolSize: 2))
            defer { store.close() }
            let probe = try PGConnection(parameters: PostgresConfiguration(url: url).connectionParameters)
            defer { probe.close() }
            #expect(try probe.scalarInt("SELECT max(version) FROM schema_migrations") == Int64(PostgresMigrations.latestVersion))
            #expect(try probe.scalarInt("""
                SELECT count(*) FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND reloptions IS NULL
                AND relname IN ('objects_by_content', 'records_by_content')
                """) == 2)
            // The text entries read as before.
            let old = try store.read(account: "acc") { tx in try tx.changes(Self.mac, after: 0, limit: 10) }
            #expect(old.map(\.seq) == [1, 2])
            #expect(old.first?.details == ChangeDetails(assets: ChangeLists(inserted: ["MAC-1"], updated: ["MAC-2"])))
            #expect(old.last.map { $0.details == nil } == true)

            // A new entry is binary, reads back, and counts its text form's bytes.
            let details = ChangeDetails(assets: ChangeLists(inserted: ["0C44A1D2-0000-4000-8000-000000000031/L0/001", "MAC-4"],
                                                            deleted: ["MAC-3"]),
                                        assetCollections: ChangeLists(updated: ["MAC-ALBUM"]))
            try store.write(account: "acc") { tx in try tx.appendChange(Self.mac, seq: 3, createdAt: 3002, details: details) }
            let bytes = Int64(ChangeDetailsCodec.encodedByteCount(details))
            #expect(try probe.scalarInt("SELECT count(*) FROM changes WHERE seq = 3 AND details IS NULL AND details_binary IS NOT NULL") == 1)
            #expect(try probe.scalarInt("SELECT details_bytes FROM changes WHERE seq = 3") == bytes)
            #expect(try store.read(account: "acc") { tx in try tx.changes(Self.mac, after: 2, limit: 10) }.map(\.details) == [details])
            #expect(try store.write(account: "acc") { tx in try tx.changeSeqOverBytes(Self.mac, keeping: Int(bytes)) } == 1)
            #expect(try store.write(account: "acc") { tx in try tx.changeSeqOverBytes(Self.mac, keeping: Int(bytes) + 15) } == nil)

            try OldSchemaDatabase.expectSeedAnswers(store, g1: Self.g1, g2: Self.g2, macKeys: 0)
            try OldSchemaDatabase.expectSeedWrites(store, probe: probe, g1: Self.g1, g2: Self.g2)
        }
    }

    /// The log keeps the newest versions whose changes take at most `keptMappingLogBytes` together.
    @Test func theMappingLogKeepsItsNewestBytes() throws {
        try OldSchemaDatabase.postgresSchema(atVersion: 20, seed: Self.seed) { url in
            let store = try PostgresStore(configuration: PostgresConfiguration(url: url, poolSize: 1))
            defer { store.close() }
            let third = Int(PostgresTransaction.keptMappingLogBytes) * 3 / 8
            for version in Int64(5)...7 {
                try store.write(account: "acc") { tx in
                    try (tx as! PostgresTransaction).appendMappingLog(version: version, changes: [UInt8](repeating: UInt8(version), count: third))
                }
            }
            let kept = try store.read(account: "acc") { tx in try (tx as! PostgresTransaction).mappingLog(after: 5, through: 7) }
            #expect(kept.map(\.version) == [6, 7])
            #expect(kept.map { $0.changes.count } == [third, third])
            #expect(try store.read(account: "acc") { tx in try (tx as! PostgresTransaction).mappingLog(after: 4, through: 7) }.isEmpty)
        }
    }
}
