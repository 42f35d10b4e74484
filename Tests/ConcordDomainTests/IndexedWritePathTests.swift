@testable import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

/// What the write path takes from the mapping index (`ServiceCore.mappingObjects`,
/// `ServiceCore.unlinkedRecords`): from the index when it holds the account at the transaction's
/// version, and then what storage reads; from storage once the transaction has changed the mapping
/// (the index knows nothing of what is not committed).
@Suite struct IndexedWritePathTests {
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

    /// Records by content: the index leaves out the contents no record carries, and what storage
    /// finds for the rest is what it finds for all of them.
    @Test(arguments: TestEngine.available) func recordsByContentAreAskedOnlyForContentsRecordsCarry(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        try env.put(a, assets: [("k1/L0/001", fp(1)), ("k2/L0/001", fp(2))])
        try env.put(b, assets: [("m1/L0/001", fp(1)), ("m3/L0/001", fp(3))])
        _ = try env.cloudID(a, "k1/L0/001")   // a record of content 1; content 2 has none
        let contents = [1, 2, 3, 9].map { ContentKey(type: .asset, fingerprint: fp($0)) }
        let (filtered, viaIndex, fromStorage) = try env.service.core.write(account: env.account.accountID, idempotency: nil) { tx in
            let version = try tx.mappingVersion()
            let filtered = try env.service.core.index?.readIfCurrent(account: env.account.accountID, version: version) { reads in
                try (reads as? any WritePathReads)?.contentsSomeRecordCarries(contents)
            }
            return (filtered, try env.service.core.unlinkedRecords(tx, b, matching: contents), try tx.unlinkedRecords(b, matching: contents))
        }
        #expect(filtered == .some(.some([ContentKey(type: .asset, fingerprint: fp(1))])))
        #expect(viaIndex.map(\.guid) == fromStorage.map(\.guid))
        #expect(viaIndex.count == 1)
    }

    /// An index loaded from the tables knows which contents records carry: device two's photo of
    /// device one's content links to device one's record.
    @Test(arguments: TestEngine.available) func anIndexLoadedFromTheTablesFindsRecordsByContent(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        try env.put(a, assets: [("k1/L0/001", fp(1))])
        let cloud = try env.cloudID(a, "k1/L0/001")
        try env.put(b, assets: [("m1/L0/001", fp(1))])
        let restarted = try env.restartedService()
        let mapped = try restarted.mapping.cloudIdentifiers(forLocalIdentifiers: ["m1/L0/001"], device: b)
        #expect(mapped.map(\.result) == [.found(cloud)])
        #expect(restarted.mappingIndex?.statistics.loads == 1)
    }
}
