import ConcordDomain
import ConcordMappingIndex
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// Migration 9 (a smaller database): a database written at schema 8 with two mapped
/// devices, an album and a fingerprint-less photo converts on both engines and answers as before —
/// mappings both ways, listings by type, the album scan of a delete, the wanted rule — and a record
/// still links to at most one object per device.
@Suite struct LayoutMigrationTests {
    static let g1 = "0C44A1D2-0000-4000-8000-000000000001"
    static let g2 = "0C44A1D2-0000-4000-8000-000000000002"

    static let sqliteSeed = """
        INSERT INTO accounts (account_key, account_id, name, created_at, next_device_key, next_record_order) VALUES (1, 'acc', 'A', 1000, 3, 3);
        INSERT INTO devices (account_key, device_key, device_id, name, created_at, object_count) VALUES (1, 1, 'mac', 'Mac', 2000, 4);
        INSERT INTO devices (account_key, device_key, device_id, name, created_at, object_count) VALUES (1, 2, 'pc', 'PC', 2000, 3);
        INSERT INTO records (account_key, guid, type, fingerprint, created_order, created_at) VALUES (1, '\(g1)', 1, '\(contentFingerprint(1))', 1, 3000);
        INSERT INTO records (account_key, guid, type, fingerprint, created_order, created_at) VALUES (1, '\(g2)', 1, '\(contentFingerprint(2))', 2, 3000);
        INSERT INTO objects (account_key, device_key, local_id, type, fingerprint, media_type, creation_date, has_adjustments, is_favorite, members, app_created, record_guid, creation_second)
            VALUES (1, 1, 'MAC-1', 1, '\(contentFingerprint(1))', 'image', '2024-05-01T10:00:00Z', 0, 0, '', 0, '\(g1)', 1714557600),
                   (1, 1, 'MAC-2', 1, '\(contentFingerprint(2))', 'image', '2024-05-02T10:00:00Z', 0, 0, '', 0, '\(g2)', 1714644000),
                   (1, 1, 'MAC-ALBUM', 40, '', 'image', NULL, 0, 0, 'MAC-1' || char(10) || 'MAC-2', 0, NULL, NULL),
                   (1, 2, 'PC-1', 1, '\(contentFingerprint(1))', 'image', '2024-05-01T10:00:00Z', 0, 0, '', 0, '\(g1)', 1714557600),
                   (1, 2, 'PC-2', 1, '\(contentFingerprint(2))', 'image', '2024-05-02T10:00:00Z', 0, 0, '', 0, NULL, 1714644000),
                   (1, 2, 'PC-NOHASH', 1, '', 'image', '2024-05-01T10:00:00Z', 0, 0, '', 0, NULL, 1714557600);
        """

    static let postgresSeed = """
        INSERT INTO accounts (account_id, name, created_at, next_record_order) VALUES ('acc', 'A', 1000, 3);
        INSERT INTO devices (account_id, device_id, name, created_at, object_count) VALUES ('acc', 'mac', 'Mac', 2000, 4);
        INSERT INTO devices (account_id, device_id, name, created_at, object_count) VALUES ('acc', 'pc', 'PC', 2000, 3);
        INSERT INTO records (account_id, guid, type, fingerprint, created_order, created_at) VALUES ('acc', '\(g1)', 1, '\(contentFingerprint(1))', 1, 3000);
        INSERT INTO records (account_id, guid, type, fingerprint, created_order, created_at) VALUES ('acc', '\(g2)', 1, '\(contentFingerprint(2))', 2, 3000);
        INSERT INTO objects (account_id, device_id, local_id, type, fingerprint, media_type, creation_date, has_adjustments, is_favorite, members, app_created, record_guid, creation_second)
            VALUES ('acc', 'mac', 'MAC-1', 1, '\(contentFingerprint(1))', 'image', '2024-05-01T10:00:00Z', false, false, '', false, '\(g1)', 1714557600),
                   ('acc', 'mac', 'MAC-2', 1, '\(contentFingerprint(2))', 'image', '2024-05-02T10:00:00Z', false, false, '', false, '\(g2)', 1714644000),
                   ('acc', 'mac', 'MAC-ALBUM', 40, '', 'image', NULL, false, false, 'MAC-1' || chr(10) || 'MAC-2', false, NULL, NULL),
                   ('acc', 'pc', 'PC-1', 1, '\(contentFingerprint(1))', 'image', '2024-05-01T10:00:00Z', false, false, '', false, '\(g1)', 1714557600),
                   ('acc', 'pc', 'PC-2', 1, '\(contentFingerprint(2))', 'image', '2024-05-02T10:00:00Z', false, false, '', false, NULL, 1714644000),
                   ('acc', 'pc', 'PC-NOHASH', 1, '', 'image', '2024-05-01T10:00:00Z', false, false, '', false, NULL, 1714557600);
        """

    @Test(arguments: TestEngine.available)
    func aMappedSchema8DatabaseAnswersAsBefore(_ engine: TestEngine) throws {
        try OldSchemaDatabase.open(engine, atVersion: 8, seed: (sqlite: Self.sqliteSeed, postgres: Self.postgresSeed)) { store in
            let mac = DeviceRef(accountID: "acc", deviceID: "mac"), pc = DeviceRef(accountID: "acc", deviceID: "pc")
            let r1 = "\(Self.g1):001:\(contentFingerprint(1))", r2 = "\(Self.g2):001:\(contentFingerprint(2))"
            for indexBytes in [0, 64 << 20] {   // from storage, and from the in-memory index
                var configuration = DomainConfiguration()
                configuration.mappingIndexBytes = indexBytes
                let service = try ConcordService(store: store, configuration: configuration)
                #expect(try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["MAC-1", "MAC-2"], device: mac).map(\.result) == [.found(r1), .found(r2)])
                #expect(try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["PC-1"], device: pc).map(\.result) == [.found(r1)])
                // The record's link on the other device, and a content match on this one.
                #expect(try service.mapping.localIdentifiers(forCloudIdentifiers: [r1, r2], device: pc).map(\.result) == [.found("PC-1"), .found("PC-2")])
                // Listings by type: assets through the primary key, the album through the partial index.
                #expect(try service.library.listObjects(type: .asset, after: nil, limit: 10, device: mac).objects.map(\.localIdentifier) == ["MAC-1", "MAC-2"])
                #expect(try service.library.listObjects(type: .assetCollection, after: nil, limit: 10, device: mac).objects.map(\.localIdentifier) == ["MAC-ALBUM"])
                #expect(try service.library.listObjects(type: nil, after: "MAC-1", limit: 10, device: mac).objects.map(\.localIdentifier) == ["MAC-2", "MAC-ALBUM"])
            }
            let service = try ConcordService(store: store, configuration: DomainConfiguration())
            // The content match above was stored as a link: PC-2 now answers by its link.
            #expect(try store.read(account: "acc") { tx in try tx.linkedObjects(pc, guids: [Self.g1, Self.g2]) }.map(\.localIdentifier).sorted() == ["PC-1", "PC-2"])
            // A record links to at most one object per device, under the merged unique index.
            #expect(throws: (any Error).self) {
                try store.write(account: "acc") { tx in try tx.setLinks(pc, [("PC-NOHASH", Self.g1)]) }
            }
            // Status counts, and the wanted rule over the old rows.
            #expect(try service.mapping.status(device: pc) == LibraryStatus(objects: 3, withFingerprint: 2, withKey: 0, linked: 2, wanted: 0))
            // Deleting a photo takes it out of the album (the album scan reads the partial index).
            try service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(delete: ["MAC-1"])), device: mac)
            #expect(try service.library.object(localIdentifier: "MAC-ALBUM", device: mac).members == ["MAC-2"])
            // Objects without a fingerprint are still found by storage's content lookup of ''.
            #expect(try store.read(account: "acc") { tx in try tx.objects(pc, matching: [ContentKey(type: .asset, fingerprint: "")]) }
                .map(\.object.localIdentifier) == ["PC-NOHASH"])
            #expect(try store.read(account: "acc") { tx in
                try tx.objects(pc, matching: [ContentKey(type: .asset, fingerprint: ""), ContentKey(type: .asset, fingerprint: contentFingerprint(1))])
            }.map(\.object.localIdentifier) == ["PC-1", "PC-NOHASH"])
        }
    }
}
