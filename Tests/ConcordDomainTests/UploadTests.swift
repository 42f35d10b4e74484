import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordDomain

/// Uploads in parts in the service, on both engines: a commit is exactly the
/// `PUT /v1/library` of all parts together, applied as one change; a refused commit leaves the
/// library as it was and the upload open; an upload is its device's alone, expires, and is bounded.
@Suite struct UploadTests {
    /// An asset with a fingerprint of content `n`.
    static func asset(_ id: String, _ n: Int, favorite: Bool = false) -> LibraryObject {
        .asset(id, fingerprint: fp(n), isFavorite: favorite)
    }

    /// Sends `objects` as an upload of `parts` parts (round-robin, so every part holds a spread of
    /// identifiers) and commits it.
    static func upload(_ env: TestEnv, _ objects: [LibraryObject], parts: Int, reset: Bool = false, device: DeviceRef) throws -> LibraryChangeResult {
        let uploads = env.service.uploads
        let id = try uploads.open(device: device).uploadID
        var slices = [[LibraryObject]](repeating: [], count: parts)
        for (i, o) in objects.enumerated() { slices[i % parts].append(o) }
        for (i, slice) in slices.enumerated() {
            _ = try uploads.putPart(i + 1, of: id, LibrarySnapshot(objects: slice), device: device)
        }
        return try uploads.commit(id, reset: reset, device: device)
    }

    /// The whole stored library of `device`, in byte order.
    static func library(_ env: TestEnv, _ device: DeviceRef) throws -> [LibraryObject] {
        try env.service.library.listObjects(type: nil, after: nil, limit: 10_000, device: device).objects
    }

    /// The details of the device's last change (nil: unavailable).
    static func lastChange(_ env: TestEnv, _ device: DeviceRef, since: String) throws -> LibraryChange? {
        try env.service.history.changes(since: since, limit: nil, device: device).changes.last
    }

    /// Libraries before and after, across more than one page of the merge (`LibraryReplacement.pageSize`):
    /// a twin device takes the same library by `PUT /v1/library`, and both end with the same objects,
    /// counts and change details, which also match a model of the rules.
    @Test(arguments: TestEngine.available)
    func aCommitIsThePutOfAllPartsTogether(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let viaPut = try env.device("put"), viaUpload = try env.device("upload")
        let n = LibraryReplacement.pageSize * 2 + 321
        // Before: even identifiers; after: every third dropped, a few changed, odd ones added.
        let before = (0..<n).filter { $0 % 2 == 0 }.map { Self.asset(String(format: "a%05d", $0), $0) }
        var after: [LibraryObject] = []
        for i in 0..<n where i % 3 != 0 {
            after.append(Self.asset(String(format: "a%05d", i), i, favorite: i % 7 == 0))
        }
        after.append(.assetCollection("album", fingerprint: fp(-1), title: "Trip", assets: [after[0].localIdentifier, after[5].localIdentifier]))
        for device in [viaPut, viaUpload] {
            _ = try env.service.library.replaceLibrary(LibrarySnapshot(objects: before), reset: false, device: device)
        }
        let putToken = try env.service.history.currentChangeToken(device: viaPut)
        let uploadToken = try env.service.history.currentChangeToken(device: viaUpload)

        let put = try env.service.library.replaceLibrary(LibrarySnapshot(objects: after.reversed()), reset: false, device: viaPut)
        let upload = try Self.upload(env, after, parts: 7, device: viaUpload)

        // The model: kept ids are updated when their favourite flag changed, the rest unchanged.
        let beforeIDs = Set(before.map(\.localIdentifier)), afterIDs = Set(after.map(\.localIdentifier))
        let inserted = afterIDs.subtracting(beforeIDs).count, deleted = beforeIDs.subtracting(afterIDs).count
        let updated = after.filter { beforeIDs.contains($0.localIdentifier) && $0.isFavorite }.count
        let unchanged = afterIDs.intersection(beforeIDs).count - updated
        for result in [put, upload] {
            let counts: [Int] = [result.inserted, result.updated, result.deleted, result.unchanged]
            #expect(counts == [inserted, updated, deleted, unchanged])
        }
        let stored = try Self.library(env, viaUpload)
        #expect(stored == (try Self.library(env, viaPut)))
        #expect(stored.map(\.localIdentifier) == after.map(\.localIdentifier).sorted { $0.utf8Precedes($1) })
        let uploadDetails = try Self.lastChange(env, viaUpload, since: uploadToken)?.details
        let putDetails = try Self.lastChange(env, viaPut, since: putToken)?.details
        #expect(uploadDetails != nil && uploadDetails == putDetails)
        #expect(uploadDetails?.assets.deleted.count == deleted)
        // One change each.
        #expect(try env.service.history.changes(since: uploadToken, limit: nil, device: viaUpload).changes.count == 1)
    }

    /// What a commit may refuse: each refusal stores nothing and leaves the upload open; once the
    /// part is corrected the same upload commits.
    @Test(arguments: TestEngine.available)
    func aRefusedCommitChangesNothingAndTheUploadStaysOpen(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let device = try env.device()
        let uploads = env.service.uploads
        _ = try env.service.library.replaceLibrary(LibrarySnapshot(objects: [Self.asset("kept", 1), .assetCollection("box", fingerprint: fp(2))]),
                                                   reset: false, device: device)
        let token = try env.service.history.currentChangeToken(device: device)
        let libraryBefore = try Self.library(env, device)
        let id = try uploads.open(device: device).uploadID
        #expect(try uploads.putPart(1, of: id, LibrarySnapshot(objects: [Self.asset("a", 3), Self.asset("kept", 1)]), device: device) == UploadProgress(parts: 1, objects: 2))

        let cases: [(part: [LibraryObject], expected: String)] = [
            ([Self.asset("a", 4)], "badRequest"),                                                   // "a" in two parts
            ([.assetCollection("album", fingerprint: fp(5), assets: ["missing"])], "unprocessable"),  // no part holds it
            ([Self.asset("box", 6)], "badRequest"),                                                 // box is an album
        ]
        for c in cases {
            _ = try uploads.putPart(2, of: id, LibrarySnapshot(objects: c.part), device: device)
            expectErrorNamed(c.expected) { try uploads.commit(id, reset: false, device: device) }
            #expect(try Self.library(env, device) == libraryBefore)
            #expect(try env.service.history.currentChangeToken(device: device) == token)
        }
        // A stale If-Match: 412 with the current token, and again nothing stored.
        _ = try uploads.putPart(2, of: id, LibrarySnapshot(objects: [.assetCollection("album", fingerprint: fp(5), assets: ["a"])]), device: device)
        let stale = try env.put(try env.device("other"), assets: [("x", fp(9))]).changeToken
        expectErrorNamed("versionMismatch") { try uploads.commit(id, reset: false, ifMatch: .versions([stale]), device: device) }
        #expect(try Self.library(env, device) == libraryBefore)

        let result = try uploads.commit(id, reset: false, ifMatch: .versions([token]), device: device)
        let counts: [Int] = [result.inserted, result.updated, result.deleted, result.unchanged]
        #expect(counts == [2, 0, 1, 1])
        let ids: [String] = try Self.library(env, device).map(\.localIdentifier)
        #expect(ids == ["a", "album", "kept"])
        expectErrorNamed("notFound") { try uploads.commit(id, reset: false, device: device) }   // the upload is gone
    }

    /// Shape is checked when a part arrives; a part sent again replaces it; part numbers are 1–10 000.
    @Test(arguments: TestEngine.available)
    func partsAreCheckedWhenTheyArriveAndReplacedWhenResent(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let device = try env.device()
        let uploads = env.service.uploads
        let id = try uploads.open(device: device).uploadID
        expectErrorNamed("badRequest") { try uploads.putPart(1, of: id, LibrarySnapshot(objects: [Self.asset("a", 1), Self.asset("a", 2)]), device: device) }
        expectErrorNamed("badRequest") { try uploads.putPart(1, of: id, LibrarySnapshot(objects: [.asset("b", fingerprint: "short")]), device: device) }
        for n in [0, 10_001] {
            expectErrorNamed("badRequest") { try uploads.putPart(n, of: id, LibrarySnapshot(objects: []), device: device) }
        }
        #expect(try uploads.putPart(10_000, of: id, LibrarySnapshot(objects: [Self.asset("a", 1), Self.asset("b", 2)]), device: device) == UploadProgress(parts: 1, objects: 2))
        #expect(try uploads.putPart(10_000, of: id, LibrarySnapshot(objects: [Self.asset("c", 3)]), device: device) == UploadProgress(parts: 1, objects: 1))
        #expect(try uploads.putPart(3, of: id, LibrarySnapshot(objects: []), device: device) == UploadProgress(parts: 2, objects: 1))
        #expect(try uploads.commit(id, reset: false, device: device).inserted == 1)
        #expect(try Self.library(env, device).map(\.localIdentifier) == ["c"])
    }

    /// Two open uploads per device; another device's upload is unknown; an upload expires 24 hours
    /// after its last part (or its opening); a deleted one is gone; committing no parts empties the library.
    @Test(arguments: TestEngine.available)
    func uploadsAreTheDevicesOwnBoundedAndExpire(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let device = try env.device(), other = try env.device("other")
        let uploads = env.service.uploads
        let first = try uploads.open(device: device)
        #expect(first.expiresAt == env.clock.now.addingTimeInterval(UploadService.lifetime))
        let second = try uploads.open(device: device).uploadID
        expectErrorNamed("tooManyUploads") { try uploads.open(device: device) }
        _ = try uploads.open(device: other)   // places are per device

        expectErrorNamed("notFound") { try uploads.putPart(1, of: second, LibrarySnapshot(objects: []), device: other) }
        expectErrorNamed("notFound") { try uploads.commit(second, reset: false, device: other) }
        expectErrorNamed("notFound") { try uploads.delete(second, device: other) }

        // A part keeps `second` alive; `first`, untouched, expires and frees its place.
        env.clock.advance(UploadService.lifetime - 10)
        _ = try uploads.putPart(1, of: second, LibrarySnapshot(objects: [Self.asset("a", 1)]), device: device)
        env.clock.advance(20)
        expectErrorNamed("notFound") { try uploads.putPart(1, of: first.uploadID, LibrarySnapshot(objects: []), device: device) }
        let third = try uploads.open(device: device).uploadID
        #expect(try uploads.commit(second, reset: false, device: device).inserted == 1)

        try uploads.delete(third, device: device)
        expectErrorNamed("notFound") { try uploads.commit(third, reset: false, device: device) }
        let empty = try uploads.open(device: device).uploadID
        #expect(try uploads.commit(empty, reset: false, device: device).deleted == 1)
        #expect(try Self.library(env, device).isEmpty)
    }

    /// The parts of an upload are bounded by the device's object quota; a reset commit is one
    /// change without details that drops the device's links.
    @Test(arguments: TestEngine.available)
    func quotaAndReset(_ engine: TestEngine) throws {
        let env = try TestEnv(engine) { $0.quotas.objectsPerDevice = 3 }
        let device = try env.device()
        let uploads = env.service.uploads
        _ = try env.put(device, assets: [("a", fp(1))])
        _ = try env.cloudID(device, "a")
        let token = try env.service.history.currentChangeToken(device: device)
        let id = try uploads.open(device: device).uploadID
        _ = try uploads.putPart(1, of: id, LibrarySnapshot(objects: [Self.asset("a", 1), Self.asset("b", 2)]), device: device)
        expectErrorNamed("quotaExceeded") {
            try uploads.putPart(2, of: id, LibrarySnapshot(objects: [Self.asset("c", 3), Self.asset("d", 4)]), device: device)
        }
        #expect(try uploads.putPart(2, of: id, LibrarySnapshot(objects: [Self.asset("c", 3)]), device: device).objects == 3)
        let result = try uploads.commit(id, reset: true, device: device)
        let counts: [Int] = [result.inserted, result.unchanged]
        #expect(counts == [2, 1])
        let change = try Self.lastChange(env, device, since: token)
        #expect(change != nil && change?.details == nil)
        let link = try env.store.read(account: device.accountID) { tx in try tx.linkStates(device, localIdentifiers: ["a"]) }
        let linked: String? = link.first??.linkedGUID
        #expect(link.count == 1 && linked == nil)
    }

    /// A device's uploads go with the device, and with the account.
    @Test(arguments: TestEngine.available)
    func uploadsGoWithTheirDevice(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let device = try env.device()
        let id = try env.service.uploads.open(device: device).uploadID
        _ = try env.service.uploads.putPart(1, of: id, LibrarySnapshot(objects: [Self.asset("a", 1)]), device: device)
        try env.service.accounts.deleteDevice(accountID: device.accountID, deviceID: device.deviceID)
        let left = try env.store.write(account: device.accountID) { tx in try tx.uploadTotals(uploadID: id) }
        #expect(left.parts == 0 && left.objects == 0)
    }
}
