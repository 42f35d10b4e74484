import ConcordDomain
import ConcordMappingIndex
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// PostgreSQL migration 17 (the narrow layout): a database written at schema 16 — a mapped library
/// on two devices, an album, an object without a fingerprint, a record key — migrates in place:
/// objects get numbers per device, links point at record orders and object numbers, and every
/// answer (mapping both ways, from storage and from the index loaded from the tables, pages in
/// byte order, status, wanted) is as before; new objects take the next numbers. A link whose
/// record is gone stops the migration naming the row, and leaves schema 16 as it was.
@Suite(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason)))
struct PostgresNarrowSchemaTests {
    static let g1 = "0C44A1D2-0000-4000-8000-000000000011"
    static let g2 = "0C44A1D2-0000-4000-8000-000000000012"
    static let missing = "0C44A1D2-0000-4000-8000-0000000000FF"
    /// A fingerprint's stored bytes as a bytea literal.
    static func stored(_ text: String) -> String {
        "'\\x" + PostgresCompact.fingerprint(text).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() + "'"
    }

    /// Keys from 1 in insertion order: account acc 1; devices mac 1, pc 2.
    static let seed = """
        INSERT INTO accounts (account_id, name, created_at, next_record_order, mapping_version) VALUES ('acc', 'A', 1000, 3, 4);
        INSERT INTO devices (account_id, device_id, name, created_at, object_count) VALUES ('acc', 'mac', 'Mac', 2000, 4);
        INSERT INTO devices (account_id, device_id, name, created_at, object_count) VALUES ('acc', 'pc', 'PC', 2001, 3);
        INSERT INTO records (account_key, created_order, record, type, fingerprint) VALUES
            (1, 1, '\(g1)', 1, \(stored(contentFingerprint(1)))), (1, 2, '\(g2)', 1, \(stored(contentFingerprint(2))));
        INSERT INTO record_keys (account_key, record, type, key_a) VALUES (1, '\(g1)', 1, 'KEY-1');
        INSERT INTO objects (account_key, device_key, creation_second, modification_second, type, has_adjustments, is_favorite, app_created,
                             local_id, fingerprint, media_type, creation_date, modification_date, title, members, pk_identifier, key_a) VALUES
            (1, 1, 1714557600, NULL, 1, false, true, false, 'MAC-1', \(stored(contentFingerprint(1))), NULL, NULL, NULL, NULL, '', 'KEY-1:001:x', 'KEY-1'),
            (1, 1, NULL, NULL, 1, false, false, false, 'MAC-2', \(stored(contentFingerprint(2))), 'video', NULL, NULL, NULL, '', NULL, NULL),
            (1, 1, NULL, NULL, 1, false, false, false, 'MAC-3', '', NULL, NULL, NULL, NULL, '', NULL, NULL),
            (1, 1, NULL, NULL, 40, false, false, true, 'MAC-ALBUM', '', NULL, NULL, NULL, 'Trip', 'MAC-1' || chr(10) || 'MAC-2', NULL, NULL),
            (1, 2, 1714557600, NULL, 1, false, false, false, 'PC-1', \(stored(contentFingerprint(1))), NULL, NULL, NULL, NULL, '', NULL, NULL),
            (1, 2, NULL, NULL, 1, false, false, false, 'PC-2', \(stored(contentFingerprint(2))), NULL, NULL, NULL, NULL, '', NULL, NULL),
            (1, 2, 1714550400, NULL, 1, false, false, false, 'PC-NOHASH', '', NULL, NULL, NULL, NULL, '', NULL, NULL);
        INSERT INTO links (account_key, device_key, record, local_id) VALUES
            (1, 1, '\(g1)', 'MAC-1'), (1, 1, '\(g2)', 'MAC-2'), (1, 2, '\(g1)', 'PC-1');
        """

    @Test func aSchema16DatabaseMigratesAndAnswersAsBefore() throws {
        try OldSchemaDatabase.postgresSchema(atVersion: 16, seed: Self.seed) { url in
            let store = try PostgresStore(configuration: PostgresConfiguration(url: url, poolSize: 2))
            defer { store.close() }
            let mac = DeviceRef(accountID: "acc", deviceID: "mac")
            try OldSchemaDatabase.expectSeedAnswers(store, g1: Self.g1, g2: Self.g2, macKeys: 1)
            let o1 = try ConcordService(store: store, configuration: DomainConfiguration()).library.object(localIdentifier: "MAC-1", device: mac)
            #expect(o1.photoKitCloudIdentifier == "KEY-1:001:x")
            // Objects are numbered per device in the old key order; the counters go on from there.
            let probe = try PGConnection(parameters: PostgresConfiguration(url: url).connectionParameters)
            defer { probe.close() }
            #expect(try probe.scalarInt("SELECT object_no FROM objects WHERE device_key = 1 AND local_id = 'MAC-ALBUM'") == 4)
            #expect(try probe.scalarInt("SELECT next_object_no FROM devices WHERE device_id = 'mac'") == 5)
            #expect(try probe.scalarInt("SELECT next_object_no FROM devices WHERE device_id = 'pc'") == 4)
            #expect(try probe.scalarInt("SELECT count(*) FROM links WHERE account_key = 1 AND record_order = 1") == 2)
            try OldSchemaDatabase.expectSeedWrites(store, probe: probe, g1: Self.g1, g2: Self.g2)
            // The account's deletion empties the new tables.
            #expect(try store.write(account: "acc") { tx in try tx.deleteAccount() })
            #expect(try probe.scalarInt("SELECT count(*) FROM objects") == 0)
            #expect(try probe.scalarInt("SELECT count(*) FROM links") == 0)
        }
    }

    /// The content lookups can use their indexes under a generic plan (what a prepared statement
    /// gets): the statements spell the indexes' partial condition (and `objects_by_content`'s
    /// fingerprint prefix, migration 22).
    @Test func contentLookupsUseTheContentIndexes() throws {
        try OldSchemaDatabase.postgresSchema(atVersion: 16, seed: Self.seed) { url in
            try PostgresStore(configuration: PostgresConfiguration(url: url, poolSize: 1)).close()   // migrates
            let probe = try PGConnection(parameters: PostgresConfiguration(url: url).connectionParameters)
            defer { probe.close() }
            // A library of some size, so that the tables' statistics do not favour reading the whole device.
            try probe.execute("""
                INSERT INTO objects (account_key, device_key, object_no, type, has_adjustments, is_favorite, app_created, local_id, fingerprint, members)
                    SELECT 1, 2, 100 + g, 1, false, false, false, 'BULK-' || g, sha256(('bulk-' || g)::bytea), '' FROM generate_series(1, 5000) g;
                INSERT INTO records (account_key, created_order, record, type, fingerprint)
                    SELECT 1, 100 + g, gen_random_uuid(), 1, sha256(('bulk-' || g)::bytea) FROM generate_series(1, 5000) g;
                ANALYZE objects; ANALYZE records; ANALYZE links;
                SET enable_seqscan = off; SET plan_cache_mode = force_generic_plan
                """)
            let parameters: [PGValue] = [.int(1), .int(2), .intArray([1, 1]), PostgresCompact.fingerprints([contentFingerprint(1), contentFingerprint(2)])]
            for (sql, index) in [(PostgresTransaction.unlinkedRecordsByContent, "records_by_content"),
                                 (PostgresTransaction.objectsByContent, "objects_by_content")] {
                var plan = ""
                try probe.query("EXPLAIN " + sql, parameters) { r in plan += r.text(0) + "\n" }
                #expect(plan.contains(index), "\(plan)")
            }
        }
    }

    @Test func aLinkWithoutItsRecordStopsTheMigrationAndChangesNothing() throws {
        let dangling = "INSERT INTO links (account_key, device_key, record, local_id) VALUES (1, 2, '\(Self.missing)', 'PC-2');"
        try OldSchemaDatabase.postgresMigrationStops(
            atVersion: 16, seed: Self.seed + dangling,
            failure: "table links, row (account_key 1, device_key 2, record \(Self.missing.lowercased()), local_id PC-2): no such record",
            unchanged: { probe throws in
                #expect(try probe.scalarInt("SELECT count(*) FROM links") == 4)
                #expect(try probe.scalarInt("SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = 'object_no'") == 0)
            },
            fix: "DELETE FROM links WHERE record = '\(Self.missing)'",
            migrated: { store throws in
                #expect(try store.read(account: "acc") { tx in try tx.linkedObjects(DeviceRef(accountID: "acc", deviceID: "pc"), guids: [Self.g1]) }
                    .map(\.localIdentifier) == ["PC-1"])
            }
        )
    }
}
