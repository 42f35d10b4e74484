import ConcordClient
import Foundation
import Testing

// Device successors through the client: a new phone registers as the old one's successor, uploads and
// adopts; the old token is dead; the device list says who replaced whom.

@Test func aNewPhoneRegistersAsTheSuccessorUploadsAndAdopts() async throws {
    let server = try TestServer()
    let (account, devices) = try await server.account(devices: ["iPhone"])
    let old = devices[0]
    try await old.replaceLibrary(LibrarySnapshot(assets: assets("OLD", 1...3)))
    let clouds = try await old.orderedCloudIdentifierMappings(forLocalIdentifiers: (1...3).map { assetID($0, device: "OLD") })
        .map { try #require($0.cloudIdentifier) }
    let oldID = try #require(try await account.listDevices().first?.deviceID)

    // The old installation learns it is a copy and registers its successor with its own token.
    let credentials = try await old.registerSuccessor(of: oldID, name: "New iPhone", platform: "iOS")
    #expect(credentials.replaces == oldID)
    let new = old.withToken(credentials.deviceToken)
    let dead = await thrown(ConcordError.self) { _ = try await old.currentChangeToken() }
    #expect(dead?.status == 401)

    // Nothing to adopt before anything is uploaded; after, every photo by content (tier 3).
    #expect(try await new.adopt() == Adoption.empty(unmatched: 3))
    try await new.replaceLibrary(LibrarySnapshot(assets: assets("NEW", 1...3)))
    let adoption = try await new.adopt()
    #expect(adoption.adopted == 3 && adoption.unmatched == 0 && adoption.ambiguous.isEmpty)
    let back = try await new.orderedLocalIdentifierMappings(for: clouds, contentMatch: false).map(\.localIdentifier)
    #expect(back == (1...3).map { assetID($0, device: "NEW") })

    let listed = try await account.listDevices()
    #expect(listed.first { $0.deviceID == oldID }?.replacedBy == credentials.deviceID)
    #expect(listed.first { $0.deviceID == credentials.deviceID }?.replaces == oldID)
    let twice = await thrown(ConcordError.self) { _ = try await account.registerSuccessor(of: oldID, name: "again") }
    #expect(twice?.status == 409 && twice?.name == "deviceAlreadyReplaced")
}

extension Adoption {
    /// Nothing adopted, `unmatched` records without a candidate.
    static func empty(unmatched: Int) -> Adoption? {
        try? JSONDecoder().decode(Adoption.self, from: Data(#"{"adopted":0,"alreadyLinked":0,"unmatched":\#(unmatched),"ambiguous":[]}"#.utf8))
    }
}
