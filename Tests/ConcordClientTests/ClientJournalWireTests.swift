import ConcordClient
import ConcordHTTP
import Foundation
import Testing

// Over a scripted server on a real socket: the client's journal requests and its decoding of
// the answers, held to the API's shapes.

private let g1 = "3F2504E0-4F89-41D3-9A0C-0305E82C3301:001:47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
private let g2 = "5A2504E0-4F89-41D3-9A0C-0305E82C3302:001:47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"

private func bodyObject(_ request: HTTPRequest) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
}

@Test func journalRequestsAndAnswersFollowTheContract() async throws {
    let entry = #"""
        {"entryID":"e1","text":"Day 1","version":"3","photos":[
          {"cloudIdentifier":"\#(g1)","localIdentifier":"L1/L0/001"},
          {"cloudIdentifier":"\#(g2)","error":{"name":"identifierNotFound","message":"m","domain":"PHPhotosErrorDomain","code":3201}}]}
        """#
    let server = try ScriptedServer([
        reply(201, #"{"journalID":"j1","title":"Trip","version":"1","entryCount":0,"updatedAt":"2026-11-23T08:39:26Z"}"#),
        reply(200, entry),
        reply(200, #"{"journalID":"j1","title":"Trip","version":"2","entryCount":1,"updatedAt":"2026-11-23T08:40:00Z","entries":[\#(entry)]}"#),
        reply(200, #"{"journals":[{"journalID":"j1","title":"Trip","version":"2","entryCount":1,"updatedAt":"2026-11-23T08:40:00Z"}]}"#),
        reply(412, #"{"error":{"name":"versionMismatch","message":"Changed.","version":"4"}}"#),
        reply(200, entry),
        reply(200, #"{"changeToken":"jt0"}"#),
        reply(200, #"{"changes":[{"changeToken":"jt1","journals":{"inserted":["j1"],"updated":[],"deleted":[]},"entries":{"inserted":[],"updated":[],"deleted":[]}}],"changeToken":"jt1","hasMore":true}"#),
        reply(200, #"{"changes":[{"changeToken":"jt2","journals":{"inserted":[],"updated":["j1"],"deleted":[]},"entries":{"inserted":["j1/e1"],"updated":[],"deleted":[]}}],"changeToken":"jt2","hasMore":false}"#),
        HTTPResponse(status: 204),
    ])
    let client = server.client(.never)

    let created = try await client.createJournal(title: "Trip")
    #expect(created.journalID == "j1" && created.version == "1" && created.entries.isEmpty && created.entryCount == 0)

    let put = try await client.putEntry(
        journalID: "j1", entryID: "e1", text: "Day 1",
        photos: [.cloud(CloudIdentifier(stringValue: g1)), .local("L2/L0/001")], ifMatch: "2")
    #expect(put.photos.map(\.cloudIdentifier.stringValue) == [g1, g2])
    #expect(put.photos[0].localIdentifier == "L1/L0/001" && put.photos[0].error == nil)
    #expect(put.photos[1].localIdentifier == nil && put.photos[1].error?.code == .identifierNotFound)

    let journal = try await client.journal("j1")
    #expect(journal.entries == [put] && journal.updatedAt == Date(timeIntervalSince1970: 1_795_423_200))
    #expect(try await client.listJournals().map(\.journalID) == ["j1"])

    let stale = await thrown(ConcordError.self) { try await client.renameJournal("j1", title: "Trip!", ifMatch: "1") }
    #expect(stale?.status == 412 && stale?.name == "versionMismatch" && stale?.version == "4")

    let picked = try await client.applySelection(journalID: "j1", entryID: "e1", localIdentifiers: ["L1/L0/001"])
    #expect(picked.entryID == "e1")

    let token = try await client.currentJournalChangeToken()
    let changes = try await client.fetchJournalChanges(since: token)
    #expect(changes.changes.map(\.changeToken.rawValue) == ["jt1", "jt2"] && changes.changeToken.rawValue == "jt2")
    #expect(changes.changes[1].entries?.inserted == ["j1/e1"] && changes.changes[0].journals?.inserted == ["j1"])

    try await client.deleteEntry(journalID: "j1", entryID: "e1", ifMatch: "*")

    let r = server.responder.requests
    try #require(r.count == 10)
    #expect(r.map(\.method) == ["POST", "PUT", "GET", "GET", "PUT", "POST", "GET", "GET", "GET", "DELETE"])
    #expect(r.map(\.target) == [
        "/v1/journals", "/v1/journals/j1/entries/e1", "/v1/journals/j1", "/v1/journals", "/v1/journals/j1",
        "/v1/journals/j1/entries/e1/selection", "/v1/journals/token", "/v1/journals/changes?since=jt0",
        "/v1/journals/changes?since=jt1", "/v1/journals/j1/entries/e1",
    ])
    #expect(try bodyObject(r[0])["title"] as? String == "Trip")
    let putBody = try bodyObject(r[1])
    #expect(putBody["text"] as? String == "Day 1")
    let photos = try #require(putBody["photos"] as? [[String: String]])
    #expect(photos == [["cloudIdentifier": g1], ["localIdentifier": "L2/L0/001"]])
    #expect(r[1].headers[first: "If-Match"] == "\"2\"" && r[4].headers[first: "If-Match"] == "\"1\"" && r[9].headers[first: "If-Match"] == "*")
    let selection = try bodyObject(r[5])
    #expect(selection["cancelled"] as? Bool == false && selection["localIdentifiers"] as? [String] == ["L1/L0/001"])
}
