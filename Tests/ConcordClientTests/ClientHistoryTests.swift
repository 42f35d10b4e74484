import ConcordClient
import Foundation
import Testing

@Test func changeFeedPagesUntilNothingMore() async throws {
    let server = try TestServer()
    let phone = try await server.account(devices: ["Phone"]).devices[0]
    let start = try await phone.currentChangeToken()
    #expect(try await phone.fetchPersistentChanges(since: start).isEmpty)

    // Five inserts, an update, a delete and an album: eight changes.
    for n in 1...5 { try await phone.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("P", n...n)))) }
    let created = Date(timeIntervalSince1970: 1_700_000_000.5)
    try await phone.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: [
        Asset(localIdentifier: assetID(1, device: "P"), fingerprint: fingerprint(1), mediaType: .video, creationDate: created, isFavorite: true)
    ])))
    try await phone.applyChanges(LibraryChanges(assets: ObjectChanges(delete: [assetID(2, device: "P")])))
    try await phone.applyChanges(LibraryChanges(assetCollections: ObjectChanges(upsert: [
        AssetCollection(localIdentifier: "album/L0/040", fingerprint: fingerprint(100), title: "Trip", assets: [assetID(3, device: "P")])
    ])))

    let all = try await phone.fetchPersistentChanges(since: start, pageSize: 3)
    #expect(all.count == 8)
    #expect(all.changeToken == all.last?.changeToken)
    #expect(all.changeToken == (try await phone.currentChangeToken()))
    #expect(Set(all.map(\.changeToken)).count == 8)
    let inserted = try all.prefix(5).map { try $0.changeDetails(for: .asset).insertedLocalIdentifiers }
    #expect(inserted == (1...5).map { [assetID($0, device: "P")] })
    #expect(try all[5].changeDetails(for: .asset).updatedLocalIdentifiers == [assetID(1, device: "P")])
    #expect(try all[6].changeDetails(for: .asset).deletedLocalIdentifiers == [assetID(2, device: "P")])
    #expect(try all[7].changeDetails(for: .assetCollection).insertedLocalIdentifiers == ["album/L0/040"])
    #expect(try all[7].changeDetails(for: .asset).insertedLocalIdentifiers.isEmpty)

    // One page by hand: hasMore and the token to continue from.
    let page = try await phone.fetchPersistentChangePage(since: start, limit: 3)
    #expect(page.hasMore && page.changes.count == 3 && page.changeToken == all[2].changeToken)
    var pages: [PersistentChangePage] = []
    for try await page in phone.persistentChangePages(since: start, pageSize: 3) { pages.append(page) }
    #expect(pages.map(\.changes.count) == [3, 3, 2] && pages.map(\.hasMore) == [true, true, false])
    #expect(pages.flatMap(\.changes).map(\.changeToken) == all.map(\.changeToken))
    let fromMiddle = try await phone.fetchPersistentChanges(since: all[5].changeToken)
    #expect(fromMiddle.map(\.changeToken) == all.suffix(2).map(\.changeToken))
    let none = try await phone.fetchPersistentChanges(since: all.changeToken)
    #expect(none.isEmpty && none.changeToken == all.changeToken)

    // The stored object comes back with its fields (identifier with slashes in the path).
    guard case .asset(let asset) = try await phone.object(withLocalIdentifier: assetID(1, device: "P")) else {
        Issue.record("not an asset")
        return
    }
    #expect(asset.mediaType == .video && asset.creationDate == created && asset.isFavorite == true && asset.hasAdjustments == false)
    let listing = try await phone.objects(ofType: .asset, limit: 2)
    #expect(listing.objects.map(\.localIdentifier) == [assetID(1, device: "P"), assetID(3, device: "P")] && listing.next == assetID(3, device: "P"))

    // A reset library: one change whose details are unavailable (PhotoKit's 3210).
    try await phone.replaceLibrary(LibrarySnapshot(assets: assets("P", 7...7)), reset: true)
    let afterReset = try await phone.fetchPersistentChanges(since: all.changeToken)
    #expect(afterReset.count == 1)
    #expect(throws: ConcordPhotosError.self) { try afterReset[0].changeDetails(for: .asset) }
    do {
        _ = try afterReset[0].changeDetails(for: .asset)
    } catch let error as ConcordPhotosError {
        #expect(error.code == .persistentChangeDetailsUnavailable && error.code.rawValue == 3210)
    }

    // A token that is not one: ConcordError invalidChangeToken.
    let invalid = await thrown(ConcordError.self) { _ = try await phone.fetchPersistentChanges(since: ChangeToken(rawValue: "forged")) }
    #expect(invalid?.status == 400 && invalid?.name == "invalidChangeToken")
}

@Test func expiredChangeTokenIsPhotoKitsError() async throws {
    let server = try TestServer { $0.history.maxChanges = 2 }
    let phone = try await server.account(devices: ["Phone"]).devices[0]
    let start = try await phone.currentChangeToken()
    for n in 1...4 { try await phone.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("P", n...n)))) }
    let expired = await thrown(ConcordPhotosError.self) { _ = try await phone.fetchPersistentChanges(since: start) }
    #expect(expired?.code == .persistentChangeTokenExpired && expired?.code.rawValue == 3105 && expired?.status == 410)
    // Starting again from the current token works.
    #expect(try await phone.fetchPersistentChanges(since: try await phone.currentChangeToken()).isEmpty)
}
