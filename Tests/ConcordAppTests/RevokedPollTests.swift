import ConcordJSON
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordApp

/// Every poll held with a token that is then revoked — rotated, its device or
/// account deleted — ends with 401 at the revocation, on both feeds; never 200 with data committed
/// after it.
@Suite struct RevokedPollTests {
    /// Holds a library poll and a journal poll of `device`, runs `revoke`, then commits a change
    /// the polls would otherwise report, and expects both to end with 401 at once (`server` runs
    /// on a manual clock: their wait never passes, so the answers are the wake-up's).
    static func expectBothPollsEndWith401(_ server: APIServer, _ device: (id: String, token: String), other: (id: String, token: String),
                                          _ what: String, revoke: () throws -> Void) throws {
        let library = try #require(try server.call("GET", "/v1/library/token", token: device.token)["changeToken"]?.stringValue)
        let journals = try #require(try server.call("GET", "/v1/journals/token", token: device.token)["changeToken"]?.stringValue)
        let polls = [
            LongPollTests.Poll(port: server.port, token: device.token, "/v1/library/changes?since=\(percentEncoded(library))&wait=4"),
            LongPollTests.Poll(port: server.port, token: device.token, "/v1/journals/changes?since=\(percentEncoded(journals))&wait=4"),
        ]
        try LongPollTests.waitUntilHeld(server, 2)
        try revoke()
        _ = try server.call("POST", "/v1/journals", token: other.token, body: #"{"title":"after"}"#)
        for (poll, feed) in zip(polls, ["library", "journals"]) {
            let (answer, _) = try poll.result()
            #expect(answer.status == 401 && answer.errorName == "unauthorized", "\(what), \(feed) feed: \(answer.status) \(answer.raw.body)")
        }
    }

    /// How a token stops: rotated, its device deleted, its account deleted.
    enum Revocation: String, CaseIterable { case rotation, deviceDeletion, accountDeletion }

    @Test(arguments: TestEngine.available, Revocation.allCases)
    func revokingTheTokenEndsItsPolls(_ engine: TestEngine, _ revocation: Revocation) throws {
        let server = try APIServer(engine: engine, scheduler: ManualScheduler())
        let (account, phone, tablet) = try server.phoneAndTablet()
        // The account's other device commits after the revocation (another account's, when the account is gone).
        let other = revocation == .accountDeletion ? try server.phoneAndTablet().tablet : tablet
        try Self.expectBothPollsEndWith401(server, phone, other: other, revocation.rawValue) {
            let status: Int
            switch revocation {
            case .rotation: status = try server.call("POST", "/v1/devices/\(phone.id)/token", token: account.token).status
            case .deviceDeletion: status = try server.call("DELETE", "/v1/devices/\(phone.id)", token: account.token).status
            case .accountDeletion: status = try server.call("DELETE", "/v1/account", token: account.token).status
            }
            try #require(status == 200 || status == 204, "\(revocation) answered \(status)")
        }
    }
}
