import ConcordJSON
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordApp

extension APIServer {
    /// A new account's device holding asset "a1" (content 1), and a new journal of it.
    func deviceWithJournal() throws -> (device: (id: String, token: String), journalID: String) {
        let device = try self.device(try self.account().token)
        try self.upsert(device.token, assets: [("a1", fingerprint(1))])
        return (device, try #require(try self.createJournal(device.token)["journalID"]?.stringValue))
    }

    /// Creates a journal; its body.
    func createJournal(_ deviceToken: String, _ title: String = "Trip") throws -> JSONValue {
        let r = try self.call("POST", "/v1/journals", token: deviceToken, body: #"{"title":\#(json(title))}"#)
        try #require(r.status == 201, "create journal: \(r.raw.body)")
        return try #require(r.json)
    }

    /// PUTs an entry whose photos are the device's local identifiers; requires 200.
    @discardableResult
    func putEntry(_ deviceToken: String, _ journalID: String, _ entryID: String, text: String = "", locals: [String], headers: [String] = []) throws -> APIResponse {
        let photos = locals.map { #"{"localIdentifier":\#(json($0))}"# }.joined(separator: ",")
        let r = try self.call("PUT", "/v1/journals/\(journalID)/entries/\(percentEncoded(entryID))", token: deviceToken,
                              body: #"{"text":\#(json(text)),"photos":[\#(photos)]}"#, headers: headers)
        try #require(r.status == 200, "put entry: \(r.raw.body)")
        return r
    }
}

/// The cloud identifiers of an entry body's photos.
func photoClouds(_ entry: JSONValue?) -> [String?] { entry?["photos"]?.arrayValue?.map { $0["cloudIdentifier"]?.stringValue } ?? [] }

@Test(arguments: TestEngine.available) func journalsCanBeCreatedListedReadRenamedAndDeleted(_ engine: TestEngine) throws {
    let server = try APIServer(engine: engine)
    let account = try server.account()
    let device = try server.device(account.token)

    let created = try server.call("POST", "/v1/journals", token: device.token, body: #"{"title":"Trip"}"#)
    #expect(created.status == 201)
    let id = try #require(created["journalID"]?.stringValue)
    let version = try #require(created["version"]?.stringValue)
    #expect(created.raw.header("ETag") == "\"\(version)\"" && created.raw.header("Location") == "/v1/journals/\(id)")
    #expect(created["title"]?.stringValue == "Trip" && created["entryCount"]?.intValue == 0)
    #expect(created["updatedAt"]?.stringValue?.hasSuffix("Z") == true && created["createdAt"]?.stringValue != nil)

    let list = try server.call("GET", "/v1/journals", token: device.token)
    #expect(list.status == 200 && list["journals"]?.arrayValue?.map { $0["journalID"]?.stringValue } == [id])
    #expect(list["journals"]?[0] == created.json)

    let got = try server.call("GET", "/v1/journals/\(id)", token: device.token)
    #expect(got.status == 200 && got["entries"]?.arrayValue == [] && got["title"]?.stringValue == "Trip")
    #expect(got.raw.header("ETag") == "\"\(version)\"")

    // Rename: If-Match stale is 412 with the current version; the right one passes.
    let renamed = try server.call("PUT", "/v1/journals/\(id)", token: device.token, body: #"{"title":"Summer"}"#, headers: ["If-Match: \"\(version)\""])
    #expect(renamed.status == 200 && renamed["title"]?.stringValue == "Summer")
    let v2 = try #require(renamed["version"]?.stringValue)
    #expect(v2 != version && renamed.raw.header("ETag") == "\"\(v2)\"")
    let stale = try server.call("PUT", "/v1/journals/\(id)", token: device.token, body: #"{"title":"Autumn"}"#, headers: ["If-Match: \"\(version)\""])
    #expect(stale.status == 412 && stale.errorName == "versionMismatch" && stale.json?["error"]?["version"]?.stringValue == v2)

    // Errors: 400 naming the field, 401, 403 for an account token, 404 for unknown IDs.
    let missing = try server.call("POST", "/v1/journals", token: device.token, body: "{}")
    #expect(missing.status == 400 && missing.errorField == "title")
    #expect(try server.call("POST", "/v1/journals", token: device.token, body: #"{"title":""}"#).errorField == "title")
    #expect(try server.call("GET", "/v1/journals", token: nil).status == 401)
    #expect(try server.call("GET", "/v1/journals", token: account.token).errorName == "forbidden")
    #expect(try server.call("GET", "/v1/journals/\(UUID().uuidString)", token: device.token).status == 404)
    #expect(try server.call("HEAD", "/v1/journals/\(id)", token: device.token).status == 200)

    let stranger = try server.device(try server.account("Other").token)
    #expect(try server.call("GET", "/v1/journals/\(id)", token: stranger.token).status == 404)
    #expect(try server.call("DELETE", "/v1/journals/\(id)", token: stranger.token).status == 404)

    #expect(try server.call("DELETE", "/v1/journals/\(id)", token: device.token, headers: ["If-Match: \"\(version)\""]).status == 412)
    #expect(try server.call("DELETE", "/v1/journals/\(id)", token: device.token, headers: ["If-Match: *"]).status == 204)
    #expect(try server.call("GET", "/v1/journals/\(id)", token: device.token).status == 404)
    #expect(try server.call("GET", "/v1/journals", token: device.token)["journals"]?.arrayValue == [])
}

@Test(arguments: TestEngine.available) func aJournalWrittenOnOneDeviceOpensOnAnotherFoundAmbiguousAndMissing(_ engine: TestEngine) throws {
    let server = try APIServer(engine: engine)
    let account = try server.account()
    let a = try server.device(account.token, "A")
    let b = try server.device(account.token, "B")
    try server.upsert(a.token, assets: [("a1", fingerprint(1)), ("a2", fingerprint(2)), ("a3", fingerprint(3))])
    try server.upsert(b.token, assets: [("b1", fingerprint(1)), ("b2", fingerprint(2)), ("b2copy", fingerprint(2))])
    let id = try #require(try server.createJournal(a.token)["journalID"]?.stringValue)

    let put = try server.putEntry(a.token, id, "day/1", text: "Beach", locals: ["a1", "a2", "a3"])
    let entryVersion = try #require(put["version"]?.stringValue)
    #expect(put.raw.header("ETag") == "\"\(entryVersion)\"" && put["entryID"]?.stringValue == "day/1")
    #expect(put.json?["photos"]?.arrayValue?.map { $0["localIdentifier"]?.stringValue } == ["a1", "a2", "a3"])
    let clouds = try server.cloudIDs(a.token, ["a1", "a2", "a3"]).map { $0["cloudIdentifier"]?.stringValue }
    #expect(photoClouds(put.json) == clouds)

    let onB = try server.call("GET", "/v1/journals/\(id)", token: b.token)
    #expect(onB.status == 200 && onB["entryCount"]?.intValue == 1)
    let expected = try JSONValue.parse(Array("""
        [{"entryID":"day/1","text":"Beach","version":"\(entryVersion)","photos":[
          {"cloudIdentifier":"\(clouds[0] ?? "")","localIdentifier":"b1"},
          {"cloudIdentifier":"\(clouds[1] ?? "")","error":{"name":"multipleIdentifiersFound","message":"More than one object matches; let the person choose.",
            "domain":"PHPhotosErrorDomain","code":3202,"localIdentifiers":["b2","b2copy"]}},
          {"cloudIdentifier":"\(clouds[2] ?? "")","error":{"name":"identifierNotFound","message":"No object with this identifier in the library.",
            "domain":"PHPhotosErrorDomain","code":3201}}]}]
        """.utf8))
    #expect(onB["entries"] == expected)
    // The content match was stored as a link: B maps b1 to A's identifier.
    #expect(try server.cloudIDs(b.token, ["b1"])[0]["cloudIdentifier"]?.stringValue == clouds[0])
    // Entry IDs with a slash are addressed with %2F.
    #expect(try server.call("DELETE", "/v1/journals/\(id)/entries/day%2F1", token: b.token).status == 204)
    #expect(try server.call("DELETE", "/v1/journals/\(id)/entries/day%2F1", token: b.token).status == 404)
}

@Test(arguments: TestEngine.available) func anEntryWithAPhotoThatCannotBeMappedIs422AndStoresNothing(_ engine: TestEngine) throws {
    let server = try APIServer(engine: engine)
    let (a, id) = try server.deviceWithJournal()
    let r = try server.call("PUT", "/v1/journals/\(id)/entries/e1", token: a.token, body: """
        {"text":"x","photos":[{"localIdentifier":"a1"},{"localIdentifier":"ghost"},{"cloudIdentifier":"not-a-cloud-id"}]}
        """)
    #expect(r.status == 422 && r.errorName == "unprocessable")
    let items = r.json?["error"]?["photos"]?.arrayValue ?? []
    #expect(items.map { $0["index"]?.intValue } == [1, 2])
    #expect(items.first?["localIdentifier"]?.stringValue == "ghost" && items.first?["error"]?["name"]?.stringValue == "identifierNotFound")
    #expect(items.last?["cloudIdentifier"]?.stringValue == "not-a-cloud-id" && items.last?["error"]?["name"]?.stringValue == "invalidIdentifier")
    let after = try server.call("GET", "/v1/journals/\(id)", token: a.token)
    #expect(after["entries"]?.arrayValue == [] && after["entryCount"]?.intValue == 0)

    // Bad bodies: 400 naming the field.
    let cases: [(body: String, field: String)] = [
        (#"{"photos":[]}"#, "text"),
        (#"{"text":"x"}"#, "photos"),
        (#"{"text":"x","photos":[{"localIdentifier":"a1","cloudIdentifier":"c"}]}"#, "photos"),
        (#"{"text":"x","photos":[{}]}"#, "photos"),
        (#"{"text":"x","photos":["a1"]}"#, "photos"),
        (#"{"text":"x","photos":[{"localIdentifier":7}]}"#, "photos.localIdentifier"),
    ]
    for c in cases {
        let bad = try server.call("PUT", "/v1/journals/\(id)/entries/e1", token: a.token, body: c.body)
        #expect(bad.status == 400 && bad.errorField == c.field, "\(c.body): \(bad.raw.body)")
    }
    let longID = String(repeating: "e", count: 256)
    #expect(try server.call("PUT", "/v1/journals/\(id)/entries/\(longID)", token: a.token, body: #"{"text":"","photos":[]}"#).errorField == "entryID")
}

@Test(arguments: TestEngine.available) func twoDevicesEditingOneEntryWithIfMatchOneWinsOneGets412AndNothingIsLost(_ engine: TestEngine) throws {
    let server = try APIServer(engine: engine)
    let account = try server.account()
    let a = try server.device(account.token, "A")
    let b = try server.device(account.token, "B")
    let id = try #require(try server.createJournal(a.token)["journalID"]?.stringValue)
    let base = try #require(try server.putEntry(a.token, id, "e", text: "base", locals: [])["version"]?.stringValue)

    let tokens = [a.token, b.token]
    let texts = ["edit from A", "edit from B"]
    let statuses = Statuses()
    DispatchQueue.concurrentPerform(iterations: 2) { i in
        let r = try? server.call("PUT", "/v1/journals/\(id)/entries/e", token: tokens[i], body: #"{"text":"\#(texts[i])","photos":[]}"#,
                                 headers: ["If-Match: \"\(base)\""])
        statuses.set(i, r)
    }
    let results = statuses.all
    let winner = try #require(results.firstIndex { $0?.status == 200 })
    let loser = 1 - winner
    let lost = try #require(results[loser])
    #expect(lost.status == 412 && lost.errorName == "versionMismatch")
    let current = try #require(results[winner]?["version"]?.stringValue)
    #expect(lost.json?["error"]?["version"]?.stringValue == current)

    // The loser rebases on the current version: both edits survive.
    let merged = try server.putEntry(tokens[loser], id, "e", text: texts[winner] + "; " + texts[loser], locals: [], headers: ["If-Match: \"\(current)\""])
    #expect(merged["text"]?.stringValue == texts[winner] + "; " + texts[loser])
    #expect(try server.call("GET", "/v1/journals/\(id)", token: a.token)["entries"]?[0]?["text"]?.stringValue == texts[winner] + "; " + texts[loser])

    // If-Match on an entry that does not exist yet is 412; malformed If-Match is 400; weak tags never match.
    let created = try server.call("PUT", "/v1/journals/\(id)/entries/new", token: a.token, body: #"{"text":"","photos":[]}"#, headers: ["If-Match: *"])
    #expect(created.status == 412 && created.errorName == "versionMismatch" && created.json?["error"]?["version"] == .null)
    let malformed = try server.call("PUT", "/v1/journals/\(id)/entries/e", token: a.token, body: #"{"text":"","photos":[]}"#, headers: ["If-Match: 12"])
    #expect(malformed.status == 400 && malformed.errorField == "If-Match")
    let mergedVersion = try #require(merged["version"]?.stringValue)
    #expect(try server.call("DELETE", "/v1/journals/\(id)/entries/e", token: a.token, headers: ["If-Match: W/\"\(mergedVersion)\""]).status == 412)
    #expect(try server.call("DELETE", "/v1/journals/\(id)/entries/e", token: a.token, headers: ["If-Match: \"x\", \"\(mergedVersion)\""]).status == 204)
}

/// The API (RFC 9110 §13.2.1): where the request without `If-Match` would be 404, it stays 404 with
/// it; only a PUT that would create an entry evaluates `If-Match` against nothing (412, tested above).
@Test(arguments: TestEngine.available) func ifMatchOnSomethingThatDoesNotExistIs404AsWithoutIt(_ engine: TestEngine) throws {
    let server = try APIServer(engine: engine)
    let a = try server.device(try server.account().token)
    let id = try #require(try server.createJournal(a.token)["journalID"]?.stringValue)
    let missingJournal = "/v1/journals/00000000-0000-4000-8000-000000000000"
    let cases: [(method: String, path: String, body: String?)] = [
        ("PUT", missingJournal, #"{"title":"x"}"#),
        ("DELETE", missingJournal, nil),
        ("PUT", missingJournal + "/entries/e", #"{"text":"","photos":[]}"#),
        ("DELETE", "/v1/journals/\(id)/entries/nope", nil),
        ("POST", "/v1/journals/\(id)/entries/nope/selection", #"{"cancelled":false,"localIdentifiers":[]}"#),
    ]
    for c in cases {
        for ifMatch in ["If-Match: *", "If-Match: \"1\""] {
            let r = try server.call(c.method, c.path, token: a.token, body: c.body, headers: [ifMatch])
            #expect(r.status == 404 && r.errorName == "notFound", "\(c.method) \(c.path) \(ifMatch)")
        }
        #expect(try server.call(c.method, c.path, token: a.token, body: c.body).status == 404, "\(c.method) \(c.path)")
    }
}

@Test(arguments: TestEngine.available) func thePickerExampleCancelledSessionsAndUnresolvedPhotosKeptAfterThePickedOnes(_ engine: TestEngine) throws {
    let server = try APIServer(engine: engine)
    let account = try server.account()
    let a = try server.device(account.token, "A")
    let b = try server.device(account.token, "B")
    try server.upsert(a.token, assets: [("ID:1", fingerprint(1)), ("ID:2", fingerprint(2)), ("ID:3", fingerprint(3)), ("onlyA", fingerprint(9))])
    let id = try #require(try server.createJournal(a.token)["journalID"]?.stringValue)
    let before = try server.putEntry(a.token, id, "e", locals: ["ID:1", "ID:2"])
    let c1 = try #require(photoClouds(before.json).first ?? nil)

    // The talk's example: ID:1 and ID:2 preselected, the person deselects 2 and adds 3.
    let picked = try server.call("POST", "/v1/journals/\(id)/entries/e/selection", token: a.token,
                                 body: #"{"cancelled":false,"localIdentifiers":["ID:1","ID:3"]}"#)
    #expect(picked.status == 200)
    let c3 = try server.cloudIDs(a.token, ["ID:3"])[0]["cloudIdentifier"]?.stringValue
    #expect(photoClouds(picked.json) == [c1, c3])
    #expect(picked.json?["photos"]?.arrayValue?.map { $0["localIdentifier"]?.stringValue } == ["ID:1", "ID:3"])
    let version = try #require(picked["version"]?.stringValue)
    #expect(picked.raw.header("ETag") == "\"\(version)\"")

    // A cancelled session changes nothing (localIdentifiers may be left out).
    let cancelled = try server.call("POST", "/v1/journals/\(id)/entries/e/selection", token: a.token, body: #"{"cancelled":true}"#)
    #expect(cancelled.status == 200 && cancelled.json == picked.json)

    // Photos B cannot resolve stay after B's picks, in their earlier order.
    _ = try server.putEntry(a.token, id, "e", locals: ["ID:1", "onlyA", "ID:3"])
    try server.upsert(b.token, assets: [("b1", fingerprint(1)), ("b7", fingerprint(7))])
    let onB = try server.call("POST", "/v1/journals/\(id)/entries/e/selection", token: b.token,
                              body: #"{"cancelled":false,"localIdentifiers":["b7","b1"]}"#)
    #expect(onB.status == 200)
    let cOnlyA = try server.cloudIDs(a.token, ["onlyA"])[0]["cloudIdentifier"]?.stringValue
    let c7 = try server.cloudIDs(b.token, ["b7"])[0]["cloudIdentifier"]?.stringValue
    #expect(photoClouds(onB.json) == [c7, c1, cOnlyA, c3])
    #expect(onB.json?["photos"]?.arrayValue?.map { $0["localIdentifier"]?.stringValue ?? $0["error"]?["name"]?.stringValue } == ["b7", "b1", "identifierNotFound", "identifierNotFound"])

    // Selection on an entry that does not exist is 404, with If-Match too; missing fields
    // are 400; If-Match is checked on an entry that exists.
    #expect(try server.call("POST", "/v1/journals/\(id)/entries/nope/selection", token: a.token, body: #"{"cancelled":false,"localIdentifiers":[]}"#).status == 404)
    #expect(try server.call("POST", "/v1/journals/\(id)/entries/nope/selection", token: a.token, body: #"{"cancelled":false,"localIdentifiers":[]}"#,
                            headers: ["If-Match: *"]).status == 404)
    #expect(try server.call("POST", "/v1/journals/\(id)/entries/e/selection", token: a.token, body: #"{"localIdentifiers":[]}"#).errorField == "cancelled")
    #expect(try server.call("POST", "/v1/journals/\(id)/entries/e/selection", token: a.token, body: #"{"cancelled":false}"#).errorField == "localIdentifiers")
    let stale = try server.call("POST", "/v1/journals/\(id)/entries/e/selection", token: a.token,
                                body: #"{"cancelled":false,"localIdentifiers":[]}"#, headers: ["If-Match: \"\(version)\""])
    #expect(stale.status == 412 && stale.json?["error"]?["version"]?.stringValue == onB["version"]?.stringValue)
    let ghost = try server.call("POST", "/v1/journals/\(id)/entries/e/selection", token: a.token, body: #"{"cancelled":false,"localIdentifiers":["ghost"]}"#)
    #expect(ghost.status == 422 && ghost.json?["error"]?["localIdentifiers"]?[0]?["localIdentifier"]?.stringValue == "ghost")
}

@Test(arguments: TestEngine.available) func theJournalChangeFeedPagesAndRejectsForeignTokens(_ engine: TestEngine) throws {
    let server = try APIServer(engine: engine) { $0.history.maxChanges = 4 }
    let account = try server.account()
    let a = try server.device(account.token, "A")
    let b = try server.device(account.token, "B")
    let start = try #require(try server.call("GET", "/v1/journals/token", token: a.token)["changeToken"]?.stringValue)
    #expect(try server.call("GET", "/v1/journals/token", token: b.token)["changeToken"]?.stringValue == start)

    let id = try #require(try server.createJournal(a.token)["journalID"]?.stringValue)
    try server.putEntry(b.token, id, "e1", locals: [])
    let all = try server.call("GET", "/v1/journals/changes?since=\(percentEncoded(start))", token: b.token)
    #expect(all.status == 200 && all["hasMore"]?.boolValue == false)
    let t1 = try #require(all["changes"]?[0]?["changeToken"]?.stringValue)
    let t2 = try #require(all["changes"]?[1]?["changeToken"]?.stringValue)
    let expected = try JSONValue.parse(Array("""
        {"changes":[
          {"changeToken":"\(t1)","journals":{"inserted":["\(id)"],"updated":[],"deleted":[]},"entries":{"inserted":[],"updated":[],"deleted":[]}},
          {"changeToken":"\(t2)","journals":{"inserted":[],"updated":["\(id)"],"deleted":[]},"entries":{"inserted":["\(id)/e1"],"updated":[],"deleted":[]}}],
         "changeToken":"\(t2)","hasMore":false}
        """.utf8))
    #expect(all.json == expected)
    #expect(try server.call("GET", "/v1/journals/token", token: a.token)["changeToken"]?.stringValue == t2)

    let page1 = try server.call("GET", "/v1/journals/changes?since=\(percentEncoded(start))&limit=1", token: a.token)
    #expect(page1["changes"]?.arrayValue?.count == 1 && page1["hasMore"]?.boolValue == true && page1["changeToken"]?.stringValue == t1)
    let page2 = try server.call("GET", "/v1/journals/changes?since=\(percentEncoded(t1))&limit=1", token: a.token)
    #expect(page2["changes"]?[0]?["changeToken"]?.stringValue == t2 && page2["hasMore"]?.boolValue == false)

    // Deleting the journal lists its entries as deleted too.
    #expect(try server.call("DELETE", "/v1/journals/\(id)", token: a.token).status == 204)
    let deleted = try server.call("GET", "/v1/journals/changes?since=\(percentEncoded(t2))", token: a.token)
    #expect(deleted["changes"]?[0]?["journals"]?["deleted"] == .array([.string(id)]))
    #expect(deleted["changes"]?[0]?["entries"]?["deleted"] == .array([.string(id + "/e1")]))

    // Foreign, library, garbled tokens: 400 invalidChangeToken; since required; limit bounds.
    let strangerToken = try #require(try server.call("GET", "/v1/journals/token", token: try server.device(try server.account("Other").token).token)["changeToken"]?.stringValue)
    let libraryToken = try #require(try server.call("GET", "/v1/library/token", token: a.token)["changeToken"]?.stringValue)
    let cases: [(query: String, name: String, field: String?)] = [
        ("?since=\(percentEncoded(strangerToken))", "invalidChangeToken", nil),
        ("?since=\(percentEncoded(libraryToken))", "invalidChangeToken", nil),
        ("?since=garbage", "invalidChangeToken", nil),
        ("", "badRequest", "since"),
        ("?since=\(percentEncoded(start))&limit=0", "badRequest", "limit"),
    ]
    for c in cases {
        let r = try server.call("GET", "/v1/journals/changes" + c.query, token: a.token)
        #expect(r.status == 400 && r.errorName == c.name && r.errorField == c.field, "\(c.query): \(r.raw.body)")
    }
    // Retention: 4 changes kept; more writes expire the start token with 410.
    for i in 0..<4 { _ = try server.createJournal(a.token, "j\(i)") }
    let expired = try server.call("GET", "/v1/journals/changes?since=\(percentEncoded(start))", token: a.token)
    #expect(expired.status == 410 && expired.errorName == "persistentChangeTokenExpired")
    #expect(try server.call("GET", "/v1/journals/changes?since=\(percentEncoded(start))", token: account.token).status == 403)
}

@Test(arguments: TestEngine.available) func aDeniedDeviceGets403AccessUserDeniedOnJournalReadsThatResolvePhotos(_ engine: TestEngine) throws {
    let server = try APIServer(engine: engine)
    let (a, id) = try server.deviceWithJournal()
    try server.putEntry(a.token, id, "e", locals: ["a1"])
    #expect(try server.call("PUT", "/v1/library/authorization", token: a.token, body: #"{"status":"denied"}"#).status == 200)
    for (method, path, body) in [
        ("GET", "/v1/journals/\(id)", nil),
        ("POST", "/v1/journals/\(id)/entries/e/selection", #"{"cancelled":false,"localIdentifiers":["a1"]}"#),
        ("PUT", "/v1/journals/\(id)/entries/e", #"{"text":"","photos":[{"localIdentifier":"a1"}]}"#),
    ] as [(String, String, String?)] {
        let r = try server.call(method, path, token: a.token, body: body)
        #expect(r.status == 403 && r.errorName == "accessUserDenied", "\(method) \(path): \(r.raw.body)")
        #expect(r.json?["error"]?["code"]?.intValue == 3311 && r.json?["error"]?["domain"]?.stringValue == "PHPhotosErrorDomain")
    }
    // Listing and the change feed resolve no photo: they keep working.
    #expect(try server.call("GET", "/v1/journals", token: a.token).status == 200)
    #expect(try server.call("GET", "/v1/journals/token", token: a.token).status == 200)
}

/// Responses written by concurrent iterations, each to its own slot.
final class Statuses: @unchecked Sendable {
    // @unchecked Sendable: every access holds `lock`.
    private let lock = NSLock()
    private var slots: [APIResponse?] = [nil, nil]
    func set(_ i: Int, _ r: APIResponse?) { self.lock.withLock { self.slots[i] = r } }
    var all: [APIResponse?] { self.lock.withLock { self.slots } }
}
