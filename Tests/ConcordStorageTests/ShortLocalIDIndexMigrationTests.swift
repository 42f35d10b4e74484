import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// Migration 20 (SQLite: `objects_by_local_id` keyed by a local identifier's first and last 8
/// characters, no longer unique): a mapped database written at schema 19 converts in place and
/// answers as before, identifiers sharing both keys included — lookups, listings in byte order
/// across such a run, a change batch that updates, inserts and deletes, duplicates in one batch.
@Suite struct ShortLocalIDIndexMigrationTests {
    /// Two identifiers sharing their first and their last 8 characters (one run of the index's key),
    /// sorting before "MAC-1"; "AAAAAAAA" alone is shorter than both.
    static let a1 = "AAAAAAAA-1-x/L0/001", a2 = "AAAAAAAA-2-x/L0/001", a3 = "AAAAAAAA-3-x/L0/001"
    static let seed = RowNumberMigrationTests.seed + """
        INSERT INTO objects (account_key, device_key, local_id, type, fingerprint, media_type, creation_date, has_adjustments, is_favorite, members, app_created, record_guid, key_a)
            VALUES (1, 1, '\(a2)', 1, '', '', NULL, 0, 1, '', 0, NULL, NULL),
                   (1, 1, '\(a1)', 1, '', '', NULL, 0, 0, '', 0, NULL, NULL);
        """

    @Test func aMappedSchema19DatabaseConvertsInPlaceAndAnswersAsBefore() throws {
        try OldSchemaDatabase.open(.sqlite, atVersion: 19, seed: (sqlite: Self.seed, postgres: "")) { store in
            let sqlite = try #require(store as? SQLiteStore)
            #expect(try sqlite.writer.scalarInt("SELECT max(version) FROM schema_migrations") == 20)
            var indexSQL = ""
            try sqlite.writer.query("SELECT sql FROM sqlite_schema WHERE name = 'objects_by_local_id'") { s in indexSQL = s.text(0) }
            #expect(indexSQL.contains("substr(local_id, 1, 8)") && indexSQL.contains("substr(local_id, -8)") && !indexSQL.uppercased().contains("UNIQUE"))
            #expect(try sqlite.writer.scalarInt("SELECT count(*) FROM objects") == 10)

            let mac = DeviceRef(accountID: "acc", deviceID: "mac"), pc = DeviceRef(accountID: "acc", deviceID: "pc")
            let r1 = "\(RowNumberMigrationTests.g1):001:\(contentFingerprint(1))"
            let found = try store.read(account: "acc") { tx in try tx.objects(mac, localIdentifiers: [Self.a2, "a-1", "AAAAAAAA", "nope"]) }
            #expect(Set(found.map(\.object.localIdentifier)) == [Self.a2, "a-1"])
            #expect(found.first { $0.object.localIdentifier == Self.a2 }?.object.isFavorite == true)
            for indexBytes in [0, 64 << 20] {
                var configuration = DomainConfiguration()
                configuration.mappingIndexBytes = indexBytes
                let service = try ConcordService(store: store, configuration: configuration)
                #expect(try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["MAC-1"], device: mac).map(\.result) == [.found(r1)])
                #expect(try service.mapping.localIdentifiers(forCloudIdentifiers: [r1], device: pc).map(\.result) == [.found("PC-1")])
                // Byte order across a run of equal first 8 characters, paged from inside it and from before it.
                #expect(try service.library.listObjects(type: .asset, after: nil, limit: 10, device: mac).objects.map(\.localIdentifier) == [Self.a1, Self.a2, "MAC-1", "MAC-2", "Z-1", "a-1"])
                #expect(try service.library.listObjects(type: .asset, after: Self.a1, limit: 1, device: mac).objects.map(\.localIdentifier) == [Self.a2])
                #expect(try service.library.listObjects(type: .asset, after: "AAAAAAAA", limit: 2, device: mac).objects.map(\.localIdentifier) == [Self.a1, Self.a2])
                #expect(try service.library.listObjects(type: nil, after: Self.a2, limit: 2, device: mac).objects.map(\.localIdentifier) == ["MAC-1", "MAC-2"])
            }
            let service = try ConcordService(store: store, configuration: DomainConfiguration())
            // A change batch: an update in the run keeps its row, a new one in it appends, a deletion in it.
            let before = try #require(try sqlite.writer.scalarInt("SELECT rowid FROM objects WHERE device_key = 1 AND local_id = '\(Self.a1)'"))
            try service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(
                upsert: [LibraryObject(localIdentifier: Self.a1, type: .asset, fingerprint: "", title: "renamed"),
                         LibraryObject(localIdentifier: Self.a3, type: .asset, fingerprint: contentFingerprint(3))],
                delete: [Self.a2])), device: mac)
            #expect(try sqlite.writer.scalarInt("SELECT rowid FROM objects WHERE device_key = 1 AND local_id = '\(Self.a1)'") == before)
            #expect(try service.library.object(localIdentifier: Self.a1, device: mac).title == "renamed")
            #expect(try service.library.listObjects(type: .asset, after: nil, limit: 3, device: mac).objects.map(\.localIdentifier) == [Self.a1, Self.a3, "MAC-1"])
            // Duplicates in one batch: one row, the last one's values.
            try store.write(account: "acc") { tx in
                try tx.putObjects(mac, [StoredObject(object: .asset(Self.a3, fingerprint: ""), link: nil),
                                        StoredObject(object: LibraryObject(localIdentifier: Self.a3, type: .asset, fingerprint: "", title: "second"), link: nil),
                                        StoredObject(object: LibraryObject(localIdentifier: "NEW-TWICE", type: .asset, fingerprint: "", title: "one"), link: nil),
                                        StoredObject(object: LibraryObject(localIdentifier: "NEW-TWICE", type: .asset, fingerprint: "", title: "two"), link: nil)])
            }
            #expect(try sqlite.writer.scalarInt("SELECT count(*) FROM objects WHERE device_key = 1 AND local_id IN ('\(Self.a3)', 'NEW-TWICE')") == 2)
            #expect(try service.library.object(localIdentifier: Self.a3, device: mac).title == "second")
            #expect(try service.library.object(localIdentifier: "NEW-TWICE", device: mac).title == "two")
            // Links set and read by a local identifier in the run.
            let created = try service.mapping.cloudIdentifiers(forLocalIdentifiers: [Self.a3], device: mac)
            guard case .found(let r3) = try #require(created.first).result else { Issue.record("no record for \(Self.a3): \(created)"); return }
            #expect(try service.mapping.cloudIdentifiers(forLocalIdentifiers: [Self.a3, Self.a1], device: mac).first?.result == .found(r3))
            // Each of the two got its own record, on its own row.
            #expect(try sqlite.writer.scalarInt("SELECT count(DISTINCT record_guid) FROM objects WHERE device_key = 1 AND record_guid IS NOT NULL AND local_id LIKE 'AAAAAAAA%'") == 2)
        }
    }
}
