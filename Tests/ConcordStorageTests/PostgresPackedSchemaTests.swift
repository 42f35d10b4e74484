import ConcordDomain
import ConcordMappingIndex
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// PostgreSQL migration 19 (rows without padding, append-only indexes full): a database written at
/// schema 18 — a mapped library on two devices, an album, an object without a fingerprint —
/// migrates in place: `objects` has its 8-byte columns first, `records`' keys are `integer`, the
/// append-only indexes are full, and every answer (mapping both ways, from storage and from the
/// index loaded from the tables, pages in byte order, status, wanted) is as before; new objects
/// take the next numbers. A record key past `integer` stops the migration naming the row, and
/// leaves schema 18 as it was.
@Suite(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason)))
struct PostgresPackedSchemaTests {
    static let g1 = PostgresFullPagesSchemaTests.g1
    static let g2 = PostgresFullPagesSchemaTests.g2
    /// Schema 18 holds the same tables and columns as schema 17 (narrower types): the same seed.
    static let seed = PostgresFullPagesSchemaTests.seed

    @Test func aSchema18DatabaseMigratesAndAnswersAsBefore() throws {
        try OldSchemaDatabase.postgresSchema(atVersion: 18, seed: Self.seed) { url in
            let store = try PostgresStore(configuration: PostgresConfiguration(url: url, poolSize: 2))
            defer { store.close() }
            let probe = try PGConnection(parameters: PostgresConfiguration(url: url).connectionParameters)
            defer { probe.close() }
            #expect(try probe.scalarInt("SELECT max(version) FROM schema_migrations") == Int64(PostgresMigrations.latestVersion))
            #expect(try probe.scalarInt("""
                SELECT attnum FROM pg_attribute WHERE attrelid = 'objects'::regclass AND attname = 'creation_second'
                """) == 1)
            #expect(try probe.scalarInt("""
                SELECT count(*) FROM pg_attribute WHERE attrelid = 'records'::regclass AND atttypid = 'integer'::regtype
                AND attname IN ('account_key', 'created_order')
                """) == 2)
            #expect(try probe.scalarInt("""
                SELECT count(*) FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND 'fillfactor=100' = ANY(reloptions)
                AND relname IN ('objects', 'objects_pkey', 'records_pkey', 'records_by_guid')
                """) == 4)   // (the hashes of fingerprints at their default fill again since migration 20)
            #expect(try probe.scalarInt("SELECT count(*) FROM pg_indexes WHERE tablename = 'objects' AND schemaname = current_schema()") == 5)
            try OldSchemaDatabase.expectSeedAnswers(store, g1: Self.g1, g2: Self.g2, macKeys: 0)
            try OldSchemaDatabase.expectSeedWrites(store, probe: probe, g1: Self.g1, g2: Self.g2)
        }
    }

    @Test func aRecordKeyPastIntegerStopsTheMigrationAndChangesNothing() throws {
        try OldSchemaDatabase.postgresMigrationStops(
            atVersion: 18, seed: Self.seed + "UPDATE records SET created_order = 3000000000 WHERE created_order = 2;",
            failure: "migration 19: table records, row (account_key 1, created_order 3000000000, record \(Self.g2.lowercased())): a key past integer",
            unchanged: { probe throws in
                #expect(try probe.scalarInt("SELECT count(*) FROM pg_attribute WHERE attrelid = 'records'::regclass AND atttypid = 'bigint'::regtype") == 2)
                #expect(try probe.scalarInt("SELECT attnum FROM pg_attribute WHERE attrelid = 'objects'::regclass AND attname = 'account_key'") == 1)
                #expect(try probe.scalarInt("SELECT count(*) FROM objects") == 7)
            },
            fix: "UPDATE records SET created_order = 2 WHERE created_order = 3000000000",
            migrated: { store throws in
                #expect(try store.read(account: "acc") { tx in try tx.linkedObjects(DeviceRef(accountID: "acc", deviceID: "pc"), guids: [Self.g1]) }
                    .map(\.localIdentifier) == ["PC-1"])
            })
    }
}
