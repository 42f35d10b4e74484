import ConcordJSON
import Foundation
import Testing

@testable import ConcordApp

@Test func historyListsEveryChangeAfterATokenInOrder() throws {
    let server = try APIServer()
    let account = try server.account()
    let device = try server.device(account.token)
    let other = try server.device(account.token, "Other")

    // The token of an empty library is valid and yields every later change.
    let empty = try server.call("GET", "/v1/library/token", token: device.token)
    #expect(empty.status == 200)
    let start = try #require(empty["changeToken"]?.stringValue)
    let none = try server.call("GET", "/v1/library/changes?since=\(percentEncoded(start))", token: device.token)
    #expect(none["changes"]?.arrayValue == [] && none["changeToken"]?.stringValue == start && none["hasMore"]?.boolValue == false)

    let t1 = try #require(try server.upsert(device.token, assets: [("a", fingerprint(1)), ("b", fingerprint(2))])["changeToken"]?.stringValue)
    let t2 = try #require(try server.call("POST", "/v1/library/changes", token: device.token, body: """
        {"assets":{"upsert":[{"localIdentifier":"a","fingerprint":"\(fingerprint(1))","isFavorite":true}],"delete":["b"]},
         "assetCollections":{"upsert":[{"localIdentifier":"A","fingerprint":"\(fingerprint(3))","assets":["a"]}]}}
        """)["changeToken"]?.stringValue)
    #expect(try server.call("GET", "/v1/library/token", token: device.token)["changeToken"]?.stringValue == t2)

    let all = try server.call("GET", "/v1/library/changes?since=\(percentEncoded(start))", token: device.token)
    #expect(all.status == 200)
    let expected = try JSONValue.parse(Array("""
        {"changes":[
          {"changeToken":"\(t1)","assets":{"inserted":["a","b"],"updated":[],"deleted":[]},
           "assetCollections":{"inserted":[],"updated":[],"deleted":[]},"collectionLists":{"inserted":[],"updated":[],"deleted":[]}},
          {"changeToken":"\(t2)","assets":{"inserted":[],"updated":["a"],"deleted":["b"]},
           "assetCollections":{"inserted":["A"],"updated":[],"deleted":[]},"collectionLists":{"inserted":[],"updated":[],"deleted":[]}}],
         "changeToken":"\(t2)","hasMore":false}
        """.utf8))
    #expect(all.json == expected)

    // Paging with limit: hasMore, and the answer's token is the next `since`.
    let page1 = try server.call("GET", "/v1/library/changes?since=\(percentEncoded(start))&limit=1", token: device.token)
    #expect(page1["changes"]?.arrayValue?.count == 1 && page1["hasMore"]?.boolValue == true && page1["changeToken"]?.stringValue == t1)
    let page2 = try server.call("GET", "/v1/library/changes?since=\(percentEncoded(t1))&limit=1", token: device.token)
    #expect(page2["changes"]?[0]?["changeToken"]?.stringValue == t2 && page2["hasMore"]?.boolValue == false)

    // Errors: since required, limit in 1...10000, tokens of this device only.
    let otherToken = try #require(try server.call("GET", "/v1/library/token", token: other.token)["changeToken"]?.stringValue)
    let cases: [(query: String, name: String, field: String?)] = [
        ("", "badRequest", "since"),
        ("?limit=5", "badRequest", "since"),
        ("?since=\(percentEncoded(start))&limit=0", "badRequest", "limit"),
        ("?since=\(percentEncoded(start))&limit=10001", "badRequest", "limit"),
        ("?since=\(percentEncoded(start))&limit=ten", "badRequest", "limit"),
        ("?since=\(percentEncoded(otherToken))", "invalidChangeToken", nil),
        ("?since=garbage", "invalidChangeToken", nil),
        ("?since=", "invalidChangeToken", nil),
        ("?since=\(percentEncoded(String(t2.dropLast()) + (t2.last == "A" ? "B" : "A")))", "invalidChangeToken", nil),
    ]
    for c in cases {
        let r = try server.call("GET", "/v1/library/changes" + c.query, token: device.token)
        #expect(r.status == 400 && r.errorName == c.name && r.errorField == c.field, "\(c.query): \(r.raw.body)")
    }
    #expect(try server.call("GET", "/v1/library/changes?since=\(percentEncoded(start))&limit=10000", token: device.token).status == 200)
    #expect(try server.call("GET", "/v1/library/changes?since=\(percentEncoded(start))", token: account.token).status == 403)
    #expect(try server.call("GET", "/v1/library/token", token: nil).status == 401)

    // Another account's device token cannot read this device's history either.
    let stranger = try server.device(try server.account("Other").token)
    #expect(try server.call("GET", "/v1/library/changes?since=\(percentEncoded(start))", token: stranger.token).errorName == "invalidChangeToken")
}

@Test func tokensOlderThanTheHistoryKeptExpireWith410() throws {
    let server = try APIServer { $0.history.maxChanges = 2 }
    let account = try server.account()
    let device = try server.device(account.token)
    let start = try #require(try server.call("GET", "/v1/library/token", token: device.token)["changeToken"]?.stringValue)
    var tokens: [String] = []
    for i in 1...4 {
        tokens.append(try #require(try server.upsert(device.token, assets: [("a\(i)", fingerprint(i))])["changeToken"]?.stringValue))
    }
    for since in [start, tokens[0]] {
        let r = try server.call("GET", "/v1/library/changes?since=\(percentEncoded(since))", token: device.token)
        #expect(r.status == 410 && r.errorName == "persistentChangeTokenExpired", "\(r.raw.body)")
        #expect(r.json?["error"]?["code"]?.intValue == 3105 && r.json?["error"]?["domain"]?.stringValue == "PHPhotosErrorDomain")
    }
    // The last two changes are kept.
    let kept = try server.call("GET", "/v1/library/changes?since=\(percentEncoded(tokens[1]))", token: device.token)
    #expect(kept.status == 200 && kept["changes"]?.arrayValue?.map { $0["changeToken"]?.stringValue } == [tokens[2], tokens[3]])
}
