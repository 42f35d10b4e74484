import ConcordJSON
import ConcordTestSupport
import Foundation
import Synchronization
import Testing

@testable import ConcordApp

/// The API, "Write precondition": `If-Match` with the library's change token on
/// `POST /v1/library/changes` and `PUT /v1/library`, and the token's `ETag`.
extension APIServer {
    /// The device's current library change token, from `GET /v1/library/token` (its `ETag` checked).
    func libraryToken(_ deviceToken: String) throws -> String {
        let r = try self.call("GET", "/v1/library/token", token: deviceToken)
        let token = try #require(r["changeToken"]?.stringValue)
        #expect(r.raw.header("ETag") == "\"\(token)\"")
        return token
    }

    /// The local identifiers the device's history lists as inserted since `token`, and how many changes.
    func changes(_ deviceToken: String, since token: String) throws -> (count: Int, inserted: [String]) {
        let r = try self.call("GET", "/v1/library/changes?since=\(percentEncoded(token))", token: deviceToken)
        try #require(r.status == 200, "\(r.raw.body)")
        let changes = r["changes"]?.arrayValue ?? []
        return (changes.count, changes.flatMap { $0["assets"]?["inserted"]?.arrayValue?.compactMap(\.stringValue) ?? [] })
    }
}

/// `POST /v1/library/changes` of one asset.
private func oneAsset(_ n: Int) -> String {
    #"{"assets":{"upsert":[{"localIdentifier":"\#(assetID(n))","fingerprint":"\#(fingerprint(n))"}]}}"#
}

/// `PUT /v1/library` of the assets numbered `ns`.
private func library(_ ns: [Int]) -> String {
    #"{"assets":["# + ns.map { #"{"localIdentifier":"\#(assetID($0))","fingerprint":"\#(fingerprint($0))"}"# }.joined(separator: ",") + "]}"
}

@Test(arguments: TestEngine.available) func libraryWritesApplyWhenIfMatchNamesTheCurrentToken(_ engine: TestEngine) throws {
    let server = try APIServer(engine: engine)
    let account = try server.account()
    let device = try server.device(account.token)

    // The empty library's token (from the ETag) is a valid precondition.
    let empty = try server.libraryToken(device.token)
    let first = try server.call("POST", "/v1/library/changes", token: device.token, body: oneAsset(1), headers: ["If-Match: \"\(empty)\""])
    #expect(first.status == 200 && first["inserted"]?.intValue == 1, "\(first.raw.body)")
    let t1 = try #require(first["changeToken"]?.stringValue)
    #expect(try server.libraryToken(device.token) == t1)

    // The token a write answered is the next write's precondition; PUT likewise, `?reset=true` too.
    let put = try server.call("PUT", "/v1/library", token: device.token, body: library([1, 2]), headers: ["If-Match: \"\(t1)\""])
    #expect(put.status == 200 && put["inserted"]?.intValue == 1 && put["unchanged"]?.intValue == 1, "\(put.raw.body)")
    let t2 = try #require(put["changeToken"]?.stringValue)
    let reset = try server.call("PUT", "/v1/library?reset=true", token: device.token, body: library([2]), headers: ["If-Match: \"\(t2)\""])
    #expect(reset.status == 200 && reset["deleted"]?.intValue == 1, "\(reset.raw.body)")
    let t3 = try #require(reset["changeToken"]?.stringValue)

    // `*` applies whatever the token; a list applies when one of its strong tags is current
    // (commas and whitespace as RFC 9110 §5.6.1 allows, a second field line joined to the first).
    let star = try server.call("POST", "/v1/library/changes", token: device.token, body: oneAsset(3), headers: ["If-Match: *"])
    #expect(star.status == 200 && star["inserted"]?.intValue == 1, "\(star.raw.body)")
    let t4 = try #require(star["changeToken"]?.stringValue)
    let list = try server.call("POST", "/v1/library/changes", token: device.token, body: oneAsset(4),
                               headers: ["If-Match: \"\(t1)\" ,W/\"\(t4)\",, \"not-a-token\"", "If-Match: \"\(t4)\""])
    #expect(list.status == 200 && list["inserted"]?.intValue == 1, "\(list.raw.body)")
    let t5 = try #require(list["changeToken"]?.stringValue)
    let putList = try server.call("PUT", "/v1/library", token: device.token, body: library([2, 3, 4, 5]), headers: ["If-Match: \"\(t3)\", \"\(t5)\""])
    #expect(putList.status == 200 && putList["inserted"]?.intValue == 1, "\(putList.raw.body)")

    // Every write above is one change of the history.
    #expect(try server.changes(device.token, since: empty).count == 6)

    // A write that changes nothing with the current token: 200, the token stays.
    let t6 = try server.libraryToken(device.token)
    let same = try server.call("POST", "/v1/library/changes", token: device.token, body: oneAsset(5), headers: ["If-Match: \"\(t6)\""])
    #expect(same.status == 200 && same["unchanged"]?.intValue == 1 && same["changeToken"]?.stringValue == t6, "\(same.raw.body)")
}

@Test(arguments: TestEngine.available) func staleWeakOrForeignIfMatchIs412WithTheCurrentTokenAndStoresNothing(_ engine: TestEngine) throws {
    let server = try APIServer(engine: engine)
    let account = try server.account()
    let device = try server.device(account.token)
    let other = try server.device(account.token, "iPad")
    let stale = try server.libraryToken(device.token)
    let moved = try server.call("POST", "/v1/library/changes", token: device.token, body: oneAsset(1))
    let current = try #require(moved["changeToken"]?.stringValue)
    let otherToken = try server.libraryToken(other.token)

    let refused: [(method: String, target: String, body: String, ifMatch: String)] = [
        ("POST", "/v1/library/changes", oneAsset(2), "\"\(stale)\""),
        ("PUT", "/v1/library", library([1, 2]), "\"\(stale)\""),
        ("PUT", "/v1/library?reset=true", library([2]), "\"\(stale)\""),
        // A weak tag never matches, not even the current token (strong comparison).
        ("POST", "/v1/library/changes", oneAsset(2), "W/\"\(current)\""),
        ("PUT", "/v1/library", library([1, 2]), "W/\"\(current)\""),
        // Another device's token (of the same account) and an unknown string are tags that match nothing.
        ("POST", "/v1/library/changes", oneAsset(2), "\"\(otherToken)\""),
        ("PUT", "/v1/library", library([1, 2]), "\"x\", \"\(stale)\""),
        // Stale, even when the write would change nothing.
        ("POST", "/v1/library/changes", oneAsset(1), "\"\(stale)\""),
        ("PUT", "/v1/library", library([1]), "\"\(stale)\""),
    ]
    for c in refused {
        let r = try server.call(c.method, c.target, token: device.token, body: c.body, headers: ["If-Match: \(c.ifMatch)"])
        #expect(r.status == 412 && r.errorName == "versionMismatch", "\(c.method) \(c.target) \(c.ifMatch): \(r.raw.body)")
        // The current token in place of "version".
        #expect(r.json?["error"]?["changeToken"]?.stringValue == current && r.json?["error"]?["version"] == nil, "\(r.raw.body)")
    }
    // Nothing stored: the token, the history, the objects are what they were.
    #expect(try server.libraryToken(device.token) == current)
    #expect(try server.changes(device.token, since: current).count == 0)
    #expect(try server.call("GET", "/v1/library/objects/\(percentEncoded(assetID(2)))", token: device.token).status == 404)
    #expect(try server.call("GET", "/v1/library/objects/\(percentEncoded(assetID(1)))", token: device.token).status == 200)
    // The other device's token names its own library: it still works there.
    #expect(try server.call("POST", "/v1/library/changes", token: other.token, body: oneAsset(9), headers: ["If-Match: \"\(otherToken)\""]).status == 200)
}

@Test(arguments: TestEngine.available) func malformedIfMatchIs400AndTheBodyIsCheckedBeforeThePrecondition(_ engine: TestEngine) throws {
    let server = try APIServer(engine: engine)
    let account = try server.account()
    let device = try server.device(account.token)
    let stale = try server.libraryToken(device.token)
    let t1 = try #require(try server.call("POST", "/v1/library/changes", token: device.token, body: oneAsset(1))["changeToken"]?.stringValue)

    // Not `*` nor a list of quoted entity tags: 400 naming If-Match, whatever the token inside.
    for ifMatch in [t1, "\"\(t1)", "*, \"\(t1)\"", "\"\(t1)\" x", "W/ \"\(t1)\"", "\"a b\"", ","] {
        for (method, target, body) in [("POST", "/v1/library/changes", oneAsset(2)), ("PUT", "/v1/library", library([1, 2]))] {
            let r = try server.call(method, target, token: device.token, body: body, headers: ["If-Match: \(ifMatch)"])
            #expect(r.status == 400 && r.errorName == "badRequest" && r.errorField == "If-Match", "\(method) If-Match: \(ifMatch): \(r.raw.body)")
        }
    }

    // A body that is 400 or 422 stays so with a stale (or malformed) If-Match: the body is checked first,
    // also where the check needs what is stored (an identifier keeps its type; an album's assets exist).
    let album = #"{"assetCollections":{"upsert":[{"localIdentifier":"A/L0/040","assets":["missing/L0/001"]}]}}"#
    let retype = #"{"assetCollections":{"upsert":[{"localIdentifier":"\#(assetID(1))"}]}}"#
    let cases: [(method: String, target: String, body: String, status: Int, ifMatch: String)] = [
        ("POST", "/v1/library/changes", #"{"assets":{"upsert":[{"localIdentifier":""}]}}"#, 400, "\"\(stale)\""),
        ("POST", "/v1/library/changes", "{", 400, "\"\(stale)\""),
        ("POST", "/v1/library/changes", #"{"assets":{"upsert":[{"localIdentifier":""}]}}"#, 400, "unquoted"),
        ("POST", "/v1/library/changes", album, 422, "\"\(stale)\""),
        ("POST", "/v1/library/changes", album, 422, "W/\"\(t1)\", *"),
        ("POST", "/v1/library/changes", retype, 400, "\"\(stale)\""),
        ("PUT", "/v1/library", #"{"assets":[{"localIdentifier":"x","fingerprint":"short"}]}"#, 400, "\"\(stale)\""),
        ("PUT", "/v1/library", #"{"assetCollections":[{"localIdentifier":"A/L0/040","assets":["missing/L0/001"]}]}"#, 422, "\"\(stale)\""),
        ("PUT", "/v1/library", #"{"assetCollections":[{"localIdentifier":"\#(assetID(1))"}]}"#, 400, "\"\(stale)\""),
        ("PUT", "/v1/library", #"{"assetCollections":[{"localIdentifier":"\#(assetID(1))"}]}"#, 400, "\"\(t1)"),
    ]
    for c in cases {
        let r = try server.call(c.method, c.target, token: device.token, body: c.body, headers: ["If-Match: \(c.ifMatch)"])
        #expect(r.status == c.status && r.errorField != "If-Match", "\(c.method) \(c.body) If-Match: \(c.ifMatch): \(r.raw.body)")
    }
    #expect(try server.changes(device.token, since: t1).count == 0)
    #expect(try server.libraryToken(device.token) == t1)
}

/// `GET /v1/library/token`'s `ETag` is the body's token as a strong entity tag, and it is what the
/// writes take: `If-Match` parses it back to the token, unescaped.
@Test(arguments: TestEngine.available) func theTokensETagIsTheChangeTokenAndAWriteWithItApplies(_ engine: TestEngine) throws {
    let server = try APIServer(engine: engine)
    let account = try server.account()
    let device = try server.device(account.token)
    for n in 1...3 {
        let r = try server.call("GET", "/v1/library/token", token: device.token)
        let token = try #require(r["changeToken"]?.stringValue)
        let etag = try #require(r.raw.header("ETag"))
        #expect(etag == "\"\(token)\"" && !etag.hasPrefix("W/"))
        // Base64url only: every byte an `etagc`, nothing to escape.
        #expect(token.utf8.allSatisfy { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) })
        let head = try server.call("HEAD", "/v1/library/token", token: device.token)
        #expect(head.raw.header("ETag") == etag)
        let write = try server.call(n == 2 ? "PUT" : "POST", n == 2 ? "/v1/library" : "/v1/library/changes", token: device.token,
                                    body: n == 2 ? library([1, 2]) : oneAsset(n), headers: ["If-Match: \(etag)"])
        #expect(write.status == 200 && write["changeToken"]?.stringValue != token, "\(write.raw.body)")
    }
}

/// A POST retried with its Idempotency-Key is answered from the first answer, not re-evaluated
/// against a token the first send moved (that would look like a copy).
@Test func aRetriedChangeWithItsIdempotencyKeyIsNotTakenForAStaleOne() throws {
    let server = try APIServer()
    let account = try server.account()
    let device = try server.device(account.token)
    let token = try server.libraryToken(device.token)
    let headers = ["If-Match: \"\(token)\"", "Idempotency-Key: retry-1"]
    let first = try server.call("POST", "/v1/library/changes", token: device.token, body: oneAsset(1), headers: headers)
    let again = try server.call("POST", "/v1/library/changes", token: device.token, body: oneAsset(1), headers: headers)
    #expect(first.status == 200 && again.status == 200 && again.raw.body == first.raw.body, "\(again.raw.body)")
    #expect(try server.changes(device.token, since: token).count == 1)
}

/// Writers racing with one token: the check and the write are one step under the account's write
/// lock, so exactly one applies and every other one is 412 naming the winner's token. Each writer
/// sends objects no earlier round stored (a write that changes nothing keeps the token, so a second
/// one with the same token would rightly apply too).
private func raceOneToken(ports: [Int], deviceToken: String, token: String, writers: Int, round: Int) throws -> (winners: [String], refusedWith: [String], failures: [String]) {
    let winners = Mutex<[String]>([])
    let refused = Mutex<[String]>([])
    let failures = Mutex<[String]>([])
    DispatchQueue.concurrentPerform(iterations: writers) { w in
        let (method, target, body) = w % 2 == 0
            ? ("POST", "/v1/library/changes", oneAsset(100 * (round + 1) + w))
            : ("PUT", "/v1/library", library([100 * (round + 1) + w]))
        do {
            let headers = ["Authorization: Bearer \(deviceToken)", "Content-Type: application/json", "If-Match: \"\(token)\""]
            let r = APIResponse(raw: try rawRequest(port: ports[w % ports.count], method, target, headers: headers, body: body))
            switch r.status {
            case 200: winners.withLock { $0.append(r["changeToken"]?.stringValue ?? "?") }
            case 412: refused.withLock { $0.append(r.json?["error"]?["changeToken"]?.stringValue ?? "?") }
            default: failures.withLock { $0.append("\(r.status) \(r.raw.body)") }
            }
        } catch {
            failures.withLock { $0.append("\(error)") }
        }
    }
    return (winners.withLock { $0 }, refused.withLock { $0 }, failures.withLock { $0 })
}

@Test(arguments: TestEngine.available) func twoWritersWithOneTokenOneAppliesTheOtherIs412(_ engine: TestEngine) throws {
    let server = try APIServer(engine: engine)
    let account = try server.account()
    let device = try server.device(account.token)
    for round in 0..<5 {
        let token = try server.libraryToken(device.token)
        let writers = round == 0 ? 8 : 2
        let (winners, refused, failures) = try raceOneToken(ports: [server.port], deviceToken: device.token, token: token, writers: writers, round: round)
        #expect(failures == [])
        #expect(winners.count == 1 && refused.count == writers - 1, "round \(round): \(winners.count) applied, \(refused.count) refused")
        #expect(refused.allSatisfy { $0 == winners.first }, "the 412s name the winner's token")
        #expect(try server.changes(device.token, since: token).count == 1)
    }
}

/// The same race through two `concord serve` processes on one PostgreSQL database.
@Suite(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason + " (LibraryPreconditionInstancesTests)")))
struct LibraryPreconditionInstancesTests {
    @Test func writersWithOneTokenOnTwoInstancesOneApplies() throws {
        try TwoInstances.run { instances in
            let (_, phone, _) = try instances.accountWithPhoneAndTablet()
            for round in 0..<5 {
                let token = try #require(try send(instances.port2, "GET", "/v1/library/token", token: phone)["changeToken"]?.stringValue)
                let writers = round == 0 ? 8 : 2
                let (winners, refused, failures) = try raceOneToken(ports: [instances.port1, instances.port2], deviceToken: phone, token: token, writers: writers, round: round)
                #expect(failures == [])
                #expect(winners.count == 1 && refused.count == writers - 1, "round \(round): \(winners.count) applied, \(refused.count) refused")
                #expect(refused.allSatisfy { $0 == winners.first }, "the 412s name the winner's token")
                let feed = try send(instances.port1, "GET", "/v1/library/changes?since=\(percentEncoded(token))", token: phone)
                #expect(feed["changes"]?.arrayValue?.count == 1, "\(feed.raw.body)")
                // A stale token through the other instance: 412 with the current token.
                let current = try #require(winners.first)
                let r = try rawRequest(port: instances.port1, "POST", "/v1/library/changes",
                                       headers: ["Authorization: Bearer \(phone)", "Content-Type: application/json", "If-Match: \"\(token)\""], body: oneAsset(999))
                let stale = APIResponse(raw: r)
                #expect(stale.status == 412 && stale.json?["error"]?["changeToken"]?.stringValue == current, "\(stale.raw.body)")
            }
        }
    }
}
