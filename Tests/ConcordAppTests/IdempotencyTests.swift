import ConcordHTTP
import ConcordJSON
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordApp

/// `Idempotency-Key` on POST requests, over a real socket on both engines: a resend
/// replays the first answer and creates nothing new; the key on a different request is 422.
@Suite struct IdempotencyTests {
    static func post(_ port: Int, _ target: String, token: String, key: String?, body: String) throws -> APIResponse {
        var headers = ["Authorization: Bearer \(token)", "Content-Type: application/json"]
        if let key { headers.append("Idempotency-Key: \(key)") }
        return APIResponse(raw: try rawRequest(port: port, "POST", target, headers: headers, body: body))
    }

    @Test(arguments: TestEngine.available)
    func aResendReplaysTheFirstAnswerAndCreatesNothingNew(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine)
        let account = try server.account()
        let phone = try server.device(account.token)

        // A journal: created once, the resend answers the same 201 (same ID), marked as replayed.
        let first = try Self.post(server.port, "/v1/journals", token: phone.token, key: "journal-1", body: #"{"title":"Trip"}"#)
        let again = try Self.post(server.port, "/v1/journals", token: phone.token, key: "journal-1", body: #"{"title":"Trip"}"#)
        #expect(first.status == 201 && again.status == 201)
        #expect(again.raw.body == first.raw.body)
        #expect(again.raw.header("Idempotent-Replayed") == "true")
        #expect(first.raw.header("Idempotent-Replayed") == nil)
        #expect(again.raw.header("ETag") == first.raw.header("ETag"))
        #expect(try server.call("GET", "/v1/journals", token: phone.token)["journals"]?.arrayValue?.count == 1)

        // A device, through the account token.
        let d1 = try Self.post(server.port, "/v1/devices", token: account.token, key: "device-1", body: #"{"name":"iPad"}"#)
        let d2 = try Self.post(server.port, "/v1/devices", token: account.token, key: "device-1", body: #"{"name":"iPad"}"#)
        // A token-issuing answer is never kept (tokens exist at rest only as hashes): the
        // resend is a replayed 409 naming the device, without its token.
        #expect(d1.status == 201 && d2.status == 409 && d2["error"]?["reason"]?.stringValue == "tokenNotKept")
        #expect(d2["error"]?["deviceID"] == d1["deviceID"] && d2.raw.header("Idempotent-Replayed") == "true")
        #expect(try server.call("GET", "/v1/devices", token: account.token)["devices"]?.arrayValue?.count == 2)

        // A library change: one history entry, not two.
        let since = try #require(try server.call("GET", "/v1/library/token", token: phone.token)["changeToken"]?.stringValue)
        let change = #"{"assets":{"upsert":[{"localIdentifier":"A/L0/001","fingerprint":"\#(fingerprint(1))"}]}}"#
        let c1 = try Self.post(server.port, "/v1/library/changes", token: phone.token, key: "change-1", body: change)
        let c2 = try Self.post(server.port, "/v1/library/changes", token: phone.token, key: "change-1", body: change)
        #expect(c1.status == 200 && c2.raw.body == c1.raw.body)
        #expect(try server.call("GET", "/v1/library/changes?since=\(percentEncoded(since))", token: phone.token)["changes"]?.arrayValue?.count == 1)

        // An account, through the admin token.
        let a1 = try Self.post(server.port, "/v1/accounts", token: testAdminToken, key: "account-1", body: #"{"name":"Once"}"#)
        let a2 = try Self.post(server.port, "/v1/accounts", token: testAdminToken, key: "account-1", body: #"{"name":"Once"}"#)
        #expect(a1.status == 201 && a2.status == 409 && a2["error"]?["accountID"] == a1["accountID"])
    }

    @Test(arguments: TestEngine.available)
    func theSameKeyOnADifferentRequestIsRefusedAndKeysArePerToken(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine)
        let (account, phone, tablet) = try server.phoneAndTablet()
        #expect(try Self.post(server.port, "/v1/journals", token: phone.token, key: "k", body: #"{"title":"One"}"#).status == 201)
        let reused = try Self.post(server.port, "/v1/journals", token: phone.token, key: "k", body: #"{"title":"Two"}"#)
        #expect(reused.status == 422)
        #expect(reused["error"]?["name"]?.stringValue == "idempotencyKeyReused")
        // Another route is another request too.
        #expect(try Self.post(server.port, "/v1/devices", token: account.token, key: "k", body: #"{"name":"X"}"#).status == 201)
        // Another token's key of the same name is its own.
        #expect(try Self.post(server.port, "/v1/journals", token: tablet.token, key: "k", body: #"{"title":"Two"}"#).status == 201)
        #expect(try server.call("GET", "/v1/journals", token: phone.token)["journals"]?.arrayValue?.count == 2)
    }

    @Test func aClientErrorIsReplayedTooAndBadKeysAreRefused() throws {
        let server = try APIServer()
        let account = try server.account()
        let phone = try server.device(account.token)
        let bad = try Self.post(server.port, "/v1/journals", token: phone.token, key: "bad-1", body: #"{"title":""}"#)
        #expect(bad.status == 400)
        let again = try Self.post(server.port, "/v1/journals", token: phone.token, key: "bad-1", body: #"{"title":""}"#)
        #expect(again.status == 400 && again.raw.header("Idempotent-Replayed") == "true" && again.raw.body == bad.raw.body)
        for key in [String(repeating: "x", count: 256), "with space", "caf\u{E9}"] {
            let r = try Self.post(server.port, "/v1/journals", token: phone.token, key: key, body: #"{"title":"T"}"#)
            #expect(r.status == 400, "\(key)")
            #expect(r["error"]?["field"]?.stringValue == "Idempotency-Key")
        }
        #expect(try server.call("GET", "/v1/journals", token: phone.token)["journals"]?.arrayValue?.isEmpty == true)
        // Lookups ignore the header: they are safe to repeat as they are.
        let lookup = #"{"localIdentifiers":["none/L0/001"]}"#
        #expect(try Self.post(server.port, "/v1/library/cloud-identifiers", token: phone.token, key: "l", body: lookup).status == 200)
        let other = #"{"localIdentifiers":["other/L0/001"]}"#
        #expect(try Self.post(server.port, "/v1/library/cloud-identifiers", token: phone.token, key: "l", body: other).status == 200)
    }

    @Test(arguments: [
        HTTPResponse(status: 201, headers: HTTPHeaders([("Content-Type", "application/json"), ("ETag", "\"3\""), ("Location", "/v1/journals/X")]),
                     body: Array(#"{"a":"b\n\nc"}"#.utf8)),
        HTTPResponse(status: 204),
        HTTPResponse(status: 412, headers: HTTPHeaders([("Content-Type", "application/json"), ("Date", "dropped")]), body: Array("{}".utf8)),
    ])
    func storedAnswersDecodeToWhatWasAnswered(_ response: HTTPResponse) throws {
        let decoded = try #require(StoredAnswer.decode(StoredAnswer.encode(response)))
        #expect(decoded.status == response.status)
        #expect(decoded.body == response.body)
        #expect(decoded.headers.map { "\($0.name): \($0.value)" } == response.headers.filter { $0.name != "Date" }.map { "\($0.name): \($0.value)" })
    }
}

/// Two `concord serve` processes on one PostgreSQL database: a resend through the other
/// instance replays the first answer.
@Suite(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason)))
struct IdempotencyAcrossInstancesTests {
    @Test func aResendThroughAnotherInstanceReplays() throws {
        try TwoInstances.run { instances in
            let (_, phone, _) = try instances.accountWithPhoneAndTablet()
            let first = try IdempotencyTests.post(instances.port1, "/v1/journals", token: phone, key: "across", body: #"{"title":"Across"}"#)
            let again = try IdempotencyTests.post(instances.port2, "/v1/journals", token: phone, key: "across", body: #"{"title":"Across"}"#)
            #expect(first.status == 201 && again.status == 201 && again.raw.body == first.raw.body)
            #expect(again.raw.header("Idempotent-Replayed") == "true")
            #expect(try send(instances.port2, "GET", "/v1/journals", token: phone)["journals"]?.arrayValue?.count == 1)
        }
    }
}
