import ConcordTestSupport
import Foundation
import Testing

/// A warm mapping request asks PostgreSQL who holds its token and for its device with the account's
/// mapping version on every request, each in one statement without a transaction around it; nothing
/// of it is cached. So a revocation or a device's new authorization acknowledged through one
/// `concord serve` process holds for the very next request through the other, whose previous
/// request with the same token was a warm one (token known, account's index loaded).
@Suite(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason + " (WarmReadsAcrossInstancesTests)")))
struct WarmReadsAcrossInstancesTests {
    @Test func aRevocationThroughOneInstanceHoldsForTheNextWarmRequestThroughTheOther() throws {
        try TwoInstances.run { instances in
            let (one, two) = (instances.port1, instances.port2)

            let account = try send(one, "POST", "/v1/accounts", token: testAdminToken, body: #"{"name":"Warm"}"#)
            var accountToken = try #require(account["accountToken"]?.stringValue)
            func newDevice(_ name: String) throws -> (id: String, token: String) {
                let d = try send(one, "POST", "/v1/devices", token: accountToken, body: #"{"name":"\#(name)"}"#)
                return (try #require(d["deviceID"]?.stringValue), try #require(d["deviceToken"]?.stringValue))
            }
            let phone = try newDevice("Phone"), tablet = try newDevice("Tablet")
            for (device, id) in [(phone, "p/L0/001"), (tablet, "t/L0/001")] {
                let r = try send(one, "POST", "/v1/library/changes", token: device.token,
                                 body: #"{"assets":{"upsert":[{"localIdentifier":"\#(id)","fingerprint":"\#(fingerprint(1))"}]}}"#)
                try #require(r.status == 200, "\(r.raw.body)")
            }
            func map(_ port: Int, _ token: String, _ id: String) throws -> APIResponse {
                try send(port, "POST", "/v1/library/cloud-identifiers", token: token, body: #"{"localIdentifiers":["\#(id)"]}"#)
            }
            // Warm on both instances: every token used, the account's index loaded.
            for port in [one, two] {
                #expect(try map(port, phone.token, "p/L0/001").status == 200)
                #expect(try map(port, tablet.token, "t/L0/001").status == 200)
            }

            // The phone's token rotated through one: the old token is refused through two at once.
            let rotated = try send(one, "POST", "/v1/devices/\(phone.id)/token", token: accountToken)
            let phoneToken = try #require(rotated["deviceToken"]?.stringValue)
            #expect(try map(two, phone.token, "p/L0/001").status == 401)
            #expect(try map(two, phoneToken, "p/L0/001").status == 200)

            // Denied through two (by the phone itself), then authorized again: one answers accordingly at once.
            #expect(try send(two, "PUT", "/v1/library/authorization", token: phoneToken, body: #"{"status":"denied"}"#).status == 200)
            #expect(try map(one, phoneToken, "p/L0/001").status == 403)
            #expect(try send(two, "PUT", "/v1/library/authorization", token: phoneToken, body: #"{"status":"authorized"}"#).status == 200)
            #expect(try map(one, phoneToken, "p/L0/001").status == 200)

            // The tablet deleted through two: its token is refused through one at once.
            #expect(try map(one, tablet.token, "t/L0/001").status == 200)
            #expect(try send(two, "DELETE", "/v1/devices/\(tablet.id)", token: accountToken).status == 204)
            #expect(try map(one, tablet.token, "t/L0/001").status == 401)

            // The account token rotated through two: the old one is refused through one.
            #expect(try send(one, "GET", "/v1/devices", token: accountToken).status == 200)
            let newAccountToken = try #require(try send(two, "POST", "/v1/account/token", token: accountToken)["accountToken"]?.stringValue)
            #expect(try send(one, "GET", "/v1/devices", token: accountToken).status == 401)
            accountToken = newAccountToken

            // The account deleted through one: the phone's token is refused through two.
            #expect(try map(two, phoneToken, "p/L0/001").status == 200)
            #expect(try send(one, "DELETE", "/v1/account", token: accountToken).status == 204)
            #expect(try map(two, phoneToken, "p/L0/001").status == 401)
        }
    }
}
