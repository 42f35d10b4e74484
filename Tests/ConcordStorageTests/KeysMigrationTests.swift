import ConcordDomain
import ConcordMappingIndex
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// Migration 6 (keys and optional fingerprints) on a database written at schema 5 with a
/// mapped library in it, on both engines: the links and records answer as before, creation dates
/// become seconds for the wanted rule, and keys work on the old rows.
@Suite struct KeysMigrationTests {
    static let guid = "0C44A1D2-0000-4000-8000-000000000001"

    @Test(arguments: TestEngine.available)
    func aMappedSchema5LibraryKeepsItsLinksAndTakesKeys(_ engine: TestEngine) throws {
        try OldSchemaDatabase.open(engine, atVersion: 5, seed: (sqlite: """
                INSERT INTO accounts (account_key, account_id, name, created_at, next_device_key, next_record_order) VALUES (1, 'acc', 'A', 1000, 3, 2);
                INSERT INTO devices (account_key, device_key, device_id, name, created_at, object_count) VALUES (1, 1, 'mac', 'Mac', 2000, 1);
                INSERT INTO devices (account_key, device_key, device_id, name, created_at, object_count) VALUES (1, 2, 'pc', 'PC', 2000, 1);
                INSERT INTO records (account_key, guid, type, fingerprint, created_order, created_at) VALUES (1, '\(Self.guid)', 1, '\(contentFingerprint(1))', 1, 3000);
                INSERT INTO objects (account_key, device_key, local_id, type, fingerprint, media_type, creation_date, has_adjustments, is_favorite, members, app_created, record_guid)
                    VALUES (1, 1, 'MAC-BEACH', 1, '\(contentFingerprint(1))', 'image', '2024-05-01T10:00:00.5+02:00', 0, 0, '', 0, '\(Self.guid)');
                INSERT INTO objects (account_key, device_key, local_id, type, fingerprint, media_type, creation_date, has_adjustments, is_favorite, members, app_created, record_guid)
                    VALUES (1, 2, 'PC-BEACH', 1, '\(contentFingerprint(1))', 'image', '2024-05-01T08:00:00Z', 0, 0, '', 0, '\(Self.guid)');
            """, postgres: """
            INSERT INTO accounts (account_id, name, created_at, next_record_order) VALUES ('acc', 'A', 1000, 2);
            INSERT INTO devices (account_id, device_id, name, created_at, object_count) VALUES ('acc', 'mac', 'Mac', 2000, 1);
            INSERT INTO devices (account_id, device_id, name, created_at, object_count) VALUES ('acc', 'pc', 'PC', 2000, 1);
            INSERT INTO records (account_id, guid, type, fingerprint, created_order, created_at) VALUES ('acc', '\(Self.guid)', 1, '\(contentFingerprint(1))', 1, 3000);
            INSERT INTO objects (account_id, device_id, local_id, type, fingerprint, media_type, creation_date, has_adjustments, is_favorite, members, app_created, record_guid)
                VALUES ('acc', 'mac', 'MAC-BEACH', 1, '\(contentFingerprint(1))', 'image', '2024-05-01T10:00:00.5+02:00', false, false, '', false, '\(Self.guid)');
            INSERT INTO objects (account_id, device_id, local_id, type, fingerprint, media_type, creation_date, has_adjustments, is_favorite, members, app_created, record_guid)
                VALUES ('acc', 'pc', 'PC-BEACH', 1, '\(contentFingerprint(1))', 'image', '2024-05-01T08:00:00Z', false, false, '', false, '\(Self.guid)');
            """), Self.expectMigrated)
    }


    static func expectMigrated(_ store: any ConcordStore) throws {
        for indexBytes in [0, 64 << 20] {   // from storage, and from the in-memory index
            var configuration = DomainConfiguration()
            configuration.mappingIndexBytes = indexBytes
            let service = try ConcordService(store: store, configuration: configuration)
            let mac = DeviceRef(accountID: "acc", deviceID: "mac"), pc = DeviceRef(accountID: "acc", deviceID: "pc")
            let record = "\(Self.guid):001:\(contentFingerprint(1))"
            // The old links answer both ways.
            #expect(try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["MAC-BEACH"], device: mac).map(\.result) == [.found(record)])
            #expect(try service.mapping.localIdentifiers(forCloudIdentifiers: [record], device: pc).map(\.result) == [.found("PC-BEACH")])
            let stored = try service.library.object(localIdentifier: "MAC-BEACH", device: mac)
            #expect(stored.fingerprint == contentFingerprint(1) && stored.photoKitCloudIdentifier == nil)
            #expect(try service.mapping.status(device: mac) == LibraryStatus(objects: 1, withFingerprint: 1, withKey: 0, linked: 1, wanted: 0))
        }
        // The backfilled creation seconds drive the wanted rule: a phone's fingerprint-less photo of
        // the same instant (another offset) is wanted, one a second later is not.
        let service = try ConcordService(store: store, configuration: DomainConfiguration())
        let phone = try service.accounts.createDevice(accountID: "acc", name: "phone", platform: nil)
        let p = DeviceRef(accountID: "acc", deviceID: phone.deviceID)
        try service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: [
            .asset("P-SAME", fingerprint: "", creationDate: "2024-05-01T03:00:00-05:00", photoKitCloudIdentifier: "K1:001:"),
            .asset("P-LATER", fingerprint: "", creationDate: "2024-05-01T08:00:01Z", photoKitCloudIdentifier: "K2:001:"),
        ])), device: p)
        #expect(try service.mapping.wanted(device: p, after: nil, limit: 10).objects.map(\.localIdentifier) == ["P-SAME"])
        // An old object takes a key; the record carries it from then on and a new device finds it by key.
        let mac = DeviceRef(accountID: "acc", deviceID: "mac")
        try service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: [
            .asset("MAC-BEACH", fingerprint: "", creationDate: "2024-05-01T10:00:00.5+02:00", photoKitCloudIdentifier: "BEACH:001:h"),
        ])), device: mac)
        let ipad = try service.accounts.createDevice(accountID: "acc", name: "ipad", platform: nil)
        let i = DeviceRef(accountID: "acc", deviceID: ipad.deviceID)
        try service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: [.asset("I-BEACH", fingerprint: "", photoKitCloudIdentifier: "BEACH:001:x")])), device: i)
        #expect(try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["I-BEACH"], device: i).map(\.result) == [.found("\(Self.guid):001:\(contentFingerprint(1))")])
    }
}
