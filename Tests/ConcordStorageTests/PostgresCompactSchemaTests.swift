import ConcordDomain
import ConcordMappingIndex
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// PostgreSQL migration 14 (the compact layout): a database written at schema 13 — accounts,
/// devices, tokens, a mapped library with keys, fingerprints in and out of base64url, dates in
/// both spellings, history, journals, an idempotency key and an upload in parts — migrates in
/// place and answers as before; data the new layout cannot hold stops the migration naming the
/// row, and leaves schema 13 as it was.
@Suite(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason)))
struct PostgresCompactSchemaTests {
    static let g1 = "0C44A1D2-0000-4000-8000-000000000001"
    static let g2 = "0C44A1D2-0000-4000-8000-000000000002"
    static let g3 = "0C44A1D2-0000-4000-8000-000000000003"
    static let g4 = "0C44A1D2-0000-4000-8000-000000000004"
    /// A fingerprint that is not canonical base64url (its unused low bits are set), and one that is
    /// but whose bytes begin with 0: both stored as their text.
    static let oddFingerprint = "BBBBBBBBBBBBBBBBBBBBBB", zeroFingerprint = "AAAAAAAAAAAAAAAAAAAAAA"
    static let accountToken: [UInt8] = [0xA1], deviceToken: [UInt8] = [0xD1]

    static let seed = """
        INSERT INTO accounts (account_id, name, created_at, next_record_order, mapping_version) VALUES ('acc', 'A', 1000, 5, 7);
        INSERT INTO devices (account_id, device_id, name, created_at, object_count, last_change_seq) VALUES ('acc', 'mac', 'Mac', 2000, 5, 2);
        INSERT INTO devices (account_id, device_id, name, created_at, object_count) VALUES ('acc', 'pc', 'PC', 2001, 4);
        INSERT INTO tokens (token_hash, kind, account_id, device_id, created_at) VALUES ('\\xa1', 1, 'acc', NULL, 1000), ('\\xd1', 2, 'acc', 'mac', 2000);
        INSERT INTO records (account_id, guid, type, fingerprint, created_order, created_at) VALUES
            ('acc', '\(g1)', 1, '\(contentFingerprint(1))', 1, 3000),
            ('acc', '\(g2)', 1, '\(contentFingerprint(2))', 2, 3000),
            ('acc', '\(g3)', 1, '\(oddFingerprint)', 3, 3000),
            ('acc', '\(g4)', 1, '\(zeroFingerprint)', 4, 3000);
        INSERT INTO record_keys (account_id, guid, type, key_a) VALUES ('acc', '\(g1)', 1, 'KEY-1');
        INSERT INTO objects (account_id, device_id, local_id, type, fingerprint, media_type, creation_date, modification_date, has_adjustments,
                             is_favorite, title, members, app_created, record_guid, pk_identifier, key_a, creation_second) VALUES
            ('acc', 'mac', 'MAC-1', 1, '\(contentFingerprint(1))', 'image', '2024-05-01T10:00:00Z', '2024-05-02T00:00:00Z', false, true, NULL, '', false, '\(g1)', 'KEY-1:001:x', 'KEY-1', 1714557600),
            ('acc', 'mac', 'MAC-2', 1, '\(contentFingerprint(2))', 'video', '2024-05-01T10:00:00.5+02:00', '2024-05-02 00:00', true, false, NULL, '', false, '\(g2)', NULL, NULL, 1714550400),
            ('acc', 'mac', 'MAC-3', 1, '\(oddFingerprint)', 'image', NULL, NULL, false, false, NULL, '', false, '\(g3)', NULL, NULL, NULL),
            ('acc', 'mac', 'MAC-4', 1, '\(zeroFingerprint)', 'image', '2024-02-30T10:00:00Z', NULL, false, false, NULL, '', false, '\(g4)', NULL, NULL, NULL),
            ('acc', 'mac', 'MAC-ALBUM', 40, '', 'image', NULL, NULL, false, false, 'Trip', 'MAC-1' || chr(10) || 'MAC-2', true, NULL, NULL, NULL, NULL),
            ('acc', 'pc', 'PC-1', 1, '\(contentFingerprint(1))', 'image', '2024-05-01T10:00:00Z', NULL, false, false, NULL, '', false, '\(g1)', NULL, NULL, 1714557600),
            ('acc', 'pc', 'PC-2', 1, '\(contentFingerprint(2))', 'image', NULL, NULL, false, false, NULL, '', false, NULL, NULL, NULL, NULL),
            ('acc', 'pc', 'PC-3', 1, '\(oddFingerprint)', 'image', NULL, NULL, false, false, NULL, '', false, NULL, NULL, NULL, NULL),
            ('acc', 'pc', 'PC-NOHASH', 1, '', 'image', '2024-05-01T08:00:00Z', NULL, false, false, NULL, '', false, NULL, NULL, NULL, 1714550400);
        INSERT INTO changes (account_id, device_id, seq, created_at, details) VALUES
            ('acc', 'mac', 1, 4000, 'aiMAC-1' || chr(10) || 'aiMAC-2' || chr(10) || 'ciMAC-ALBUM'), ('acc', 'mac', 2, 4001, NULL);
        INSERT INTO journals (account_id, journal_id, title, version, entry_count, created_seq, created_at, updated_at) VALUES ('acc', 'J1', 'Trip', 2, 1, 1, 5000, 5001);
        INSERT INTO journal_entries (account_id, journal_id, entry_id, text, photos, version, created_seq) VALUES ('acc', 'J1', 'E1', 'Beach', '\(g1):001:\(contentFingerprint(1))', 2, 2);
        INSERT INTO journal_feeds (account_id, last_change_seq) VALUES ('acc', 2);
        INSERT INTO journal_changes (account_id, seq, created_at, details) VALUES ('acc', 1, 5000, 'jiJ1'), ('acc', 2, 5001, 'juJ1' || chr(10) || 'eiJ1/E1');
        INSERT INTO idempotency_keys (owner_hash, key, account_id, fingerprint, answer, applied, created_at) VALUES ('\\x0a', 'k1', 'acc', '\\x0b', '\\x0c', true, extract(epoch FROM now()));
        INSERT INTO uploads (account_id, upload_id, device_id, touched_at) VALUES ('acc', 'U1', 'pc', extract(epoch FROM now()));
        INSERT INTO upload_parts (account_id, upload_id, part, objects) VALUES ('acc', 'U1', 1, 2), ('acc', 'U1', 2, 1);
        INSERT INTO upload_objects (account_id, upload_id, local_id, part, type, fingerprint, media_type, creation_date, modification_date,
                                    has_adjustments, is_favorite, title, members, app_created, pk_identifier) VALUES
            ('acc', 'U1', 'PC-1', 1, 1, '\(contentFingerprint(1))', 'image', '2024-05-01T10:00:00Z', NULL, false, false, NULL, '', false, NULL),
            ('acc', 'U1', 'PC-2', 1, 1, '\(contentFingerprint(2))', 'image', NULL, NULL, false, false, NULL, '', false, NULL),
            ('acc', 'U1', 'PC-5', 2, 1, '\(contentFingerprint(5))', 'audio', '2025-01-01T00:00:00+01:00', NULL, false, false, NULL, '', false, NULL);
        """

    @Test func aSchema13DatabaseMigratesAndAnswersAsBefore() throws {
        try OldSchemaDatabase.open(.postgres, atVersion: 13, seed: (sqlite: "", postgres: Self.seed)) { store in
            let mac = DeviceRef(accountID: "acc", deviceID: "mac"), pc = DeviceRef(accountID: "acc", deviceID: "pc")
            let r1 = "\(Self.g1):001:\(contentFingerprint(1))", r2 = "\(Self.g2):001:\(contentFingerprint(2))"
            let r3 = "\(Self.g3):001:\(Self.oddFingerprint)", r4 = "\(Self.g4):001:\(Self.zeroFingerprint)"
            // Tokens and accounts keep their IDs.
            #expect(try store.readServer { tx in try tx.tokenOwner(tokenHash: Self.deviceToken) }?.principal == .device(mac))
            #expect(try store.readServer { tx in try tx.tokenOwner(tokenHash: Self.accountToken) }?.principal == .account(accountID: "acc"))
            #expect(try store.read(account: "acc") { tx in try tx.mappingVersion() } == 7)
            for indexBytes in [0, 64 << 20] {   // from storage, and from the in-memory index loaded from the new tables
                var configuration = DomainConfiguration()
                configuration.mappingIndexBytes = indexBytes
                let service = try ConcordService(store: store, configuration: configuration)
                #expect(try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["MAC-1", "MAC-2", "MAC-3", "MAC-4"], device: mac).map(\.result)
                        == [.found(r1), .found(r2), .found(r3), .found(r4)])
                #expect(try service.mapping.localIdentifiers(forCloudIdentifiers: [r1, r3], device: pc).map(\.result) == [.found("PC-1"), .found("PC-3")])
                #expect(try service.mapping.localIdentifiers(forCloudIdentifiers: [r1, r2, r3, r4], device: mac).map(\.result)
                        == [.found("MAC-1"), .found("MAC-2"), .found("MAC-3"), .found("MAC-4")])
                // Objects read back exactly as stored: both date spellings, the media type, flags, the album.
                let o1 = try service.library.object(localIdentifier: "MAC-1", device: mac)
                #expect(o1.creationDate == "2024-05-01T10:00:00Z" && o1.modificationDate == "2024-05-02T00:00:00Z" && o1.isFavorite
                        && o1.fingerprint == contentFingerprint(1) && o1.photoKitCloudIdentifier == "KEY-1:001:x" && o1.mediaType == .image)
                let o2 = try service.library.object(localIdentifier: "MAC-2", device: mac)
                #expect(o2.creationDate == "2024-05-01T10:00:00.5+02:00" && o2.modificationDate == "2024-05-02 00:00" && o2.mediaType == .video && o2.hasAdjustments)
                #expect(try service.library.object(localIdentifier: "MAC-3", device: mac).fingerprint == Self.oddFingerprint)
                let o4 = try service.library.object(localIdentifier: "MAC-4", device: mac)
                #expect(o4.fingerprint == Self.zeroFingerprint && o4.creationDate == "2024-02-30T10:00:00Z")
                let album = try service.library.object(localIdentifier: "MAC-ALBUM", device: mac)
                #expect(album.members == ["MAC-1", "MAC-2"] && album.title == "Trip" && album.appCreated)
                #expect(try service.library.listObjects(type: .assetCollection, after: nil, limit: 10, device: mac).objects.map(\.localIdentifier) == ["MAC-ALBUM"])
                // Status and the wanted rule over the old rows.
                #expect(try service.mapping.status(device: mac) == LibraryStatus(objects: 5, withFingerprint: 4, withKey: 1, linked: 4, wanted: 0))
                #expect(try service.mapping.wanted(device: pc, after: nil, limit: 10).objects.map(\.localIdentifier) == ["PC-NOHASH"])
                // Journals: the entry's photo resolves on each device.
                #expect(try service.journals.listJournals(device: mac).map(\.title) == ["Trip"])
                #expect(try service.journals.entry(journalID: "J1", entryID: "E1", device: pc).photos.map(\.result) == [.found("PC-1")])
            }
            // History: the stored changes, text details and an unavailable one, page as before.
            let history = try store.read(account: "acc") { tx in try tx.changes(mac, after: 0, limit: 10) }
            #expect(history.map(\.seq) == [1, 2] && history[1].details == nil)
            #expect(history.first?.details?[.asset].inserted.count == 2 && history.first?.details?[.assetCollection].inserted.count == 1)
            let service = try ConcordService(store: store, configuration: DomainConfiguration())
            let token = try service.history.currentChangeToken(device: mac)
            try service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(delete: ["MAC-2"])), device: mac)
            #expect(try service.history.changes(since: token, limit: 10, device: mac).changes.map { $0.details?[.asset].deleted.count } == [1])
            #expect(try service.library.object(localIdentifier: "MAC-ALBUM", device: mac).members == ["MAC-1"])
            // The idempotency key answers its stored answer.
            // Any fingerprint text round-trips, base64url or not.
            for text in ["fp not base64!", "AA", "A", "Zm9v", "Zm9v=", "\u{E9}t\u{E9}"] {
                try store.write(account: "acc") { tx in try tx.putObjects(pc, [StoredObject(object: .asset("PC-ODD", fingerprint: text), link: nil)]) }
                #expect(try store.read(account: "acc") { tx in try tx.objects(pc, localIdentifiers: ["PC-ODD"]) }.first?.object.fingerprint == text)
                #expect(try store.read(account: "acc") { tx in try tx.objects(pc, matching: [ContentKey(type: .asset, fingerprint: text)]) }
                    .map(\.object.localIdentifier) == ["PC-ODD"])
            }
            try store.write(account: "acc") { tx in try tx.deleteObjects(pc, localIdentifiers: ["PC-ODD"]) }
            #expect(try service.idempotency.claim(owner: [0x0A], accountID: "acc", key: "k1", fingerprint: [0x0B]) == .replay([0x0C]))
            // The upload in parts commits into the new tables: PC-1 unchanged (keeps its link), PC-5 new,
            // PC-3 and PC-NOHASH deleted.
            let committed = try service.uploads.commit("U1", reset: false, device: pc)
            #expect(committed.inserted == 1 && committed.unchanged == 2 && committed.deleted == 2)
            #expect(try service.mapping.localIdentifiers(forCloudIdentifiers: [r1], device: pc).map(\.result) == [.found("PC-1")])
            #expect(try service.library.object(localIdentifier: "PC-5", device: pc).creationDate == "2025-01-01T00:00:00+01:00")
            // New records and links land in the new tables; a record still links to at most one object per device.
            let fresh = try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["PC-5"], device: pc)
            guard case .found(let r5)? = fresh.first?.result else { Issue.record("PC-5 got no cloud identifier: \(fresh)"); return }
            #expect(try service.mapping.localIdentifiers(forCloudIdentifiers: [r5], device: pc).map(\.result) == [.found("PC-5")])
            #expect(throws: (any Error).self) { try store.write(account: "acc") { tx in try tx.setLinks(pc, [("PC-2", Self.g1)]) } }
        }
    }

    @Test func dataTheLayoutCannotHoldStopsTheMigrationAndChangesNothing() throws {
        let unconvertible = """
            INSERT INTO records (account_id, guid, type, fingerprint, created_order, created_at) VALUES ('acc', 'not-a-uuid', 1, 'x', 9, 3000);
            """
        try OldSchemaDatabase.postgresMigrationStops(
            atVersion: 13, seed: Self.seed + unconvertible, failure: "table records, row (account_id acc, guid not-a-uuid)",
            unchanged: { probe throws in
                // Every row where it was.
                #expect(try probe.scalarInt("SELECT count(*) FROM objects WHERE record_guid IS NOT NULL") == 5)
                #expect(try probe.scalarInt("SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = 'account_key'") == 0)
            },
            fix: "DELETE FROM records WHERE guid = 'not-a-uuid'",
            migrated: { store throws in #expect(try store.read(account: "acc") { tx in try tx.recordCount() } == 4) }
        )
    }
}
