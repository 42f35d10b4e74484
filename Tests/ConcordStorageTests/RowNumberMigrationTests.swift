import ConcordDomain
import ConcordMappingIndex
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// Migration 19 (SQLite: `objects` keyed by its row number, the local identifier in a unique
/// index): a mapped database written at schema 18 converts in place and answers as before —
/// mappings both ways, listings in byte order, content lookups, a change batch, deletions — and
/// the rows it gains afterwards take the next row numbers.
@Suite struct RowNumberMigrationTests {
    static let g1 = "0C44A1D2-0000-4000-8000-000000000001"
    static let g2 = "0C44A1D2-0000-4000-8000-000000000002"

    /// Schema 18's forms: GUIDs and canonical fingerprints compact, dates as compact seconds.
    /// "a-…" sorts after "Z-…" in byte order, and "MAC-ALBUM" between "MAC-2" and "a-1".
    static let seed = """
        INSERT INTO accounts (account_key, account_id, name, created_at, next_device_key, next_record_order, mapping_version) VALUES (1, 'acc', 'A', 1000, 3, 3, 7);
        INSERT INTO devices (account_key, device_key, device_id, name, created_at, object_count) VALUES (1, 1, 'mac', 'Mac', 2000, 5);
        INSERT INTO devices (account_key, device_key, device_id, name, created_at, object_count) VALUES (1, 2, 'pc', 'PC', 2000, 3);
        INSERT INTO records (account_key, guid, type, fingerprint, created_order) VALUES (1, concord_compact('\(g1)'), 1, concord_compact('\(contentFingerprint(1))'), 1);
        INSERT INTO records (account_key, guid, type, fingerprint, created_order) VALUES (1, concord_compact('\(g2)'), 1, concord_compact('\(contentFingerprint(2))'), 2);
        INSERT INTO objects (account_key, device_key, local_id, type, fingerprint, media_type, creation_date, has_adjustments, is_favorite, members, app_created, record_guid, key_a)
            VALUES (1, 1, 'a-1', 1, '', '', concord_date('2024-05-03T10:00:00Z'), 0, 0, '', 0, NULL, NULL),
                   (1, 1, 'MAC-1', 1, concord_compact('\(contentFingerprint(1))'), '', concord_date('2024-05-01T10:00:00Z'), 0, 0, '', 0, concord_compact('\(g1)'), NULL),
                   (1, 1, 'MAC-2', 1, concord_compact('\(contentFingerprint(2))'), '', concord_date('2024-05-02T10:00:00Z'), 0, 0, '', 0, concord_compact('\(g2)'), NULL),
                   (1, 1, 'MAC-ALBUM', 40, '', '', NULL, 0, 0, 'MAC-1' || char(10) || 'MAC-2', 0, NULL, NULL),
                   (1, 1, 'Z-1', 1, '', 'video', concord_date('2024-05-04T10:00:00Z'), 0, 1, '', 0, NULL, NULL),
                   (1, 2, 'PC-1', 1, concord_compact('\(contentFingerprint(1))'), '', concord_date('2024-05-01T10:00:00Z'), 0, 0, '', 0, concord_compact('\(g1)'), NULL),
                   (1, 2, 'PC-2', 1, concord_compact('\(contentFingerprint(2))'), '', concord_date('2024-05-02T10:00:00Z'), 0, 0, '', 0, NULL, NULL),
                   (1, 2, 'PC-NOHASH', 1, '', '', concord_date('2024-05-01T10:00:00Z'), 0, 0, '', 0, NULL, NULL);
        """

    @Test func aMappedSchema18DatabaseConvertsInPlaceAndAnswersAsBefore() throws {
        try OldSchemaDatabase.open(.sqlite, atVersion: 18, seed: (sqlite: Self.seed, postgres: "")) { store in
            let sqlite = try #require(store as? SQLiteStore)
            // The new layout: a rowid table, the local identifier unique in its own index.
            var tableSQL = ""
            try sqlite.writer.query("SELECT sql FROM sqlite_schema WHERE name = 'objects'") { s in tableSQL = s.text(0) }
            #expect(!tableSQL.uppercased().contains("WITHOUT ROWID"))
            var indexes: [String] = []
            try sqlite.writer.query("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'objects' ORDER BY name") { s in indexes.append(s.text(0)) }
            #expect(indexes == ["objects_by_content", "objects_by_key", "objects_by_link", "objects_by_local_id", "objects_by_type"])
            #expect(try sqlite.writer.scalarInt("SELECT count(*) FROM objects") == 8)
            #expect(try sqlite.writer.scalarInt("SELECT max(version) FROM schema_migrations") == Int64(SQLiteMigrations.latestVersion))
            // Copied in (account, device, local identifier) order.
            var copied: [String] = []
            try sqlite.writer.query("SELECT local_id FROM objects ORDER BY rowid") { s in copied.append(s.text(0)) }
            #expect(copied == ["MAC-1", "MAC-2", "MAC-ALBUM", "Z-1", "a-1", "PC-1", "PC-2", "PC-NOHASH"])

            let mac = DeviceRef(accountID: "acc", deviceID: "mac"), pc = DeviceRef(accountID: "acc", deviceID: "pc")
            let r1 = "\(Self.g1):001:\(contentFingerprint(1))", r2 = "\(Self.g2):001:\(contentFingerprint(2))"
            for indexBytes in [0, 64 << 20] {   // from storage, and from the in-memory index loaded from the tables
                var configuration = DomainConfiguration()
                configuration.mappingIndexBytes = indexBytes
                let service = try ConcordService(store: store, configuration: configuration)
                #expect(try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["MAC-1", "MAC-2"], device: mac).map(\.result) == [.found(r1), .found(r2)])
                #expect(try service.mapping.localIdentifiers(forCloudIdentifiers: [r1, r2], device: pc).map(\.result) == [.found("PC-1"), .found("PC-2")])
                // Listings in byte order, paged by `after`, through the unique index.
                #expect(try service.library.listObjects(type: .asset, after: nil, limit: 10, device: mac).objects.map(\.localIdentifier) == ["MAC-1", "MAC-2", "Z-1", "a-1"])
                #expect(try service.library.listObjects(type: .asset, after: "MAC-2", limit: 1, device: mac).objects.map(\.localIdentifier) == ["Z-1"])
                #expect(try service.library.listObjects(type: nil, after: "MAC-1", limit: 10, device: mac).objects.map(\.localIdentifier) == ["MAC-2", "MAC-ALBUM", "Z-1", "a-1"])
                #expect(try service.library.listObjects(type: .assetCollection, after: nil, limit: 10, device: mac).objects.map(\.localIdentifier) == ["MAC-ALBUM"])
            }
            // Columns came across as they were.
            let z = try #require(try store.read(account: "acc") { tx in try tx.objects(mac, localIdentifiers: ["Z-1"]) }.first)
            #expect(z.object.mediaType == .video && z.object.isFavorite && z.object.creationDate == "2024-05-04T10:00:00Z")
            #expect(try store.read(account: "acc") { tx in try tx.objects(pc, matching: [ContentKey(type: .asset, fingerprint: contentFingerprint(2))]) }
                .map(\.object.localIdentifier) == ["PC-2"])
            // A record still links to at most one object per device; a local identifier is still unique per device.
            #expect(throws: (any Error).self) {
                try store.write(account: "acc") { tx in try tx.setLinks(pc, [("PC-NOHASH", Self.g1)]) }
            }
            let service = try ConcordService(store: store, configuration: DomainConfiguration())
            #expect(try service.mapping.status(device: pc) == LibraryStatus(objects: 3, withFingerprint: 2, withKey: 0, linked: 2, wanted: 0))
            // A change batch after the migration: an update keeps its row, a new object takes the next row number.
            let before = try #require(try sqlite.writer.scalarInt("SELECT rowid FROM objects WHERE device_key = 1 AND local_id = 'Z-1'"))
            try service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(
                upsert: [LibraryObject(localIdentifier: "Z-1", type: .asset, fingerprint: "", title: "renamed"),
                         LibraryObject(localIdentifier: "B-NEW", type: .asset, fingerprint: contentFingerprint(3))],
                delete: ["MAC-1"])), device: mac)
            #expect(try sqlite.writer.scalarInt("SELECT rowid FROM objects WHERE device_key = 1 AND local_id = 'Z-1'") == before)
            #expect(try sqlite.writer.scalarInt("SELECT rowid FROM objects WHERE device_key = 1 AND local_id = 'B-NEW'") == 9)
            #expect(try service.library.object(localIdentifier: "Z-1", device: mac).title == "renamed")
            #expect(try service.library.object(localIdentifier: "MAC-ALBUM", device: mac).members == ["MAC-2"])
            #expect(try service.library.listObjects(type: .asset, after: nil, limit: 10, device: mac).objects.map(\.localIdentifier) == ["B-NEW", "MAC-2", "Z-1", "a-1"])
            #expect(try sqlite.writer.scalarInt("SELECT count(*) FROM objects WHERE device_key = 1 AND local_id = 'Z-1'") == 1)
            // A new record and link by content on the other device.
            let created = try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["B-NEW"], device: mac)
            guard case .found(let r3) = try #require(created.first).result else { Issue.record("no record for B-NEW: \(created)"); return }
            #expect(r3.hasSuffix(contentFingerprint(3)))
        }
    }
}
