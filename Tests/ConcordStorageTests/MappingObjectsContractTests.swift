import ConcordDomain
@testable import ConcordStorage
import ConcordTestSupport
import Foundation
import Testing

/// `mappingObjects(_:localIdentifiers:)` on every engine: the fields the mapping rules read and the
/// links are those of `objects(_:localIdentifiers:)`, and links set after it in the same transaction
/// land on the objects it found unlinked.
@Suite struct MappingObjectsContractTests {
    static func guid(_ n: Int) -> String { String(format: "0C44A1D2-0000-4000-8000-%012X", n) }

    @Test(arguments: TestEngine.available) func mappingObjectsMatchTheObjectsTheRulesRead(_ engine: TestEngine) throws {
        let db = try TestDatabase(engine)
        let device = DeviceRef(accountID: "acc", deviceID: "dev")
        let objects: [LibraryObject] = [
            .asset("a-1", fingerprint: "fp-1", creationDate: "2024-05-01T10:00:00Z", isFavorite: true, photoKitCloudIdentifier: "A1:C1:H1"),
            .asset("a-2", fingerprint: "fp-2"),
            .asset("a-3", fingerprint: ""),
            .assetCollection("album", fingerprint: "fp-album", title: "Trip", assets: ["a-1", "a-2"], photoKitCloudIdentifier: "A9:C9:H9"),
        ]
        try db.store.writeServer { tx in try tx.insertAccount(accountID: "acc", name: "n", tokenHash: [1], createdAt: Date()) }
        try db.store.write(account: "acc") { tx in
            try tx.insertDevice(device, name: "d", platform: nil, tokenHash: [2], createdAt: Date())
            try tx.putObjects(device, objects.map { StoredObject(object: $0, link: nil) })
            try tx.insertRecords([CloudRecord(guid: Self.guid(1), type: .asset, fingerprint: "fp-1")], createdAt: Date())
            try tx.setLinks(device, [("a-1", Self.guid(1))])
        }
        let ids = objects.map(\.localIdentifier) + ["missing"]
        let (full, mapping) = try db.store.write(account: "acc") { tx in
            (try tx.objects(device, localIdentifiers: ids), try tx.mappingObjects(device, localIdentifiers: ids))
        }
        func rulesRead(_ s: [StoredObject]) -> [String: [String?]] {
            Dictionary(uniqueKeysWithValues: s.map { o in
                (o.object.localIdentifier, [String(o.object.type.rawValue), o.object.fingerprint, o.object.photoKitCloudIdentifier,
                                            o.object.key.map { "\($0)" }, o.link.map { "\($0)" }])
            })
        }
        #expect(mapping.count == objects.count)
        #expect(rulesRead(mapping) == rulesRead(full))
        #expect(mapping.first { $0.object.localIdentifier == "a-1" }?.link == CloudRecord(guid: Self.guid(1), type: .asset, fingerprint: "fp-1"))

        // Links set after the lookup: new records and existing ones, on the objects found unlinked.
        try db.store.write(account: "acc") { tx in
            let found = try tx.mappingObjects(device, localIdentifiers: ["a-2", "a-3", "album"])
            #expect(found.allSatisfy { $0.link == nil })
            try tx.insertRecords([CloudRecord(guid: Self.guid(2), type: .asset, fingerprint: "fp-2"),
                                  CloudRecord(guid: Self.guid(3), type: .assetCollection, fingerprint: "fp-album")], createdAt: Date())
            try tx.setLinks(device, [("a-2", Self.guid(2)), ("album", Self.guid(3))])
        }
        let after = try db.store.read(account: "acc") { tx in try tx.objects(device, localIdentifiers: ["a-2", "a-3", "album"]) }
        #expect(Dictionary(uniqueKeysWithValues: after.map { ($0.object.localIdentifier, $0.link?.guid) })
                == ["a-2": Self.guid(2), "a-3": nil, "album": Self.guid(3)])
        #expect(try db.store.read(account: "acc") { tx in try tx.objects(device, localIdentifiers: ["album"]) }.first?.object.members == ["a-1", "a-2"])
    }
}
