@testable import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

/// The write path's object reads (`ServiceCore.mappingObjects`): from the mapping index when it holds
/// the account at the transaction's version, and then the same objects storage reads; from storage
/// once the transaction has changed the mapping (the index knows nothing of what is not committed).
@Suite struct IndexedMappingObjectsTests {
    /// What the mapping rules read of each object, by local identifier.
    static func rulesRead(_ objects: [StoredObject]) -> [String: [String?]] {
        Dictionary(uniqueKeysWithValues: objects.map { o in
            (o.object.localIdentifier, [String(o.object.type.rawValue), o.object.fingerprint, o.object.key.map { "\($0)" }, o.link.map { "\($0)" }])
        })
    }

    @Test(arguments: TestEngine.available) func theIndexAnswersWhatStorageReads(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        try env.service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: [
            .asset("k1/L0/001", fingerprint: fp(1), photoKitCloudIdentifier: "AK1:001:H1"),
            .asset("k2/L0/001", fingerprint: fp(2)),
            .asset("k3/L0/001", fingerprint: ""),
        ])), device: a)
        try env.put(b, assets: [("m1/L0/001", fp(1))])
        _ = try env.cloudID(a, "k1/L0/001")   // a record, linked on a; the index holds the account
        let ids = ["k1/L0/001", "k2/L0/001", "k3/L0/001", "missing/L0/001"]
        let (answered, stored, indexed) = try env.service.core.write(account: env.account.accountID, idempotency: nil) { tx in
            (try env.service.core.mappingObjects(tx, a, localIdentifiers: ids), try tx.mappingObjects(a, localIdentifiers: ids), tx.prefersIndexedMappingObjects)
        }
        #expect(answered.count == 3)
        // The index spells the PhotoKit cloud identifier from the key alone: so it answered.
        #expect(answered.first { $0.object.localIdentifier == "k1/L0/001" }?.object.photoKitCloudIdentifier == (indexed ? "AK1:001:" : "AK1:001:H1"))
        #expect(Self.rulesRead(answered) == Self.rulesRead(stored))
        #expect(answered.first { $0.object.localIdentifier == "k1/L0/001" }?.object.key == ObjectKey(type: .asset, a: "AK1"))
        #expect(answered.first { $0.object.localIdentifier == "k1/L0/001" }?.link != nil)
    }

    @Test(arguments: TestEngine.available) func afterAChangeInTheTransactionStorageAnswers(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        try env.put(d, assets: [("x/L0/001", fp(1)), ("y/L0/001", fp(2))])
        let guid = try #require(CloudIdentifier(parsing: try env.cloudID(d, "x/L0/001"))).guid
        let found = try env.service.core.write(account: env.account.accountID, idempotency: nil) { tx in
            try tx.dropLinks(d, guids: [guid])   // not committed: only storage knows
            return try env.service.core.mappingObjects(tx, d, localIdentifiers: ["x/L0/001"])
        }
        #expect(found.count == 1 && found[0].link == nil)
    }
}
