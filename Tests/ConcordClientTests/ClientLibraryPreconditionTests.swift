import ConcordClient
import Foundation
import Testing

/// The library write precondition through the client: `ifMatch` on the library writes, and the
/// `412` of a copied installation as `LibraryChangedElsewhereError` with the current token.
@Test func libraryWritesWithIfMatchApplyWhileTheTokenIsCurrent() async throws {
    let server = try TestServer()
    let phone = try await server.account(devices: ["Phone"]).devices[0]
    var token = try await phone.currentChangeToken()

    // Each write's answer is the next write's precondition.
    let first = try await phone.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("P", 1...2))), ifMatch: token)
    #expect(first.inserted == 2 && first.changeToken != token)
    token = first.changeToken
    let replaced = try await phone.replaceLibrary(LibrarySnapshot(assets: assets("P", 2...4)), ifMatch: token)
    #expect(replaced.inserted == 2 && replaced.deleted == 1 && replaced.unchanged == 1)
    token = replaced.changeToken
    let reset = try await phone.replaceLibrary(LibrarySnapshot(assets: assets("P", 3...4)), reset: true, ifMatch: token)
    #expect(reset.deleted == 1)
    #expect(try await phone.currentChangeToken() == reset.changeToken)
    // Without ifMatch, as before.
    let plain = try await phone.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("P", 5...5))))
    #expect(plain.inserted == 1)
    #expect(try await phone.fetchPersistentChanges(since: first.changeToken).count == 3)
}

@Test func aCopiedInstallationsWriteIsLibraryChangedElsewhereAndStoresNothing() async throws {
    let server = try TestServer()
    let phone = try await server.account(devices: ["Phone"]).devices[0]
    let written = try await phone.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("P", 1...1))), ifMatch: try await phone.currentChangeToken())

    // A restored backup: the same device token, and the token of the last write it knew.
    let copy = server.client(token: phone.token)
    let moved = try await phone.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("P", 2...2))), ifMatch: written.changeToken)

    for attempt in 0..<3 {
        do {
            switch attempt {
            case 0: try await copy.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("C", 1...1))), ifMatch: written.changeToken)
            case 1: try await copy.replaceLibrary(LibrarySnapshot(assets: assets("C", 1...3)), ifMatch: written.changeToken)
            default: try await copy.replaceLibrary(LibrarySnapshot(), reset: true, ifMatch: written.changeToken)
            }
            Issue.record("attempt \(attempt): the stale write applied")
        } catch let error as LibraryChangedElsewhereError {
            #expect(error.currentChangeToken == moved.changeToken && error.status == 412, "attempt \(attempt)")
        }
    }
    // Nothing of the copy's writes was stored.
    #expect(try await phone.fetchPersistentChanges(since: moved.changeToken).isEmpty)
    #expect(try await phone.objects().objects.map(\.localIdentifier).sorted() == [assetID(1, device: "P"), assetID(2, device: "P")])

    // With the current token (from the error), the write applies: the app decides to take over.
    let taken = try await copy.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("C", 1...1))), ifMatch: moved.changeToken)
    #expect(taken.inserted == 1)

    // Other errors keep their type: a malformed body is still a ConcordError, not a copy.
    await #expect(throws: ConcordError.self) {
        try await copy.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: [Asset(localIdentifier: "")])), ifMatch: written.changeToken)
    }
}
