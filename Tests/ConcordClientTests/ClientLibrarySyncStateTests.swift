import ConcordClient
import ConcordHTTP
import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The `If-Match` header of every library write a client sends.
private final class LibraryWriteHeaders: Sendable {
    let seen = Mutex<[String?]>([])
    func observe(_ request: URLRequest) {
        let path = request.url?.path ?? ""
        guard request.httpMethod != "GET", path == "/v1/library" || path == "/v1/library/changes" || path.hasSuffix("/commit") else { return }
        self.seen.withLock { $0.append(request.value(forHTTPHeaderField: "If-Match")) }
    }
    var all: [String?] { self.seen.withLock { $0 } }
}

@Test func everyLibraryWriteCarriesTheTokenOfTheClientsLastWrite() async throws {
    let server = try TestServer()
    let headers = LibraryWriteHeaders()
    let saved = Mutex<LibrarySyncState?>(nil)
    let account = try await server.account(devices: []).account
    let device = try await account.createDevice(name: "Phone", platform: "iOS")
    let phone = server.client(token: device.deviceToken) { $0.onRequest = { headers.observe($0) } }
        .withToken(device.deviceToken, librarySyncState: LibrarySyncState()) { state in saved.withLock { $0 = state } }

    // The first write has no token to carry; each later one carries the one before's.
    let first = try await phone.replaceLibrary(LibrarySnapshot(assets: assets("P", 1...3)))
    #expect(phone.librarySyncState == LibrarySyncState(changeToken: first.changeToken))
    #expect(saved.withLock { $0 } == phone.librarySyncState)
    // Mapping, the wanted list and the authorization status are no library writes: the token stays.
    _ = try await phone.cloudIdentifierMappings(forLocalIdentifiers: [assetID(1, device: "P")])
    _ = try await phone.wantedPage()
    try await phone.setAuthorizationStatus(.authorized)
    #expect(try await phone.currentChangeToken() == first.changeToken)
    let second = try await phone.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("P", 4...4))))
    let third = try await phone.replaceLibrary(LibrarySnapshot(assets: assets("P", 1...6)), partObjects: 2)
    #expect(phone.librarySyncState.changeToken == third.changeToken && saved.withLock { $0 }?.changeToken == third.changeToken)
    #expect(headers.all == [nil, "\"\(first.changeToken)\"", "\"\(second.changeToken)\""])

    // Writes started together go one at a time: none is refused as if from a copy.
    try await withThrowingTaskGroup(of: Void.self) { group in
        for n in 10..<16 {
            group.addTask { try await phone.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("P", n...n)))) }
        }
        try await group.waitForAll()
    }
    #expect(phone.librarySyncState.changeToken == (try await phone.currentChangeToken()))

    // A refused write (a 4xx: nothing stored) keeps the token.
    let before = phone.librarySyncState
    await #expect(throws: ConcordError.self) {
        try await phone.applyChanges(LibraryChanges(assetCollections: ObjectChanges(upsert: [AssetCollection(localIdentifier: "album", assets: ["nowhere"])])))
    }
    #expect(phone.librarySyncState == before)
}

@Test func aRestoredCopyIsToldItIsACopyAndTheOriginalIsNot() async throws {
    let server = try TestServer()
    let account = try await server.account(devices: []).account
    let device = try await account.createDevice(name: "Phone", platform: "iOS")
    let original = server.client(token: device.deviceToken)
    try await original.replaceLibrary(LibrarySnapshot(assets: assets("P", 1...2)))

    // A backup taken now, restored on another phone later: the app's saved state goes with it.
    let backup = try JSONEncoder().encode(original.librarySyncState)
    let copy = server.client(token: device.deviceToken)
        .withToken(device.deviceToken, librarySyncState: try JSONDecoder().decode(LibrarySyncState.self, from: backup))

    // The original goes on writing, as the Optimize Storage flow does (no ifMatch anywhere).
    let favourite = try await original.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: [Asset(localIdentifier: assetID(1, device: "P"), isFavorite: true)])))
    let again = try await original.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("P", 3...3))))
    #expect(again.changeToken != favourite.changeToken)

    // The copy's first write is refused: nothing stored, and its state stays where the backup was.
    let refused = await thrown(LibraryChangedElsewhereError.self) {
        try await copy.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("C", 1...1))))
    }
    #expect(refused?.currentChangeToken == again.changeToken)
    #expect(try await original.fetchPersistentChanges(since: again.changeToken).isEmpty)
    let refusedAgain = await thrown(LibraryChangedElsewhereError.self) { try await copy.replaceLibrary(LibrarySnapshot()) }
    #expect(refusedAgain != nil)
    #expect(try await original.objects().objects.count == 3)

    // The original is never told it is a copy.
    try await original.applyChanges(LibraryChanges(assets: ObjectChanges(delete: [assetID(3, device: "P")])))

    // `.any` overwrites whatever the token (an app that decided to take over).
    let taken = try await copy.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("C", 1...1))), ifMatch: .any)
    #expect(copy.librarySyncState.changeToken == taken.changeToken)
}

@Test func aWriteWhoseAnswerWasLostIsSettledFromTheHistoryBeforeTheNextWrite() async throws {
    let changeT1 = #"{"changeToken":"t1","assets":{"inserted":["a"],"updated":[],"deleted":[]},"assetCollections":{"inserted":[],"updated":[],"deleted":[]},"collectionLists":{"inserted":[],"updated":[],"deleted":[]}}"#
    let written = #"{"changeToken":"t2","inserted":1,"updated":0,"deleted":0,"unchanged":0}"#
    let server = try ScriptedServer([
        reply(200, #"{"changes":[\#(changeT1)],"changeToken":"t1","hasMore":false}"#),   // the lost write landed as t1
        reply(200, written),
    ])
    let client = server.client(.never).withToken("device-token", librarySyncState: LibrarySyncState(changeToken: ChangeToken(rawValue: "t0"), writeUnconfirmed: true))
    let result = try await client.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: [Asset(localIdentifier: "b")])))
    #expect(result.changeToken.rawValue == "t2" && client.librarySyncState == LibrarySyncState(changeToken: ChangeToken(rawValue: "t2")))
    let r = server.responder.requests
    try #require(r.count == 2)
    #expect(r[0].method == "GET" && r[0].target == "/v1/library/changes?since=t0")
    #expect(r[1].method == "POST" && r[1].headers[first: "If-Match"] == "\"t1\"")

    // A write whose outcome is unknown (a 500) leaves the state unconfirmed, and the app is told.
    let down = try ScriptedServer([reply(500, #"{"error":{"name":"internalError","message":"Lost."}}"#)])
    let unlucky = down.client(.never).withToken("device-token", librarySyncState: LibrarySyncState(changeToken: ChangeToken(rawValue: "t5")))
    await #expect(throws: ConcordError.self) { try await unlucky.applyChanges(LibraryChanges()) }
    #expect(unlucky.librarySyncState == LibrarySyncState(changeToken: ChangeToken(rawValue: "t5"), writeUnconfirmed: true))
    // So does a 409 saying the first send was applied but its answer lost; other 4xx stored nothing.
    let answers: [(answer: HTTPResponse, unconfirmed: Bool)] = [
        (reply(409, #"{"error":{"name":"idempotencyKeyAnswerLost","message":"Applied."}}"#), true),
        (reply(400, #"{"error":{"name":"badRequest","message":"No."}}"#), false),
    ]
    for (answer, unconfirmed) in answers {
        let scripted = try ScriptedServer([answer])
        let client = scripted.client(.never).withToken("device-token", librarySyncState: LibrarySyncState(changeToken: ChangeToken(rawValue: "t5")))
        await #expect(throws: ConcordError.self) { try await client.applyChanges(LibraryChanges()) }
        #expect(client.librarySyncState.writeUnconfirmed == unconfirmed)
    }
}

@Test func theLibraryStateReadsWhatItWrote() throws {
    let state = LibrarySyncState(changeToken: ChangeToken(rawValue: "abc"), writeUnconfirmed: true)
    #expect(try JSONDecoder().decode(LibrarySyncState.self, from: JSONEncoder().encode(state)) == state)
    #expect(try JSONDecoder().decode(LibrarySyncState.self, from: Data(#"{"changeToken":"x","future":1}"#.utf8)) == LibrarySyncState(changeToken: ChangeToken(rawValue: "x")))
    #expect(try JSONDecoder().decode(LibrarySyncState.self, from: Data("{}".utf8)) == LibrarySyncState())
}
