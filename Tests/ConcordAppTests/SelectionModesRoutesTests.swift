import ConcordJSON
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordApp

/// The picker's other modes over a real socket: `"mode": "add"`, picker sessions (`"session"`,
/// `"sequence"`, the answer's `"applied"`), and the bad inputs they refuse.
@Suite struct SelectionModesRoutesTests {
    /// A journal with entry `e` of the phone's p1 and p2; the phone also holds p3 and p4.
    static func entryOnPhone(_ server: APIServer) throws -> (phone: String, tablet: String, journalID: String, entry: APIResponse) {
        let (_, phone, tablet) = try server.phoneAndTablet()
        try server.upsert(phone.token, assets: (1...4).map { ("p\($0)", fingerprint($0)) })
        let id = try #require(try server.createJournal(phone.token)["journalID"]?.stringValue)
        let entry = try server.putEntry(phone.token, id, "e", locals: ["p1", "p2"])
        return (phone.token, tablet.token, id, entry)
    }

    static func select(_ server: APIServer, _ token: String, _ journalID: String, _ body: String, headers: [String] = []) throws -> APIResponse {
        try server.call("POST", "/v1/journals/\(journalID)/entries/e/selection", token: token, body: body, headers: headers)
    }

    static func journalToken(_ server: APIServer, _ token: String) throws -> String {
        try #require(try server.call("GET", "/v1/journals/token", token: token)["changeToken"]?.stringValue)
    }

    struct BadInput: Sendable, CustomTestStringConvertible {
        let body: String
        let field: String
        var testDescription: String { self.body }
    }

    static let badInputs: [BadInput] = [
        BadInput(body: #"{"cancelled":false,"localIdentifiers":["p3"],"sequence":1}"#, field: "session"),
        BadInput(body: #"{"cancelled":false,"localIdentifiers":["p3"],"session":"s"}"#, field: "sequence"),
        BadInput(body: #"{"cancelled":true,"sequence":1}"#, field: "session"),
        BadInput(body: #"{"cancelled":false,"localIdentifiers":["p3"],"mode":"append"}"#, field: "mode"),
        BadInput(body: #"{"cancelled":false,"localIdentifiers":["p3"],"mode":"Add"}"#, field: "mode"),
        BadInput(body: #"{"cancelled":false,"localIdentifiers":["p3"],"mode":1}"#, field: "mode"),
        BadInput(body: #"{"cancelled":false,"localIdentifiers":["p3"],"session":"","sequence":1}"#, field: "session"),
        BadInput(body: #"{"cancelled":false,"localIdentifiers":["p3"],"session":"a b","sequence":1}"#, field: "session"),
        BadInput(body: #"{"cancelled":false,"localIdentifiers":["p3"],"session":"a/b","sequence":1}"#, field: "session"),
        BadInput(body: #"{"cancelled":false,"localIdentifiers":["p3"],"session":"\#(String(repeating: "s", count: 65))","sequence":1}"#, field: "session"),
        BadInput(body: #"{"cancelled":false,"localIdentifiers":["p3"],"session":7,"sequence":1}"#, field: "session"),
        BadInput(body: #"{"cancelled":false,"localIdentifiers":["p3"],"session":"s","sequence":-1}"#, field: "sequence"),
        BadInput(body: #"{"cancelled":false,"localIdentifiers":["p3"],"session":"s","sequence":1.5}"#, field: "sequence"),
        BadInput(body: #"{"cancelled":false,"localIdentifiers":["p3"],"session":"s","sequence":9007199254740992}"#, field: "sequence"),
        BadInput(body: #"{"cancelled":false,"localIdentifiers":["p3"],"session":"s","sequence":1e300}"#, field: "sequence"),
        BadInput(body: #"{"cancelled":false,"localIdentifiers":["p3"],"session":"s","sequence":"1"}"#, field: "sequence"),
        BadInput(body: #"{"cancelled":false,"localIdentifiers":["p3"],"session":"s","sequence":true}"#, field: "sequence"),
    ]

    @Test(arguments: TestEngine.available) func badInputIs400NamingTheFieldAndChangesNothing(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine)
        let (phone, _, id, entry) = try Self.entryOnPhone(server)
        let token = try Self.journalToken(server, phone)
        for bad in Self.badInputs {
            let r = try Self.select(server, phone, id, bad.body)
            #expect(r.status == 400 && r.errorName == "badRequest", "\(bad.body): \(r.raw.body)")
            #expect(r.errorField == bad.field, "\(bad.body): \(r.raw.body)")
        }
        #expect(try Self.journalToken(server, phone) == token)
        let now = try server.call("GET", "/v1/journals/\(id)/entries/e", token: phone)
        #expect(now["version"] == entry["version"] && now["photos"] == entry["photos"])
        // The largest sequence and a 64-character session are taken.
        let edge = try Self.select(server, phone, id, #"{"cancelled":false,"localIdentifiers":["p1","p2"],"session":"\#(String(repeating: "s", count: 64))","sequence":9007199254740991}"#)
        #expect(edge.status == 200 && edge["applied"]?.boolValue == true, "\(edge.raw.body)")
    }

    @Test(arguments: TestEngine.available) func addAppendsWhatDoesNotStandYetAndReplaceStaysTheDefault(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine)
        let (phone, _, id, entry) = try Self.entryOnPhone(server)
        let before = photoClouds(entry.json)
        let added = try Self.select(server, phone, id, #"{"cancelled":false,"mode":"add","localIdentifiers":["p4","p1","p3","p4"]}"#)
        #expect(added.status == 200, "\(added.raw.body)")
        #expect(added["applied"] == nil)
        #expect(added.json?["photos"]?.arrayValue?.map { $0["localIdentifier"]?.stringValue } == ["p1", "p2", "p4", "p3"])
        #expect(Array(photoClouds(added.json).prefix(2)) == before)
        #expect(added.raw.header("ETag") == "\"\(added["version"]?.stringValue ?? "")\"")
        // An empty addition changes nothing.
        let empty = try Self.select(server, phone, id, #"{"cancelled":false,"mode":"add","localIdentifiers":[]}"#)
        #expect(empty.status == 200 && empty.json == added.json)
        // An unmappable one is 422 naming it; nothing changes.
        let ghost = try Self.select(server, phone, id, #"{"cancelled":false,"mode":"add","localIdentifiers":["p1","ghost"]}"#)
        #expect(ghost.status == 422 && ghost.json?["error"]?["localIdentifiers"]?[0]?["localIdentifier"]?.stringValue == "ghost", "\(ghost.raw.body)")
        #expect(ghost.json?["error"]?["localIdentifiers"]?[0]?["index"]?.intValue == 1)
        // Without a mode (or "replace"), the picked ones replace the photos the phone can show.
        let replaced = try Self.select(server, phone, id, #"{"cancelled":false,"localIdentifiers":["p3"]}"#)
        #expect(replaced.json?["photos"]?.arrayValue?.map { $0["localIdentifier"]?.stringValue } == ["p3"])
        let explicit = try Self.select(server, phone, id, #"{"cancelled":false,"mode":"replace","localIdentifiers":["p2","p3"]}"#)
        #expect(explicit.json?["photos"]?.arrayValue?.map { $0["localIdentifier"]?.stringValue } == ["p2", "p3"])
    }

    @Test(arguments: TestEngine.available) func aSessionsOvertakenStepAnswersTheEntryAsItStandsAndWritesNothing(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine)
        let (phone, _, id, _) = try Self.entryOnPhone(server)
        let step2 = try Self.select(server, phone, id, #"{"cancelled":false,"localIdentifiers":["p1","p3"],"session":"picker-A_1","sequence":2}"#)
        #expect(step2.status == 200 && step2["applied"]?.boolValue == true, "\(step2.raw.body)")
        let token = try Self.journalToken(server, phone)
        // Step 1 arrives late: the entry as step 2 left it, not applied, no change in the feed.
        let step1 = try Self.select(server, phone, id, #"{"cancelled":false,"localIdentifiers":["p1"],"session":"picker-A_1","sequence":1}"#)
        #expect(step1.status == 200 && step1["applied"]?.boolValue == false)
        #expect(step1["photos"] == step2["photos"] && step1["version"] == step2["version"])
        #expect(step1.raw.header("ETag") == step2.raw.header("ETag"))
        let changes = try server.call("GET", "/v1/journals/changes?since=\(percentEncoded(token))", token: phone)
        #expect(changes["changes"]?.arrayValue?.isEmpty == true)
        // If-Match is checked first, even on an overtaken step.
        let mismatch = try Self.select(server, phone, id, #"{"cancelled":false,"localIdentifiers":["p1"],"session":"picker-A_1","sequence":1}"#,
                                       headers: ["If-Match: \"1\""])
        #expect(mismatch.status == 412 && mismatch.json?["error"]?["version"] == step2["version"])
        // A cancelled step is not applied and does not move the sequence: step 3 still applies after "cancelled" step 9.
        let cancelled = try Self.select(server, phone, id, #"{"cancelled":true,"session":"picker-A_1","sequence":9}"#)
        #expect(cancelled.status == 200 && cancelled["applied"]?.boolValue == false)
        let step3 = try Self.select(server, phone, id, #"{"cancelled":false,"mode":"add","localIdentifiers":["p4"],"session":"picker-A_1","sequence":3}"#)
        #expect(step3["applied"]?.boolValue == true)
        #expect(step3.json?["photos"]?.arrayValue?.map { $0["localIdentifier"]?.stringValue } == ["p1", "p3", "p4"])
        let after = try #require(try server.call("GET", "/v1/journals/changes?since=\(percentEncoded(token))", token: phone)["changes"]?.arrayValue)
        #expect(after.count == 1)
        #expect(after.first?["entries"]?["updated"]?.arrayValue?.compactMap(\.stringValue) == ["\(id)/e"])
    }

    @Test(arguments: TestEngine.available) func anAppliedStepWakesAHeldJournalPollAndAnOvertakenOneDoesNot(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine, scheduler: ManualScheduler())
        let (phone, tablet, id, _) = try Self.entryOnPhone(server)
        #expect(try Self.select(server, phone, id, #"{"cancelled":false,"localIdentifiers":["p1"],"session":"s","sequence":5}"#)["applied"]?.boolValue == true)
        let since = try Self.journalToken(server, tablet)
        let poll = LongPollTests.Poll(port: server.port, token: tablet, "/v1/journals/changes?since=\(percentEncoded(since))&wait=30")
        try LongPollTests.waitUntilHeld(server, 1)
        #expect(try Self.select(server, phone, id, #"{"cancelled":false,"localIdentifiers":["p2"],"session":"s","sequence":4}"#)["applied"]?.boolValue == false)
        usleep(200_000)
        #expect(server.app.context.longPolls.waiting == 1 && !poll.isAnswered)
        #expect(try Self.select(server, phone, id, #"{"cancelled":false,"localIdentifiers":["p2"],"session":"s","sequence":6}"#)["applied"]?.boolValue == true)
        let (answer, _) = try poll.result()
        #expect(answer.status == 200)
        let changes = try #require(answer["changes"]?.arrayValue)
        #expect(changes.count == 1 && changes.first?["entries"]?["updated"]?.arrayValue?.compactMap(\.stringValue) == ["\(id)/e"])
    }
}
