import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

@Suite struct LibraryTests {
    @Test(arguments: TestEngine.available) func insertUpdateUnchangedDeleteAreCountedAcrossTypes(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        let first = try env.service.library.applyChanges(LibraryChangeRequest(
            assets: .init(upsert: [.asset("a1", fingerprint: fp(1)), .asset("a2", fingerprint: fp(2))]),
            assetCollections: .init(upsert: [.assetCollection("c1", fingerprint: fp(10), title: "Trip", assets: ["a2", "a1"])]),
            collectionLists: .init(upsert: [.collectionList("l1", fingerprint: fp(20), collections: ["c1"])])), device: d)
        #expect((first.inserted, first.updated, first.deleted, first.unchanged) == (4, 0, 0, 0))
        let second = try env.service.library.applyChanges(LibraryChangeRequest(
            assets: .init(upsert: [.asset("a1", fingerprint: fp(1)), .asset("a2", fingerprint: fp(2), isFavorite: true)], delete: ["ghost"]),
            assetCollections: .init(delete: ["c1"])), device: d)
        // a2 updated, and l1 too: the deleted album c1 leaves the folder listing it.
        #expect((second.inserted, second.updated, second.deleted, second.unchanged) == (0, 2, 1, 1))
        #expect(try env.service.library.object(localIdentifier: "a2", device: d).isFavorite)
        expectErrorNamed("notFound") { try env.service.library.object(localIdentifier: "c1", device: d) }
        let stored = try env.service.library.object(localIdentifier: "l1", device: d)
        #expect(stored == .collectionList("l1", fingerprint: fp(20), collections: []))
    }

    @Test(arguments: TestEngine.available) func storedObjectKeepsEveryField(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        let asset = LibraryObject.asset("x/L0/001", fingerprint: fp(1), mediaType: .video, creationDate: "2024-05-01T12:00:00Z",
                                        modificationDate: "2024-05-02T12:00:00.5+02:00", hasAdjustments: true, isFavorite: true)
        let album = LibraryObject.assetCollection("y/L0/040", fingerprint: fp(2), title: "Ünïcode \"title\"", assets: ["x/L0/001", "x/L0/001"], appCreated: true)
        try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(upsert: [asset]), assetCollections: .init(upsert: [album])), device: d)
        #expect(try env.service.library.object(localIdentifier: "x/L0/001", device: d) == asset)
        #expect(try env.service.library.object(localIdentifier: "y/L0/040", device: d) == album)
    }

    @Test(arguments: TestEngine.available) func identicalResendIsANoOpWithoutHistoryEntry(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        let r1 = try env.put(d, assets: [("a1", fp(1))])
        let r2 = try env.put(d, assets: [("a1", fp(1))])
        #expect((r2.inserted, r2.updated, r2.deleted, r2.unchanged) == (0, 0, 0, 1))
        #expect(r2.changeToken == r1.changeToken)
        let since = try env.service.history.changes(since: r1.changeToken, limit: nil, device: d)
        #expect(since.changes.isEmpty)
    }

    @Test(arguments: TestEngine.available) func identifierTwiceInOneRequestIs400(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        expectErrorNamed("badRequest") { try env.put(d, assets: [("a1", fp(1)), ("a1", fp(2))]) }
        expectErrorNamed("badRequest") {
            try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(upsert: [.asset("a1", fingerprint: fp(1))], delete: ["a1"])), device: d)
        }
        expectErrorNamed("badRequest") {
            try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(upsert: [.asset("x", fingerprint: fp(1))]),
                                                              assetCollections: .init(upsert: [.assetCollection("x", fingerprint: fp(2))])), device: d)
        }
        expectErrorNamed("badRequest") {
            try env.service.library.replaceLibrary(LibrarySnapshot(objects: [.asset("a", fingerprint: fp(1)), .asset("a", fingerprint: fp(1))]), reset: false, device: d)
        }
        // Nothing was stored by the failed requests.
        expectErrorNamed("notFound") { try env.service.library.object(localIdentifier: "a1", device: d) }
    }

    @Test(arguments: TestEngine.available) func typeIsImmutable(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        try env.put(d, assets: [("x", fp(1))])
        expectErrorNamed("badRequest") {
            try env.service.library.applyChanges(LibraryChangeRequest(assetCollections: .init(upsert: [.assetCollection("x", fingerprint: fp(1))])), device: d)
        }
        expectErrorNamed("badRequest") {
            try env.service.library.replaceLibrary(LibrarySnapshot(objects: [.assetCollection("x", fingerprint: fp(1))]), reset: false, device: d)
        }
        expectErrorNamed("badRequest") {
            try env.service.library.applyChanges(LibraryChangeRequest(assetCollections: .init(delete: ["x"])), device: d)
        }
        #expect(try env.service.library.object(localIdentifier: "x", device: d).type == .asset)
        // Once deleted, the identifier may come back with another type.
        try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(delete: ["x"])), device: d)
        try env.service.library.applyChanges(LibraryChangeRequest(assetCollections: .init(upsert: [.assetCollection("x", fingerprint: fp(1))])), device: d)
        #expect(try env.service.library.object(localIdentifier: "x", device: d).type == .assetCollection)
    }

    @Test(arguments: TestEngine.available) func invalidValuesAre400NamingTheField(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        expectError(.badRequest(message: "fingerprint of a must be base64url without padding of 16 to 64 bytes.", field: "assets.upsert.fingerprint")) {
            try env.put(d, assets: [("a", "short")])
        }
        expectErrorNamed("badRequest") { try env.put(d, assets: [("", fp(1))]) }
        expectErrorNamed("badRequest") { try env.put(d, assets: [(String(repeating: "x", count: 256), fp(1))]) }
        expectErrorNamed("badRequest") {
            try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(upsert: [.asset("a", fingerprint: fp(1), creationDate: "yesterday")])), device: d)
        }
        expectErrorNamed("badRequest") { try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(delete: ["bad\u{1}id"])), device: d) }
    }

    @Test(arguments: TestEngine.available) func albumListingAnUnknownAssetIs422NamingIt(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        try env.put(d, assets: [("a1", fp(1))])
        expectError(.unprocessable(message: "c1 lists asset zz, which the library lacks.",
                                   details: [DetailField("localIdentifier", .string("c1")), DetailField("missing", .array([.string("zz")]))])) {
            try env.service.library.applyChanges(LibraryChangeRequest(assetCollections: .init(upsert: [.assetCollection("c1", fingerprint: fp(9), assets: ["a1", "zz"])])), device: d)
        }
        // An asset deleted in the same request, or an album listed as an asset, is missing too.
        expectErrorNamed("unprocessable") {
            try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(delete: ["a1"]),
                                                              assetCollections: .init(upsert: [.assetCollection("c1", fingerprint: fp(9), assets: ["a1"])])), device: d)
        }
        expectErrorNamed("unprocessable") {
            try env.service.library.applyChanges(LibraryChangeRequest(assetCollections: .init(upsert: [
                .assetCollection("c0", fingerprint: fp(8)), .assetCollection("c1", fingerprint: fp(9), assets: ["c0"])])), device: d)
        }
        // Assets inserted in the same request count.
        let ok = try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(upsert: [.asset("a2", fingerprint: fp(2))]),
                                                                   assetCollections: .init(upsert: [.assetCollection("c1", fingerprint: fp(9), assets: ["a2", "a1"])])), device: d)
        #expect(ok.inserted == 2)
        expectErrorNamed("unprocessable") {
            try env.service.library.replaceLibrary(LibrarySnapshot(objects: [.assetCollection("c1", fingerprint: fp(9), assets: ["a1"])]), reset: false, device: d)
        }
    }

    @Test(arguments: TestEngine.available) func putLibraryWorksOutTheDifference(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        try env.put(d, assets: [("a1", fp(1)), ("a2", fp(2)), ("a3", fp(3))])
        let t0 = try env.service.history.currentChangeToken(device: d)
        let r = try env.service.library.replaceLibrary(LibrarySnapshot(objects: [
            .asset("a1", fingerprint: fp(1)), .asset("a2", fingerprint: fp(22)), .asset("a4", fingerprint: fp(4)),
        ]), reset: false, device: d)
        #expect((r.inserted, r.updated, r.deleted, r.unchanged) == (1, 1, 1, 1))
        let page = try env.service.history.changes(since: t0, limit: nil, device: d)
        #expect(page.changes.count == 1)
        #expect(page.changes[0].details == ChangeDetails(assets: ChangeLists(inserted: ["a4"], updated: ["a2"], deleted: ["a3"])))
        // Same snapshot again: nothing changes, no entry.
        let again = try env.service.library.replaceLibrary(LibrarySnapshot(objects: [
            .asset("a1", fingerprint: fp(1)), .asset("a2", fingerprint: fp(22)), .asset("a4", fingerprint: fp(4)),
        ]), reset: false, device: d)
        #expect((again.inserted, again.updated, again.deleted, again.unchanged) == (0, 0, 0, 3))
        #expect(again.changeToken == r.changeToken)
        #expect(try env.service.accounts.listDevices(accountID: d.accountID)[0].objectCount == 3)
    }

    @Test(arguments: TestEngine.available) func listObjectsPagesInByteOrder(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        // "Z" < "a" < "é" in UTF-8 byte order.
        try env.put(d, assets: [("é", fp(1)), ("a", fp(2)), ("Z", fp(3)), ("b", fp(4))])
        try env.service.library.applyChanges(LibraryChangeRequest(assetCollections: .init(upsert: [.assetCollection("AA", fingerprint: fp(5))])), device: d)
        let p1 = try env.service.library.listObjects(type: .asset, after: nil, limit: 2, device: d)
        #expect(p1.objects.map(\.localIdentifier) == ["Z", "a"])
        #expect(p1.next == "a")
        let p2 = try env.service.library.listObjects(type: .asset, after: p1.next, limit: 2, device: d)
        #expect(p2.objects.map(\.localIdentifier) == ["b", "é"])
        #expect(p2.next == nil)
        #expect(try env.service.library.listObjects(type: .assetCollection, after: nil, limit: nil, device: d).objects.map(\.localIdentifier) == ["AA"])
        expectErrorNamed("badRequest") { try env.service.library.listObjects(type: .asset, after: nil, limit: 0, device: d) }
        expectErrorNamed("badRequest") { try env.service.library.listObjects(type: .asset, after: nil, limit: 10_001, device: d) }
    }

    @Test(arguments: TestEngine.available) func changeRequestOverMaxBatchIsBatchTooLargeAndStoresNothing(_ engine: TestEngine) throws {
        let env = try TestEnv(engine) { $0.maxBatch = 3 }
        let d = try env.device()
        let tooMany = LibraryChangeRequest(
            assets: .init(upsert: [.asset("a", fingerprint: fp(1)), .asset("b", fingerprint: fp(2)), .asset("c", fingerprint: fp(3))], delete: ["x"]))
        expectErrorNamed("batchTooLarge") { try env.service.library.applyChanges(tooMany, device: d) }
        #expect(try env.service.library.listObjects(type: .asset, after: nil, limit: nil, device: d).objects.isEmpty)
        let enough = LibraryChangeRequest(assets: .init(upsert: [.asset("a", fingerprint: fp(1))], delete: ["x", "y"]))
        #expect(try env.service.library.applyChanges(enough, device: d).inserted == 1)
    }

    @Test(arguments: TestEngine.available) func anotherDevicesObjectsAreInvisible(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        try env.put(a, assets: [("a1", fp(1))])
        expectErrorNamed("notFound") { try env.service.library.object(localIdentifier: "a1", device: b) }
        #expect(try env.cloud(b, ["a1"]) == [.error(.identifierNotFound(limitedLibrary: false))])
    }
}

/// PhotoKit semantics: deleting an asset removes it from every album, a collection from every folder.
@Suite struct MembershipCascadeTests {
    @Test(arguments: TestEngine.available) func deletedAssetLeavesEveryAlbumInTheSameChange(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        let other = try env.device("Other")
        let setup = LibraryChangeRequest(
            assets: .init(upsert: [.asset("a1", fingerprint: fp(1)), .asset("a2", fingerprint: fp(2)), .asset("a3", fingerprint: fp(3))]),
            assetCollections: .init(upsert: [
                .assetCollection("c1", fingerprint: fp(10), title: "Trip", assets: ["a1", "a2", "a1", "a3"], appCreated: true),
                .assetCollection("c2", fingerprint: fp(11), assets: ["a3", "a2"]),
                .assetCollection("c3", fingerprint: fp(12), assets: ["a3"]),
            ]))
        try env.service.library.applyChanges(setup, device: d)
        try env.service.library.applyChanges(setup, device: other)
        let linked = try env.cloudID(d, "c1")
        let t0 = try env.service.history.currentChangeToken(device: d)

        let r = try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(delete: ["a1", "a2"])), device: d)
        #expect((r.inserted, r.updated, r.deleted, r.unchanged) == (0, 2, 2, 0))
        // Order and duplicates of the remaining members are kept; every other field too.
        #expect(try env.service.library.object(localIdentifier: "c1", device: d)
            == .assetCollection("c1", fingerprint: fp(10), title: "Trip", assets: ["a3"], appCreated: true))
        #expect(try env.service.library.object(localIdentifier: "c2", device: d) == .assetCollection("c2", fingerprint: fp(11), assets: ["a3"]))
        #expect(try env.service.library.object(localIdentifier: "c3", device: d) == .assetCollection("c3", fingerprint: fp(12), assets: ["a3"]))
        // The album keeps its link: its content (fingerprint) did not change.
        #expect(try env.cloudID(d, "c1") == linked)
        // One history entry listing the albums as updated.
        let page = try env.service.history.changes(since: t0, limit: nil, device: d)
        #expect(page.changes.map(\.changeToken) == [r.changeToken])
        #expect(page.changes.first?.details == ChangeDetails(assets: ChangeLists(deleted: ["a1", "a2"]),
                                                            assetCollections: ChangeLists(updated: ["c1", "c2"])))
        #expect(try env.service.accounts.listDevices(accountID: d.accountID).first { $0.deviceID == d.deviceID }?.objectCount == 4)
        // Another device's albums are untouched.
        #expect(try env.service.library.object(localIdentifier: "c1", device: other).members == ["a1", "a2", "a1", "a3"])
        // Deleting an asset no album lists, or an unknown one, changes no album.
        let t1 = try env.service.history.currentChangeToken(device: d)
        try env.put(d, assets: [("a4", fp(4))])
        let lone = try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(delete: ["a4", "ghost"])), device: d)
        #expect((lone.updated, lone.deleted) == (0, 1))
        #expect(try env.service.history.changes(since: t1, limit: nil, device: d).changes.last?.details == ChangeDetails(assets: ChangeLists(deleted: ["a4"])))
    }

    @Test(arguments: TestEngine.available) func albumUpsertedWithTheDeleteKeepsItsOwnList(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        try env.service.library.applyChanges(LibraryChangeRequest(
            assets: .init(upsert: [.asset("a1", fingerprint: fp(1)), .asset("a2", fingerprint: fp(2))]),
            assetCollections: .init(upsert: [.assetCollection("c1", fingerprint: fp(10), assets: ["a1", "a2"]),
                                             .assetCollection("c2", fingerprint: fp(11), assets: ["a1"])])), device: d)
        // The upsert still lists the deleted asset: 422 naming it, and nothing is applied.
        expectError(.unprocessable(message: "c1 lists asset a1, which the library lacks.",
                                   details: [DetailField("localIdentifier", .string("c1")), DetailField("missing", .array([.string("a1")]))])) {
            try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(delete: ["a1"]),
                                                              assetCollections: .init(upsert: [.assetCollection("c1", fingerprint: fp(10), assets: ["a2", "a1"])])), device: d)
        }
        #expect(try env.service.library.object(localIdentifier: "c2", device: d).members == ["a1"])
        // The upsert's own list wins (here reordered); the other album is cascaded. Both count once.
        let t0 = try env.service.history.currentChangeToken(device: d)
        let r = try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(delete: ["a1"]),
                                                                  assetCollections: .init(upsert: [.assetCollection("c1", fingerprint: fp(10), title: "New", assets: ["a2"])])), device: d)
        #expect((r.inserted, r.updated, r.deleted, r.unchanged) == (0, 2, 1, 0))
        #expect(try env.service.library.object(localIdentifier: "c1", device: d) == .assetCollection("c1", fingerprint: fp(10), title: "New", assets: ["a2"]))
        #expect(try env.service.library.object(localIdentifier: "c2", device: d).members == [])
        #expect(try env.service.history.changes(since: t0, limit: nil, device: d).changes.first?.details
            == ChangeDetails(assets: ChangeLists(deleted: ["a1"]), assetCollections: ChangeLists(updated: ["c1", "c2"])))
        // An album deleted with its asset is only deleted.
        try env.put(d, assets: [("a3", fp(3))])
        try env.service.library.applyChanges(LibraryChangeRequest(assetCollections: .init(upsert: [.assetCollection("c3", fingerprint: fp(12), assets: ["a3"])])), device: d)
        let both = try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(delete: ["a3"]), assetCollections: .init(delete: ["c3"])), device: d)
        #expect((both.updated, both.deleted) == (0, 2))
    }

    @Test(arguments: TestEngine.available) func deletedCollectionLeavesEveryFolder(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        try env.service.library.applyChanges(LibraryChangeRequest(
            assets: .init(upsert: [.asset("a1", fingerprint: fp(1))]),
            assetCollections: .init(upsert: [.assetCollection("c1", fingerprint: fp(10), assets: ["a1"]),
                                             .assetCollection("c2", fingerprint: fp(11))]),
            collectionLists: .init(upsert: [.collectionList("inner", fingerprint: fp(20), collections: ["c1"]),
                                            .collectionList("outer", fingerprint: fp(21), title: "Years", collections: ["inner", "c1", "c2"])])), device: d)
        let t0 = try env.service.history.currentChangeToken(device: d)
        let r = try env.service.library.applyChanges(LibraryChangeRequest(assetCollections: .init(delete: ["c1"])), device: d)
        #expect((r.inserted, r.updated, r.deleted, r.unchanged) == (0, 2, 1, 0))
        #expect(try env.service.library.object(localIdentifier: "inner", device: d).members == [])
        #expect(try env.service.library.object(localIdentifier: "outer", device: d)
            == .collectionList("outer", fingerprint: fp(21), title: "Years", collections: ["inner", "c2"]))
        #expect(try env.service.history.changes(since: t0, limit: nil, device: d).changes.first?.details
            == ChangeDetails(assetCollections: ChangeLists(deleted: ["c1"]), collectionLists: ChangeLists(updated: ["inner", "outer"])))
        // A deleted folder leaves the folders listing it too.
        let nested = try env.service.library.applyChanges(LibraryChangeRequest(collectionLists: .init(delete: ["inner"])), device: d)
        #expect((nested.updated, nested.deleted) == (1, 1))
        #expect(try env.service.library.object(localIdentifier: "outer", device: d).members == ["c2"])
    }

    /// The scan pages through the device's albums: an album past the first page is found too.
    @Test(arguments: TestEngine.available) func cascadeReachesAlbumsBeyondOneScanPage(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        let n = 10_005   // past one scan page (ConcordService.containerScanPage, 10 000)
        var albums: [LibraryObject] = [.asset("a1", fingerprint: fp(1)), .asset("a2", fingerprint: fp(2))]
        for i in 0..<n { albums.append(.assetCollection("c\(i)", fingerprint: fp(100 + i), assets: i % 1000 == 7 || i == n - 1 ? ["a1", "a2"] : ["a2"])) }
        try env.service.library.replaceLibrary(LibrarySnapshot(objects: albums), reset: false, device: d)
        let r = try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(delete: ["a1"])), device: d)
        let expected = (0..<n).filter { $0 % 1000 == 7 || $0 == n - 1 }.map { "c\($0)" }
        #expect(r.updated == expected.count)
        for id in expected { #expect(try env.service.library.object(localIdentifier: id, device: d).members == ["a2"]) }
    }
}

@Suite struct LargeLibraryTests {
    /// A whole-library PUT of many objects: inserted, then updated and deleted in bulk. (Its time,
    /// at a million objects, is `Benchmarks/run scale`.)
    @Test(arguments: TestEngine.available) func largePutLibraryInsertsUpdatesAndDeletesInBulk(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        let n = 10_000
        let r1 = try env.service.library.replaceLibrary(LibrarySnapshot(objects: (0..<n).map { .asset("id-\($0)", fingerprint: fp($0)) }), reset: false, device: d)
        #expect(r1.inserted == n)
        // Half updated, a quarter deleted, the rest unchanged.
        var next: [LibraryObject] = []
        for i in 0..<n where i % 4 != 3 { next.append(.asset("id-\(i)", fingerprint: fp(i), isFavorite: i % 2 == 0)) }
        let r2 = try env.service.library.replaceLibrary(LibrarySnapshot(objects: next), reset: false, device: d)
        #expect((r2.inserted, r2.updated, r2.deleted, r2.unchanged) == (0, n / 2, n / 4, n / 4))
        let page = try env.service.history.changes(since: r1.changeToken, limit: nil, device: d)
        #expect(page.changes.first?.details?.assets.updated.count == n / 2)
    }
}
