import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordDomain
import ConcordMappingIndex

/// The library write precondition in the service: a token matches by the change it
/// names, so the token of a write answered before a key rotation still matches after it; a token
/// of another device, or an older change, does not.
@Suite struct LibraryPreconditionTests {
    @Test(arguments: TestEngine.available)
    func aTokenSignedBeforeAKeyRotationStillMatchesItsChange(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let device = try env.device()
        let other = try env.device("other")
        let written = try env.put(device, assets: [("a", fp(1))]).changeToken

        #expect(try ConcordService.rotateChangeKey(store: env.store) == 1)
        let rotated = try ConcordService(store: env.store)
        let current = try rotated.history.currentChangeToken(device: device)
        #expect(current != written)   // the same change, signed with the new key

        // Both spellings of the current change match, on a process that ran through the rotation and a new one.
        let second = try env.service.library.applyChanges(
            LibraryChangeRequest(assets: LibraryChangePart(upsert: [.asset("b", fingerprint: fp(2))])), ifMatch: .versions([written]), device: device)
        #expect(second.inserted == 1)
        let third = try rotated.library.replaceLibrary(
            LibrarySnapshot(objects: [.asset("b", fingerprint: fp(2))]), reset: false, ifMatch: .versions([second.changeToken]), device: device)
        #expect(third.deleted == 1)

        // An older change's token, another device's, a weak-only list (`.versions([])`): 412 with the current token.
        let now = try rotated.history.currentChangeToken(device: device)
        for ifMatch: IfMatch in [.versions([written]), .versions([second.changeToken]), .versions([try rotated.history.currentChangeToken(device: other)]), .versions([])] {
            #expect(throws: DomainError.changeTokenMismatch(currentChangeToken: now)) {
                try rotated.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(delete: ["b"])), ifMatch: ifMatch, device: device)
            }
        }
        #expect(try rotated.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(delete: ["b"])), ifMatch: .any, device: device).deleted == 1)
    }
}
