import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// PostgreSQL migration 22 (`objects_by_content` a B-tree of the device and the fingerprint's first
/// 3 bytes): a database written at schema 21 — the mapped two-device seed — migrates in place, its
/// answers are as before, and content lookups find a device's objects by the whole fingerprint,
/// not by its prefix nor on another device.
@Suite(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason)))
struct PostgresDeviceContentIndexSchemaTests {
    static let g1 = PostgresFullPagesSchemaTests.g1
    static let g2 = PostgresFullPagesSchemaTests.g2
    static let mac = DeviceRef(accountID: "acc", deviceID: "mac")
    static let pc = DeviceRef(accountID: "acc", deviceID: "pc")

    /// The seed at schema 21, migrated by opening a store on it: `body` gets the store and a connection of its own.
    static func migrated(_ body: (PostgresStore, PGConnection) throws -> Void) throws {
        try OldSchemaDatabase.postgresSchema(atVersion: 21, seed: PostgresFullPagesSchemaTests.seed) { url in
            let store = try PostgresStore(configuration: PostgresConfiguration(url: url, poolSize: 2))
            defer { store.close() }
            let probe = try PGConnection(parameters: PostgresConfiguration(url: url).connectionParameters)
            defer { probe.close() }
            try body(store, probe)
        }
    }

    @Test func aSchema21DatabaseMigratesAndAnswersAsBefore() throws {
        try Self.migrated { store, probe in
            #expect(try probe.scalarInt("SELECT max(version) FROM schema_migrations") == Int64(PostgresMigrations.latestVersion))
            var definition = ""
            try probe.query("SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'objects_by_content'") { r in
                definition = r.text(0)
            }
            // (PostgreSQL's versions spell the expression back differently: `SUBSTRING(fingerprint FROM 1 FOR 3)` in 15.)
            #expect(definition.contains("USING btree (device_key, ") && definition.lowercased().contains("substring"), "\(definition)")
            #expect(definition.contains("WHERE (fingerprint <> '\\x'::bytea)"), "\(definition)")
            try OldSchemaDatabase.expectSeedAnswers(store, g1: Self.g1, g2: Self.g2, macKeys: 0)
            try OldSchemaDatabase.expectSeedWrites(store, probe: probe, g1: Self.g1, g2: Self.g2)
        }
    }

    /// A fingerprint that shares the first 3 bytes of another is a different content; the same
    /// fingerprint on another device is another device's object.
    @Test func contentLookupsCompareTheWholeFingerprintOnTheirDevice() throws {
        try Self.migrated { store, probe in
            // PC-TWIN: content 2's fingerprint with its last byte changed.
            let content2 = PostgresFullPagesSchemaTests.stored(contentFingerprint(2))
            try probe.execute("""
                INSERT INTO objects (account_key, device_key, object_no, type, has_adjustments, is_favorite, app_created, local_id, fingerprint, members)
                    VALUES (1, 2, 4, 1, false, false, false, 'PC-TWIN', overlay(\(content2)::bytea placing '\\xff'::bytea from 32 for 1), '')
                """)
            #expect(try probe.scalarInt("SELECT count(*) FROM objects WHERE substring(fingerprint from 1 for 3) = substring(\(content2)::bytea from 1 for 3)") == 3)
            let found = try store.read(account: "acc") { tx in
                try tx.objects(Self.pc, matching: [ContentKey(type: .asset, fingerprint: contentFingerprint(2))])
            }
            #expect(found.map(\.object.localIdentifier) == ["PC-2"])
            let both = try store.read(account: "acc") { tx in
                try tx.objects(Self.mac, matching: [ContentKey(type: .asset, fingerprint: contentFingerprint(1)),
                                                    ContentKey(type: .asset, fingerprint: contentFingerprint(2))])
            }
            #expect(both.map(\.object.localIdentifier) == ["MAC-1", "MAC-2"])
            // Through the domain, with no mapping index (storage answers): content 2's record finds PC-2 by content.
            var configuration = DomainConfiguration()
            configuration.mappingIndexBytes = 0
            let service = try ConcordService(store: store, configuration: configuration)
            let r2 = "\(Self.g2):001:\(contentFingerprint(2))"
            #expect(try service.mapping.localIdentifiers(forCloudIdentifiers: [r2], device: Self.pc).map(\.result) == [.found("PC-2")])
        }
    }
}
