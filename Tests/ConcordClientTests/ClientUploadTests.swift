import ConcordClient
import Foundation
import Synchronization
import Testing

/// Uploads in parts through the client: `replaceLibrary` of a library larger than
/// `partObjects` goes in parts, reports progress and answers what one PUT would; a refused commit
/// discards the upload; the lower-level calls work for an app that enumerates a slice at a time.
@Test func aLargeReplaceLibraryGoesInPartsWithProgressAndAnswersAsOnePut() async throws {
    let server = try TestServer()
    let devices = try await server.account(devices: ["Phone", "Twin"]).devices
    let phone = devices[0], twin = devices[1]
    let library = LibrarySnapshot(assets: assets("P", 1...10), assetCollections: [AssetCollection(localIdentifier: "album", assets: [assetID(2, device: "P")])])
    #expect(library.parts(of: 4).map(\.objectCount) == [4, 4, 3])

    let reports = Mutex<[LibraryUploadProgress]>([])
    let inParts = try await phone.replaceLibrary(library, partObjects: 4, progress: { p in reports.withLock { $0.append(p) } })
    let inOne = try await twin.replaceLibrary(library)
    let counts: [Int] = [inParts.inserted, inParts.updated, inParts.deleted, inParts.unchanged]
    #expect(counts == [inOne.inserted, inOne.updated, inOne.deleted, inOne.unchanged])
    #expect(inParts.inserted == 11)
    #expect(reports.withLock { $0 }.map(\.objectsSent) == [4, 8, 11] && reports.withLock { $0 }.allSatisfy { $0.partsTotal == 3 && $0.objectsTotal == 11 })
    #expect(try await phone.objects().objects.map(\.localIdentifier) == (try await twin.objects().objects.map(\.localIdentifier)))
    #expect(inParts.changeToken == (try await phone.currentChangeToken()))

    // A refused commit (an album listing an asset no part holds) throws and discards the upload:
    // the device's two places are free afterwards.
    let bad = LibrarySnapshot(assets: assets("P", 1...5), assetCollections: [AssetCollection(localIdentifier: "album", assets: ["nowhere"])])
    await #expect(throws: ConcordError.self) { try await phone.replaceLibrary(bad, partObjects: 2) }
    let first = try await phone.openLibraryUpload(), second = try await phone.openLibraryUpload()
    #expect(first.expiresAt > Date())

    // The lower-level calls: parts in any order, a part resent, then the commit with If-Match.
    try await phone.sendPart(2, of: first, LibrarySnapshot(assets: assets("P", 3...4)))
    let progress = try await phone.sendPart(1, of: first, LibrarySnapshot(assets: assets("P", 1...2)))
    #expect(progress.parts == 2 && progress.objects == 4)
    let token = try await phone.currentChangeToken()
    let committed = try await phone.commitUpload(first, ifMatch: token)
    #expect(committed.deleted == 7 && committed.unchanged == 4)
    try await phone.discardUpload(second)
    await #expect(throws: ConcordError.self) { try await phone.commitUpload(second) }
}
