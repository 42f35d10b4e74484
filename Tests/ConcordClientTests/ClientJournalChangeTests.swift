import ConcordClient
import Foundation
import Testing

/// Journal changes shaped as the library's: a fetch result that is a collection, pages, and
/// entries named by `JournalEntryID`.
@Test func journalChangesAreTypedAndPagedAsTheLibrarys() async throws {
    let none = #"{"inserted":[],"updated":[],"deleted":[]}"#
    let server = try ScriptedServer([
        reply(200, #"{"changes":[{"changeToken":"jt1","journals":{"inserted":["j1"],"updated":[],"deleted":[]},"entries":\#(none)}],"changeToken":"jt1","hasMore":true}"#),
        reply(200, #"{"changes":[{"changeToken":"jt2","journals":{"inserted":[],"updated":["j1"],"deleted":[]},"entries":{"inserted":["j1/day/1"],"updated":[],"deleted":["j1/e0"]}}],"changeToken":"jt2","hasMore":false}"#),
    ])
    let client = server.client(.never)

    let result = try await client.fetchJournalChanges(since: ChangeToken(rawValue: "jt0"))
    #expect(result.count == 2 && result.map(\.changeToken.rawValue) == ["jt1", "jt2"] && result.changeToken.rawValue == "jt2")
    #expect(result[0].journalIDs.inserted == ["j1"] && result[0].entryIDs.isEmpty)
    // An entry ID may hold `/`: the journal ID (the server's) ends at the first one.
    #expect(result[1].entryIDs.inserted == [JournalEntryID(journalID: "j1", entryID: "day/1")])
    #expect(result[1].entryIDs.deleted == [JournalEntryID(journalID: "j1", entryID: "e0")] && result[1].journalIDs.updated == ["j1"])

    // Page by page, as consumed: the second page ends the stream.
    let again = try ScriptedServer(server.responder.script)
    var pages: [JournalChangePage] = []
    for try await page in again.client(.never).journalChangePages(since: ChangeToken(rawValue: "jt0")) { pages.append(page) }
    #expect(pages.map(\.hasMore) == [true, false] && pages.flatMap(\.changes) == result.changes)
    #expect(again.responder.requests.map(\.target) == ["/v1/journals/changes?since=jt0", "/v1/journals/changes?since=jt1"])
}

@Test func aCloudIdentifierWithoutAFingerprint() throws {
    let guid = try #require(UUID(uuidString: "3f2504e0-4f89-41d3-9a0c-0305e82c3301"))
    let album = CloudIdentifier(guid: guid, type: .assetCollection)
    #expect(album.stringValue == "3F2504E0-4F89-41D3-9A0C-0305E82C3301:040:")
    #expect(album.fingerprint == "" && album.isWellFormed)
    #expect(album.isSameRecord(as: CloudIdentifier(guid: guid, type: .assetCollection, fingerprint: "abcdefghijklmnopqrstuv")))
}
