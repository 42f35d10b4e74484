import ConcordJSON
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordApp

/// Over real sockets on both engines: tokens never at rest in plaintext (idempotency
/// answers), a deleted account's keys gone with it, and byte bounds on kept answers, history and
/// journal answers.
@Suite struct DataBoundsTests {
    static func post(_ server: APIServer, _ target: String, token: String, key: String, body: String) throws -> APIResponse {
        try IdempotencyTests.post(server.port, target, token: token, key: key, body: body)
    }

    /// The bytes of the SQLite database and its write-ahead log.
    static func databaseBytes(_ server: APIServer) -> [UInt8] {
        ["concord.sqlite", "concord.sqlite-wal"].flatMap { name in
            (try? Data(contentsOf: server.directory.appendingPathComponent(name))).map(Array.init) ?? []
        }
    }

    static func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let n = Array(needle.utf8)
        guard haystack.count >= n.count else { return false }
        return (0...(haystack.count - n.count)).contains { i in haystack[i] == n[0] && Array(haystack[i..<(i + n.count)]) == n }
    }

    // MARK: Defect 1: tokens at rest

    @Test(arguments: TestEngine.available)
    func aTokenIssuingAnswerIsNeverKeptAndItsResendIsToldWhatWasCreated(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine)
        var tokens: [String] = []

        // Account creation (admin): the first answer has the token; the resend is a replayed 409 without it.
        let a1 = try Self.post(server, "/v1/accounts", token: testAdminToken, key: "acc", body: #"{"name":"Keyed"}"#)
        #expect(a1.status == 201)
        let accountID = try #require(a1["accountID"]?.stringValue)
        let accountToken = try #require(a1["accountToken"]?.stringValue)
        tokens.append(accountToken)
        let a2 = try Self.post(server, "/v1/accounts", token: testAdminToken, key: "acc", body: #"{"name":"Keyed"}"#)
        #expect(a2.status == 409 && a2.errorName == "idempotencyKeyAnswerLost")
        #expect(a2["error"]?["reason"]?.stringValue == "tokenNotKept" && a2["error"]?["status"]?.doubleValue == 201)
        #expect(a2["error"]?["accountID"]?.stringValue == accountID)
        #expect(a2.raw.header("Idempotent-Replayed") == "true" && !a2.raw.body.contains(accountToken))
        // Nothing ran twice: still one account behind the key, and its token works.
        #expect(try server.call("GET", "/v1/devices", token: accountToken).status == 200)

        // Device creation (account token).
        let d1 = try Self.post(server, "/v1/devices", token: accountToken, key: "dev", body: #"{"name":"Phone"}"#)
        let deviceID = try #require(d1["deviceID"]?.stringValue)
        let deviceToken = try #require(d1["deviceToken"]?.stringValue)
        tokens.append(deviceToken)
        let d2 = try Self.post(server, "/v1/devices", token: accountToken, key: "dev", body: #"{"name":"Phone"}"#)
        #expect(d2.status == 409 && d2["error"]?["reason"]?.stringValue == "tokenNotKept" && d2["error"]?["deviceID"]?.stringValue == deviceID)
        #expect(!d2.raw.body.contains(deviceToken))
        #expect(try server.call("GET", "/v1/devices", token: accountToken)["devices"]?.arrayValue?.count == 1)

        // Device token rotation (account token).
        let r1 = try Self.post(server, "/v1/devices/\(deviceID)/token", token: accountToken, key: "rot", body: "{}")
        #expect(r1.status == 200)
        tokens.append(try #require(r1["deviceToken"]?.stringValue))
        let r2 = try Self.post(server, "/v1/devices/\(deviceID)/token", token: accountToken, key: "rot", body: "{}")
        #expect(r2.status == 409 && r2["error"]?["deviceID"]?.stringValue == deviceID && !r2.raw.body.contains(tokens[2]))

        // A successor (account token).
        let s1 = try Self.post(server, "/v1/devices/\(deviceID)/successor", token: accountToken, key: "succ", body: #"{"name":"New phone"}"#)
        #expect(s1.status == 201)
        let successorID = try #require(s1["deviceID"]?.stringValue)
        tokens.append(try #require(s1["deviceToken"]?.stringValue))
        let s2 = try Self.post(server, "/v1/devices/\(deviceID)/successor", token: accountToken, key: "succ", body: #"{"name":"New phone"}"#)
        #expect(s2.status == 409 && s2["error"]?["deviceID"]?.stringValue == successorID && s2["error"]?["replaces"]?.stringValue == deviceID)
        #expect(!s2.raw.body.contains(tokens[3]))

        // Account token rotation: its key stays with the old token, which is 401 from then on.
        let t1 = try Self.post(server, "/v1/account/token", token: accountToken, key: "acc-rot", body: "{}")
        #expect(t1.status == 200)
        let newAccountToken = try #require(t1["accountToken"]?.stringValue)
        tokens.append(newAccountToken)
        #expect(try Self.post(server, "/v1/account/token", token: accountToken, key: "acc-rot", body: "{}").status == 401)

        // Other answers are kept whole, as before.
        let phone = try server.device(newAccountToken)
        let j1 = try Self.post(server, "/v1/journals", token: phone.token, key: "j", body: #"{"title":"Kept"}"#)
        let j2 = try Self.post(server, "/v1/journals", token: phone.token, key: "j", body: #"{"title":"Kept"}"#)
        #expect(j1.status == 201 && j2.status == 201 && j2.raw.body == j1.raw.body)

        // No token issued above is anywhere in the SQLite database (the file `concord backup` copies).
        if engine == .sqlite {
            let bytes = Self.databaseBytes(server)
            #expect(!bytes.isEmpty)
            for token in tokens { #expect(!Self.contains(bytes, token), "a token is stored in plaintext") }
        }
    }

    // MARK: Defect 9: a deleted account's keys

    @Test(arguments: TestEngine.available)
    func aDeletedAccountsKeyNoLongerAnswersItsID(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine)
        for (i, deleteAsAdmin) in [false, true].enumerated() {
            let key = "create-\(i)"
            let first = try Self.post(server, "/v1/accounts", token: testAdminToken, key: key, body: #"{"name":"Short-lived"}"#)
            let dead = try #require(first["accountID"]?.stringValue)
            let token = try #require(first["accountToken"]?.stringValue)
            let deleted = deleteAsAdmin ? try server.call("DELETE", "/v1/accounts/\(dead)", token: testAdminToken)
                                        : try server.call("DELETE", "/v1/account", token: token)
            #expect(deleted.status == 204)
            // The key went with the account: the resend runs as a new request, about a new account.
            let again = try Self.post(server, "/v1/accounts", token: testAdminToken, key: key, body: #"{"name":"Short-lived"}"#)
            #expect(!again.raw.body.contains(dead))
            #expect(again.status == 201 && again.raw.header("Idempotent-Replayed") == nil)
            #expect(again["accountID"]?.stringValue != dead)
        }
    }

    // MARK: Defect 7: kept answers bounded per account

    @Test(arguments: TestEngine.available)
    func keptAnswersAreBoundedPerAccount(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine) { $0.dataBounds.idempotencyBytesPerAccount = 6000 }
        let account = try server.account()
        let phone = try server.device(account.token)
        let body = #"{"title":"\#(String(repeating: "t", count: 1000))"}"#
        var kept: [String] = [], notKept: [String] = []
        var refused: APIResponse?
        for i in 1...20 {
            let key = "k\(i)"
            let first = try Self.post(server, "/v1/journals", token: phone.token, key: key, body: body)
            if first.status == 403 { refused = first; break }
            #expect(first.status == 201)
            let again = try Self.post(server, "/v1/journals", token: phone.token, key: key, body: body)
            #expect(again.raw.header("Idempotent-Replayed") == "true")
            if again.status == 201 {
                #expect(again.raw.body == first.raw.body)
                kept.append(key)
            } else {
                #expect(again.status == 409 && again.errorName == "idempotencyKeyAnswerLost")
                #expect(again["error"]?["reason"]?.stringValue == "answerTooLarge" && again["error"]?["status"]?.doubleValue == 201)
                notKept.append(key)
            }
        }
        #expect(!kept.isEmpty && !notKept.isEmpty, "kept \(kept), not kept \(notKept)")
        let refusal = try #require(refused)
        #expect(refusal.errorName == "quotaExceeded")
        #expect(refusal["error"]?["quota"]?.stringValue == "idempotencyBytesPerAccount" && refusal["error"]?["limit"]?.doubleValue == 6000)
        // The refused request ran nothing; a request without a key still runs.
        #expect(try server.call("GET", "/v1/journals", token: phone.token)["journals"]?.arrayValue?.count == kept.count + notKept.count)
        #expect(try server.call("POST", "/v1/journals", token: phone.token, body: body).status == 201)
        // Another account has its own room.
        let other = try server.device(try server.account("Other").token)
        #expect(try Self.post(server, "/v1/journals", token: other.token, key: "k1", body: body).status == 201)
    }

    // MARK: Defect 7: history bounded in bytes

    @Test(arguments: TestEngine.available)
    func historyIsBoundedInBytes(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine) { $0.dataBounds.historyBytesPerDevice = 20_000 }
        let account = try server.account()
        let phone = try server.device(account.token)
        func token() throws -> String { try #require(try server.call("GET", "/v1/library/token", token: phone.token)["changeToken"]?.stringValue) }
        func changes(since: String) throws -> APIResponse { try server.call("GET", "/v1/library/changes?since=\(percentEncoded(since))", token: phone.token) }
        let t0 = try token()
        try server.upsert(phone.token, assets: (0..<300).map { (assetID($0), fingerprint($0)) })   // ~14 KB of details
        let t1 = try token()
        #expect(try changes(since: t0)["changes"]?.arrayValue?.count == 1)
        try server.upsert(phone.token, assets: (300..<600).map { (assetID($0), fingerprint($0)) })
        // Both changes together pass 20 000 bytes: the older one is pruned, its token expired.
        let expired = try changes(since: t0)
        #expect(expired.status == 410 && expired.errorName == "persistentChangeTokenExpired")
        let kept = try changes(since: t1)
        #expect(kept.status == 200 && kept["changes"]?.arrayValue?.count == 1)
    }

    // MARK: Defect 10: journal answers bounded

    @Test(arguments: TestEngine.available)
    func aLargeJournalIsAnsweredInPagesAndASmallOneWhole(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine) { $0.dataBounds.journalAnswerBytes = 1600 }
        let account = try server.account()
        let phone = try server.device(account.token)
        func photos(_ range: Range<Int>) -> String {
            "[" + range.map { #"{"cloudIdentifier":"\#(UUID().uuidString):001:\#(fingerprint($0))"}"# }.joined(separator: ",") + "]"
        }
        let journalID = try #require(try server.call("POST", "/v1/journals", token: phone.token, body: #"{"title":"Big"}"#)["journalID"]?.stringValue)
        let path = "/v1/journals/\(journalID)"
        func put(_ entry: String, _ range: Range<Int>) throws {
            let r = try server.call("PUT", "\(path)/entries/\(entry)", token: phone.token, body: #"{"text":"\#(entry)","photos":\#(photos(range))}"#)
            try #require(r.status == 200, "\(r.raw.body)")
        }
        try put("e1", 0..<3)
        try put("e2", 3..<5)
        // Each entry counts 132 bytes + 256 a photo: e1 and e2 take 1544 of 1600, the whole journal,
        // answered exactly as before (no "hasMore").
        let small = try server.call("GET", path, token: phone.token)
        #expect(small.status == 200 && small["hasMore"] == nil)
        #expect(small["entries"]?.arrayValue?.map { $0["entryID"]?.stringValue } == ["e1", "e2"])

        try put("e3", 5..<9)
        try put("e4", 9..<10)
        // e3 passes 1600: pages of entries within it, each with at least one entry.
        let first = try server.call("GET", path, token: phone.token)
        #expect(first.status == 200 && first["hasMore"]?.boolValue == true)
        #expect(first["entries"]?.arrayValue?.map { $0["entryID"]?.stringValue } == ["e1", "e2"])
        #expect(first["entryCount"]?.doubleValue == 4)
        let second = try server.call("GET", "\(path)?after=e2", token: phone.token)
        #expect(second["hasMore"]?.boolValue == false)
        #expect(second["entries"]?.arrayValue?.map { $0["entryID"]?.stringValue } == ["e3", "e4"])
        #expect(second.raw.header("ETag") == first.raw.header("ETag"))
        // An explicit page is cut by the photos too.
        let limited = try server.call("GET", "\(path)?limit=3", token: phone.token)
        #expect(limited["entries"]?.arrayValue?.count == 2 && limited["hasMore"]?.boolValue == true)
        // One entry over the bound is answered alone.
        try put("e5", 10..<17)
        let alone = try server.call("GET", "\(path)?after=e4", token: phone.token)
        #expect(alone["entries"]?.arrayValue?.map { $0["entryID"]?.stringValue } == ["e5"] && alone["hasMore"]?.boolValue == false)
        #expect(alone["entries"]?[0]?["photos"]?.arrayValue?.count == 7)
    }
}
