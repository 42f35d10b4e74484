@testable import ConcordDomain
@testable import ConcordStorage
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
        let (answered, stored) = try env.service.core.write(account: env.account.accountID, idempotency: nil) { tx in
            (try env.service.core.mappingObjects(tx, a, localIdentifiers: ids), try tx.mappingObjects(a, localIdentifiers: ids))
        }
        #expect(answered.count == 3)
        // The index spells the PhotoKit cloud identifier from the key alone: so it answered (on
        // PostgreSQL too: it loaded the objects from the tables, so it knows their numbers).
        #expect(answered.first { $0.object.localIdentifier == "k1/L0/001" }?.object.photoKitCloudIdentifier == "AK1:001:")
        #expect(Self.rulesRead(answered) == Self.rulesRead(stored))
        #expect(answered.first { $0.object.localIdentifier == "k1/L0/001" }?.object.key == ObjectKey(type: .asset, a: "AK1"))
        #expect(answered.first { $0.object.localIdentifier == "k1/L0/001" }?.link != nil)
    }

    /// Which identifiers a device has (`WritePathReads.identifiersPresent`, what a change batch asks
    /// storage about): the index answers as storage finds, by bytes (an NFD spelling is another
    /// identifier), albums included; and a change batch that inserts, updates and deletes through it
    /// leaves what the storage path would.
    @Test(arguments: TestEngine.available) func theIndexSaysWhichIdentifiersTheDeviceHas(_ engine: TestEngine) throws {
        let (env, a, _) = try TestEnv.twoDevices(engine)
        let nfc = "caf\u{E9}/L0/001", nfd = "cafe\u{301}/L0/001"
        try env.service.library.applyChanges(LibraryChangeRequest(
            assets: .init(upsert: [.asset("k1/L0/001", fingerprint: fp(1)), .asset(nfc, fingerprint: fp(2))]),
            assetCollections: .init(upsert: [.assetCollection("c1", fingerprint: fp(10), title: "Trip", assets: ["k1/L0/001"])])), device: a)
        _ = try env.cloudID(a, "k1/L0/001")   // the index holds the account from here on
        let asked = ["missing/L0/001", nfd, "c1", "k1/L0/001", nfc]
        let (present, stored) = try env.service.core.write(account: env.account.accountID, idempotency: nil) { tx in
            let version = try tx.mappingVersion()
            let fromIndex = try env.service.core.index?.readIfCurrent(account: env.account.accountID, version: version) { reads in
                try (reads as? any WritePathReads)?.identifiersPresent(a, among: asked)
            }
            return (try #require(fromIndex ?? nil, "the index holds the account"), try tx.objects(a, localIdentifiers: asked))
        }
        #expect(present.map { Array($0.utf8) } == [Array("c1".utf8), Array("k1/L0/001".utf8), Array(nfc.utf8)])
        #expect(Set(stored.map { Array($0.object.localIdentifier.utf8) }) == Set(present.map { Array($0.utf8) }))
        // New, updated and deleted in one batch: new ones inserted without a lookup.
        let result = try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(
            upsert: [.asset("n1/L0/001", fingerprint: fp(3)), .asset(nfd, fingerprint: fp(4)), .asset("k1/L0/001", fingerprint: fp(5))],
            delete: [nfc])), device: a)
        #expect((result.inserted, result.updated, result.deleted) == (2, 1, 1))
        let after = try env.service.core.write(account: env.account.accountID, idempotency: nil) { tx in
            try tx.objects(a, localIdentifiers: ["n1/L0/001", nfd, "k1/L0/001", nfc])
        }
        #expect(Dictionary(uniqueKeysWithValues: after.map { (Array($0.object.localIdentifier.utf8), $0.object.fingerprint) })
                == [Array("n1/L0/001".utf8): fp(3), Array(nfd.utf8): fp(4), Array("k1/L0/001".utf8): fp(5)])
    }

    /// The index hands back the rows storage keeps (`StoredObject.storageRow`: SQLite's rowids,
    /// PostgreSQL's object numbers), whether it learned them from the writes that stored the objects
    /// (new ones, updated ones, a whole library's) or from a load of the tables.
    @Test(arguments: TestEngine.available) func theIndexHandsBackTheRowsStorageKeeps(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        try env.put(a, assets: [("k1/L0/001", fp(1)), ("k2/L0/001", fp(2))])
        _ = try env.cloudID(a, "k1/L0/001")   // the index holds the account from here on
        _ = try env.service.library.replaceLibrary(LibrarySnapshot(objects: [.asset("m1/L0/001", fingerprint: fp(1)), .asset("m2/L0/001", fingerprint: fp(3))]),
                                                   reset: false, device: b)
        try env.put(a, assets: [("k2/L0/001", fp(4)), ("k3/L0/001", fp(5))])
        let asked: [(DeviceRef, [String])] = [(a, ["k1/L0/001", "k2/L0/001", "k3/L0/001"]), (b, ["m1/L0/001", "m2/L0/001"])]
        func rows(_ service: ConcordService) throws -> (indexed: [[String: Int64?]], stored: [[String: Int64?]]) {
            try service.core.write(account: env.account.accountID, idempotency: nil) { tx in
                let version = try tx.mappingVersion()
                var indexed: [[String: Int64?]] = [], stored: [[String: Int64?]] = []
                for (d, ids) in asked {
                    let fromIndex = try service.core.index?.readIfCurrent(account: env.account.accountID, version: version) { reads in
                        try (reads as? any WritePathReads)?.mappingObjects(d, localIdentifiers: ids, withStorageRows: false)
                    }
                    let objects = try #require(fromIndex ?? nil, "the index holds the account")
                    indexed.append(Dictionary(uniqueKeysWithValues: objects.map { ($0.object.localIdentifier, $0.storageRow) }))
                    stored.append(Dictionary(uniqueKeysWithValues: try tx.mappingObjects(d, localIdentifiers: ids).map { ($0.object.localIdentifier, $0.storageRow) }))
                }
                return (indexed, stored)
            }
        }
        let written = try rows(env.service)
        #expect(written.stored.allSatisfy { $0.values.allSatisfy { $0 != nil } })
        #expect(written.indexed == written.stored)
        // The write path's objects carry their rows, from the index (which knows every one of them).
        let forLinks = try env.service.core.write(account: env.account.accountID, idempotency: nil) { tx in
            let version = try tx.mappingVersion()
            let fromIndex = try env.service.core.index?.readIfCurrent(account: env.account.accountID, version: version) { reads in
                try (reads as? any WritePathReads)?.mappingObjects(a, localIdentifiers: asked[0].1, withStorageRows: true)
            }
            #expect(fromIndex??.count == 3, "the index answers with the rows")
            return try env.service.core.mappingObjects(tx, a, localIdentifiers: asked[0].1)
        }
        #expect(forLinks.count == 3 && forLinks.allSatisfy { $0.storageRow != nil })
        let restarted = try env.restartedService()
        _ = try restarted.mapping.cloudIdentifiers(forLocalIdentifiers: ["k1/L0/001"], device: a)   // loads the account from the tables
        let loaded = try rows(restarted)
        #expect(loaded.indexed == loaded.stored)
        #expect(loaded.stored == written.stored)
    }

    /// A first mapping of `ids` on `device` through the write path (`MappingService.assignRecords`):
    /// how many links storage set by the rows it was given.
    static func firstMapping(_ service: ConcordService, _ device: DeviceRef, _ ids: [String]) throws -> Int? {
        try service.core.write(account: device.accountID, idempotency: nil) { tx in
            let assigned = try MappingService.assignRecords(tx, device: device, localIdentifiers: ids, core: service.core)
            #expect(assigned.count == ids.count)
            return (tx as? SQLiteTransaction)?.linksSetByRow ?? (tx as? PostgresTransaction)?.linksSetByNumber
        }
    }

    /// Objects written after the index loaded the account (a change batch's, a whole library's) are
    /// linked by their rows in their first mapping: their writes told the index the rows.
    @Test(arguments: TestEngine.available) func aFirstMappingOfObjectsWrittenAfterTheLoadLinksByRow(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        try env.put(a, assets: [("k1/L0/001", fp(1))])
        _ = try env.cloudID(a, "k1/L0/001")   // the index holds the account from here on
        try env.put(a, assets: [("k2/L0/001", fp(2)), ("k3/L0/001", fp(3))])
        _ = try env.service.library.replaceLibrary(LibrarySnapshot(objects: [.asset("m1/L0/001", fingerprint: fp(2)), .asset("m2/L0/001", fingerprint: fp(4))]),
                                                   reset: false, device: b)
        #expect(try Self.firstMapping(env.service, a, ["k2/L0/001", "k3/L0/001"]) == 2)
        #expect(try Self.firstMapping(env.service, b, ["m1/L0/001", "m2/L0/001"]) == 2)
        let mapped = try env.cloud(a, ["k2/L0/001"]) + env.cloud(b, ["m1/L0/001", "m2/L0/001"])
        #expect(mapped.allSatisfy { if case .found = $0 { true } else { false } })
        #expect(mapped[0] == mapped[1], "same content, same record")
    }

    /// Another instance sharing the PostgreSQL database learns the numbers of objects written
    /// through the first from the mapping log, and links them by number in their first mapping.
    @Test(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason)))
    func anotherInstanceLearnsTheNumbersFromTheMappingLog() throws {
        let env = try TestEnv(.postgres)
        let d = try env.device()
        let other = try env.anotherInstance()
        try env.put(d, assets: [("k1/L0/001", fp(1))])
        let k1 = try env.cloudID(d, "k1/L0/001")
        _ = try other.mapping.localIdentifiers(forCloudIdentifiers: [k1], device: d)   // its index loads the account
        let before = try #require(other.mappingIndex?.statistics)
        try env.put(d, assets: [("k2/L0/001", fp(2)), ("k3/L0/001", fp(3))])   // through the first instance
        _ = try other.mapping.localIdentifiers(forCloudIdentifiers: [k1], device: d)   // a read: its index catches up
        let after = try #require(other.mappingIndex?.statistics)
        #expect(after.logCatchUps == before.logCatchUps + 1 && after.loads == before.loads, "caught up from the log")
        let ids = ["k1/L0/001", "k2/L0/001", "k3/L0/001"]
        func rows(_ objects: [StoredObject]) -> [String: Int64?] {
            Dictionary(uniqueKeysWithValues: objects.map { ($0.object.localIdentifier, $0.storageRow) })
        }
        let (indexed, stored) = try other.core.write(account: env.account.accountID, idempotency: nil) { tx in
            let version = try tx.mappingVersion()
            let fromIndex = try other.core.index?.readIfCurrent(account: env.account.accountID, version: version) { reads in
                try (reads as? any WritePathReads)?.mappingObjects(d, localIdentifiers: ids, withStorageRows: true)
            }
            return ((fromIndex ?? nil).map(rows), rows(try tx.mappingObjects(d, localIdentifiers: ids)))
        }
        #expect(indexed != nil, "the index knows every object's number")
        #expect(indexed == stored && stored.count == 3)
        #expect(try Self.firstMapping(other, d, ["k2/L0/001", "k3/L0/001"]) == 2)
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
