import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// SQLite's migration 19: the link index keyed by device, then record. A database written at
/// schema 18 with links on two devices converts in place and answers as before: mappings both ways
/// from storage and from the index, a content match stored as a link, the wanted rule (whose
/// query probes each device), and a record still links to at most one object per device.
@Suite struct LinkIndexMigrationTests {
    static let g1 = LayoutMigrationTests.g1, g2 = LayoutMigrationTests.g2, g3 = "0C44A1D2-0000-4000-8000-000000000003"
    static func fingerprint(_ n: Int) -> String { LayoutMigrationTests.fingerprint(n) }

    /// Rows as schema 18 stores them: GUIDs, fingerprints and dates in their compact forms.
    static func object(_ device: Int, _ id: String, _ n: Int, link: String?) -> String {
        "(1, \(device), '\(id)', 1, concord_compact('\(fingerprint(n))'), '', concord_date('2024-05-0\(n)T10:00:00Z'), 0, 0, '', 0, "
            + (link.map { "concord_compact('\($0)')" } ?? "NULL") + ", NULL)"
    }

    static let seed = """
        INSERT INTO accounts (account_key, account_id, name, created_at, next_device_key, next_record_order) VALUES (1, 'acc', 'A', 1000, 3, 4);
        INSERT INTO devices (account_key, device_key, device_id, name, created_at, object_count) VALUES (1, 1, 'mac', 'Mac', 2000, 3), (1, 2, 'pc', 'PC', 2000, 2);
        INSERT INTO records (account_key, guid, type, fingerprint, created_order) VALUES
            (1, concord_compact('\(g1)'), 1, concord_compact('\(fingerprint(1))'), 1),
            (1, concord_compact('\(g2)'), 1, concord_compact('\(fingerprint(2))'), 2),
            (1, concord_compact('\(g3)'), 1, concord_compact('\(fingerprint(3))'), 3);
        INSERT INTO objects (account_key, device_key, local_id, type, fingerprint, media_type, creation_date, has_adjustments, is_favorite, members, app_created, record_guid, creation_second)
            VALUES \(object(1, "MAC-1", 1, link: g1)), \(object(1, "MAC-2", 2, link: g2)), \(object(1, "MAC-3", 3, link: g3)),
                   \(object(2, "PC-1", 1, link: g1)), \(object(2, "PC-2", 2, link: nil));
        """

    @Test func aSchema18DatabaseConvertsInPlace() throws {
        try OldSchemaDatabase.open(.sqlite, atVersion: 18, seed: (sqlite: Self.seed, postgres: "")) { store in
            let sqlite = try #require(store as? SQLiteStore)
            var columns: [String] = []
            try sqlite.writer.query("SELECT name FROM pragma_index_info('objects_by_link') ORDER BY seqno") { s in columns.append(s.text(0)) }
            #expect(columns == ["account_key", "device_key", "record_guid"])
            #expect(try sqlite.writer.scalarInt("SELECT count(*) FROM objects INDEXED BY objects_by_link WHERE account_key = 1 AND device_key = 1 AND record_guid IS NOT NULL") == 3)

            let mac = DeviceRef(accountID: "acc", deviceID: "mac"), pc = DeviceRef(accountID: "acc", deviceID: "pc")
            let r = (1...3).map { n in "\([Self.g1, Self.g2, Self.g3][n - 1]):001:\(Self.fingerprint(n))" }
            for indexBytes in [0, 64 << 20] {   // from storage, and from the in-memory index
                var configuration = DomainConfiguration()
                configuration.mappingIndexBytes = indexBytes
                let service = try ConcordService(store: store, configuration: configuration)
                #expect(try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["MAC-1", "MAC-2", "MAC-3"], device: mac).map(\.result) == r.map { .found($0) })
                #expect(try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["PC-1"], device: pc).map(\.result) == [.found(r[0])])
                // PC-2 matches record 2 by content: found, and stored as a link under the new index.
                #expect(try service.mapping.localIdentifiers(forCloudIdentifiers: [r[0], r[1]], device: pc).map(\.result) == [.found("PC-1"), .found("PC-2")])
                // Record 3 is linked on the Mac only: wanted on the PC; nothing is wanted on the Mac.
                #expect(try service.mapping.status(device: pc) == LibraryStatus(objects: 2, withFingerprint: 2, withKey: 0, linked: 2, wanted: 1))
                #expect(try service.mapping.status(device: mac).wanted == 0)
            }
            #expect(try store.read(account: "acc") { tx in try tx.linkedObjects(pc, guids: [Self.g1, Self.g2]) }.map(\.localIdentifier).sorted() == ["PC-1", "PC-2"])
            // A record links to at most one object per device, under the re-keyed unique index.
            #expect(throws: (any Error).self) {
                try store.write(account: "acc") { tx in try tx.setLinks(pc, [("PC-1", Self.g2)]) }
            }
        }
    }
}
