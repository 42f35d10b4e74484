import ConcordDomain
import ConcordMappingIndex
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// PostgreSQL migration 18 (integer keys, full heap pages): a database written at schema 17 — a
/// mapped library on two devices, an album, an object without a fingerprint — migrates in place:
/// the keys of `objects` and `links` are `integer`, `objects` fills its pages, and every answer
/// (mapping both ways, from storage and from the index loaded from the tables, pages in byte order,
/// status, wanted) is as before; new objects take the next numbers. A key past `integer`, or a
/// table whose primary key is not as schema 17 left it, stops the migration naming it, and leaves
/// schema 17 as it was.
@Suite(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason)))
struct PostgresFullPagesSchemaTests {
    static let g1 = "0C44A1D2-0000-4000-8000-000000000021"
    static let g2 = "0C44A1D2-0000-4000-8000-000000000022"
    static func stored(_ text: String) -> String { PostgresNarrowSchemaTests.stored(text) }

    /// Keys from 1 in insertion order: account acc 1; devices mac 1, pc 2.
    static let seed = """
        INSERT INTO accounts (account_id, name, created_at, next_record_order, mapping_version) VALUES ('acc', 'A', 1000, 3, 4);
        INSERT INTO devices (account_id, device_id, name, created_at, object_count, next_object_no) VALUES ('acc', 'mac', 'Mac', 2000, 4, 5);
        INSERT INTO devices (account_id, device_id, name, created_at, object_count, next_object_no) VALUES ('acc', 'pc', 'PC', 2001, 3, 4);
        INSERT INTO records (account_key, created_order, record, type, fingerprint) VALUES
            (1, 1, '\(g1)', 1, \(stored(contentFingerprint(1)))), (1, 2, '\(g2)', 1, \(stored(contentFingerprint(2))));
        INSERT INTO objects (account_key, device_key, object_no, creation_second, modification_second, type, has_adjustments, is_favorite,
                             app_created, local_id, fingerprint, media_type, creation_date, modification_date, title, members, pk_identifier, key_a) VALUES
            (1, 1, 2, 1714557600, NULL, 1, false, true, false, 'MAC-1', \(stored(contentFingerprint(1))), NULL, NULL, NULL, NULL, '', NULL, NULL),
            (1, 1, 1, NULL, NULL, 1, false, false, false, 'MAC-2', \(stored(contentFingerprint(2))), 'video', NULL, NULL, NULL, '', NULL, NULL),
            (1, 1, 3, NULL, NULL, 1, false, false, false, 'MAC-3', '', NULL, NULL, NULL, NULL, '', NULL, NULL),
            (1, 1, 4, NULL, NULL, 40, false, false, true, 'MAC-ALBUM', '', NULL, NULL, NULL, 'Trip', 'MAC-1' || chr(10) || 'MAC-2', NULL, NULL),
            (1, 2, 1, 1714557600, NULL, 1, false, false, false, 'PC-1', \(stored(contentFingerprint(1))), NULL, NULL, NULL, NULL, '', NULL, NULL),
            (1, 2, 2, NULL, NULL, 1, false, false, false, 'PC-2', \(stored(contentFingerprint(2))), NULL, NULL, NULL, NULL, '', NULL, NULL),
            (1, 2, 3, 1714550400, NULL, 1, false, false, false, 'PC-NOHASH', '', NULL, NULL, NULL, NULL, '', NULL, NULL);
        INSERT INTO links (account_key, record_order, device_key, object_no) VALUES (1, 2, 1, 1), (1, 1, 2, 1), (1, 1, 1, 2);
        """

    @Test func aSchema17DatabaseMigratesAndAnswersAsBefore() throws {
        try OldSchemaDatabase.postgresSchema(atVersion: 17, seed: Self.seed) { url in
            let store = try PostgresStore(configuration: PostgresConfiguration(url: url, poolSize: 2))
            defer { store.close() }
            let probe = try PGConnection(parameters: PostgresConfiguration(url: url).connectionParameters)
            defer { probe.close() }
            #expect(try probe.scalarInt("SELECT max(version) FROM schema_migrations") == Int64(PostgresMigrations.latestVersion))
            #expect(try probe.scalarInt("""
                SELECT count(*) FROM pg_class WHERE relname = 'objects' AND relnamespace = current_schema()::regnamespace
                AND 'fillfactor=100' = ANY(reloptions)
                """) == 1)
            #expect(try probe.scalarInt("""
                SELECT count(*) FROM pg_attribute WHERE attrelid IN ('objects'::regclass, 'links'::regclass) AND atttypid = 'integer'::regtype
                AND attname IN ('account_key', 'device_key', 'object_no', 'record_order')
                """) == 7)
            try OldSchemaDatabase.expectSeedAnswers(store, g1: Self.g1, g2: Self.g2, macKeys: 0)
            try OldSchemaDatabase.expectSeedWrites(store, probe: probe, g1: Self.g1, g2: Self.g2)
        }
    }

    @Test func aKeyPastIntegerStopsTheMigrationAndChangesNothing() throws {
        try OldSchemaDatabase.postgresMigrationStops(
            atVersion: 17, seed: Self.seed + "UPDATE objects SET object_no = 3000000000 WHERE local_id = 'PC-NOHASH';",
            failure: "migration 18: table objects, row (account_key 1, device_key 2, object_no 3000000000, local_id PC-NOHASH): a key past integer",
            unchanged: { probe throws in
                #expect(try probe.scalarInt("SELECT count(*) FROM pg_attribute WHERE attrelid = 'links'::regclass AND atttypid = 'bigint'::regtype") == 4)
            },
            fix: "UPDATE objects SET object_no = 3 WHERE local_id = 'PC-NOHASH'",
            migrated: { store throws in
                #expect(try store.read(account: "acc") { tx in try tx.linkedObjects(DeviceRef(accountID: "acc", deviceID: "pc"), guids: [Self.g1]) }
                    .map(\.localIdentifier) == ["PC-1"])
            })
    }

    @Test func aMissingPrimaryKeyStopsTheMigrationAndChangesNothing() throws {
        try OldSchemaDatabase.postgresMigrationStops(
            atVersion: 17, seed: Self.seed + "ALTER TABLE links DROP CONSTRAINT links_pkey;",
            failure: "migration 18: table links, primary key links_pkey: not found",
            unchanged: { probe throws in
                #expect(try probe.scalarInt("""
                    SELECT count(*) FROM pg_class WHERE relname = 'objects' AND relnamespace = current_schema()::regnamespace
                    AND 'fillfactor=90' = ANY(reloptions)
                    """) == 1)
                #expect(try probe.scalarInt("SELECT count(*) FROM links") == 3)
            },
            fix: "ALTER TABLE links ADD CONSTRAINT links_pkey PRIMARY KEY (account_key, record_order, device_key)",
            migrated: { store throws in
                #expect(try store.read(account: "acc") { tx in try tx.mappingVersion() } == 4)
            })
    }
}
