import ConcordJSON
import ConcordTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Testing

@testable import ConcordApp

/// Long-polls of the change feeds, over real sockets: a held request answers when
/// another request commits a change to its feed, answers its empty page (same token) when its
/// wait is over, and is released at shutdown.
///
/// The servers here run their timed work on a `ManualScheduler`: a poll's wait passes only when a
/// test moves that clock, so a poll answered without it was woken (or never held), whatever the
/// machine's load. Nothing here measures how soon: the wake-up latency is a benchmark's goal
/// (`Benchmarks/run livesync`).
@Suite struct LongPollTests {
    /// A poll sent on its own thread; `result()` waits for its answer and when it arrived.
    final class Poll: Sendable {
        private let done = DispatchSemaphore(value: 0)
        private let outcome = Mutex<(response: APIResponse?, error: String?, at: Double)>((nil, nil, 0))
        let sentAt = monotonicSeconds()

        init(port: Int, token: String, _ target: String) {
            Thread { [self] in
                do {
                    let response = try send(port, "GET", target, token: token)
                    self.outcome.withLock { $0 = (response, nil, monotonicSeconds()) }
                } catch {
                    self.outcome.withLock { $0 = (nil, "\(error)", monotonicSeconds()) }
                }
                self.done.signal()
            }.start()
        }

        /// Answered (or failed) already.
        var isAnswered: Bool { self.outcome.withLock { $0.at != 0 } }

        /// Waits for the answer; a poll nobody wakes on a manual clock ends when its socket gives
        /// up (60 s), as an error.
        func result() throws -> (response: APIResponse, at: Double) {
            self.done.wait()
            let (response, error, at) = self.outcome.withLock { $0 }
            guard let response else { throw RawHTTPError.malformed(error ?? "no answer") }
            return (response, at)
        }
    }

    /// A server on a manual clock (a held poll's wait never passes) and a phone and a tablet of one account.
    static func manualClockServer(_ engine: TestEngine) throws -> (server: APIServer, phone: (id: String, token: String), tablet: (id: String, token: String)) {
        let server = try APIServer(engine: engine, scheduler: ManualScheduler())
        let (_, phone, tablet) = try server.phoneAndTablet()
        return (server, phone, tablet)
    }

    /// A poll of `feed` (`library`, `journals`) from its current token, held at most `wait` seconds:
    /// (that token, the poll).
    static func pollFromNow(_ server: APIServer, _ feed: String, token: String, wait: Int = 4) throws -> (since: String, poll: Poll) {
        let since = try #require(try server.call("GET", "/v1/\(feed)/token", token: token)["changeToken"]?.stringValue)
        return (since, Poll(port: server.port, token: token, "/v1/\(feed)/changes?since=\(percentEncoded(since))&wait=\(wait)"))
    }

    /// Waits until the server holds `count` polls (giving up after 30 s: a failure, not a hang).
    static func waitUntilHeld(_ server: APIServer, _ count: Int) throws {
        let giveUp = monotonicSeconds() + 30
        while server.app.context.longPolls.waiting < count {
            try #require(monotonicSeconds() < giveUp, "the server held \(server.app.context.longPolls.waiting) polls, not \(count)")
            usleep(2_000)
        }
    }

    /// Moves `scheduler`'s clock by `seconds`, then runs what is due (the clock going no further)
    /// until every poll is answered: a poll whose query still ran during the move parks after it,
    /// its deadline already due. Gives up after 30 s (a failure, not a hang).
    static func advance(_ scheduler: ManualScheduler, by seconds: Double, until polls: [Poll]) throws {
        scheduler.advance(by: seconds)
        let giveUp = monotonicSeconds() + 30
        while !polls.allSatisfy(\.isAnswered) {
            try #require(monotonicSeconds() < giveUp, "\(polls.filter { !$0.isAnswered }.count) polls still held")
            usleep(1_000)
            scheduler.advance(by: 0)
        }
    }

    @Test(arguments: TestEngine.available)
    func aHeldJournalPollAnswersAnotherDevicesCommit(_ engine: TestEngine) throws {
        let (server, phone, tablet) = try Self.manualClockServer(engine)
        for round in 0..<5 {
            let (since, poll) = try Self.pollFromNow(server, "journals", token: phone.token)
            try Self.waitUntilHeld(server, 1)
            let created = try server.call("POST", "/v1/journals", token: tablet.token, body: #"{"title":"Trip \#(round)"}"#)
            try #require(created.status == 201, "\(created.raw.body)")
            let (answer, _) = try poll.result()
            #expect(answer.status == 200)
            let changes = try #require(answer["changes"]?.arrayValue)
            #expect(changes.count == 1)
            let inserted = changes.first?["journals"]?["inserted"]?.arrayValue?.compactMap(\.stringValue)
            #expect(inserted == [try #require(created["journalID"]?.stringValue)])
            #expect(answer["changeToken"]?.stringValue != since)
        }
    }

    @Test(arguments: TestEngine.available)
    func aHeldLibraryPollWakesOnTheDevicesOwnChangeFromAnotherConnection(_ engine: TestEngine) throws {
        let (server, phone, tablet) = try Self.manualClockServer(engine)
        let (_, poll) = try Self.pollFromNow(server, "library", token: phone.token)
        try Self.waitUntilHeld(server, 1)
        // Another device's library is another feed: the phone's poll stays held.
        try server.upsert(tablet.token, assets: [("T-1/L0/001", fingerprint(1))])
        usleep(200_000)
        #expect(server.app.context.longPolls.waiting == 1)
        try server.upsert(phone.token, assets: [("P-1/L0/001", fingerprint(2))])
        let (answer, _) = try poll.result()
        #expect(answer.status == 200)
        #expect(answer["changes"]?.arrayValue?.count == 1)
    }

    /// The wait is measured on the server's scheduler's clock, moved here by hand: held until the
    /// wait has passed, not a moment before, then answered with the same token. (Its deadline is
    /// set when the request arrives, so a poll that parks only after a move still keeps it.)
    @Test func aPollWhoseWaitPassesAnswersItsEmptyPageWithTheSameToken() throws {
        let scheduler = ManualScheduler()
        let server = try APIServer(scheduler: scheduler)
        let account = try server.account()
        let phone = try server.device(account.token)
        for feed in ["library", "journals"] {
            let (since, poll) = try Self.pollFromNow(server, feed, token: phone.token, wait: 30)
            try Self.waitUntilHeld(server, 1)
            // Parked (its query done, its deadline scheduled), not only registered.
            let parkedBy = monotonicSeconds() + 3
            while scheduler.pending < 1 {
                try #require(monotonicSeconds() < parkedBy, "the poll never parked")
                usleep(1_000)
            }
            scheduler.advance(by: 29.999)
            #expect(server.app.context.longPolls.waiting == 1, "answered before its wait passed")
            try Self.advance(scheduler, by: 0.001, until: [poll])
            let (answer, _) = try poll.result()
            #expect(answer.status == 200)
            #expect(answer["changes"]?.arrayValue?.isEmpty == true)
            #expect(answer["changeToken"]?.stringValue == since)
            #expect(answer["hasMore"]?.boolValue == false)
        }
        #expect(server.app.context.longPolls.waiting == 0)
    }

    /// (On the manual clock no wait passes: every answer here is one given without holding.)
    @Test func changesAlreadyThereAreAnsweredAtOnceAndBadWaitsAreRefused() throws {
        let server = try APIServer(scheduler: ManualScheduler())
        let account = try server.account()
        let phone = try server.device(account.token)
        let since = try #require(try server.call("GET", "/v1/library/token", token: phone.token)["changeToken"]?.stringValue)
        try server.upsert(phone.token, assets: [("A/L0/001", fingerprint(1))])
        let r = try server.call("GET", "/v1/library/changes?since=\(percentEncoded(since))&wait=30", token: phone.token)
        #expect(r.status == 200 && r["changes"]?.arrayValue?.count == 1)
        for bad in ["-1", "abc", "nan", "inf", "0x10", "1%20", ""] {
            let r = try server.call("GET", "/v1/library/changes?since=\(percentEncoded(since))&wait=\(bad)", token: phone.token)
            #expect(r.status == 400, "wait=\(bad)")
            #expect(r["error"]?["field"]?.stringValue == "wait", "wait=\(bad): \(r.raw.body)")
        }
        // A bad token is refused at once, not after the wait.
        let expired = try server.call("GET", "/v1/library/changes?since=nonsense&wait=30", token: phone.token)
        #expect(expired.status == 400)
    }

    /// (On the manual clock no wait passes: the answers come from the shutdown.)
    @Test func shutdownAnswersEveryHeldPollAtOnce() throws {
        let server = try APIServer(scheduler: ManualScheduler())
        let account = try server.account()
        let phones = try (0..<3).map { try server.device(account.token, "Phone \($0)") }
        let polls = try phones.map { phone in
            return try Self.pollFromNow(server, "journals", token: phone.token)
        }
        try Self.waitUntilHeld(server, 3)
        server.app.shutdown()
        for (since, poll) in polls {
            let (answer, _) = try poll.result()
            #expect(answer.status == 200)
            #expect(answer["changeToken"]?.stringValue == since)
        }
    }

    /// (On the manual clock no wait passes until moved: the second poll's answer is one given
    /// without holding; the first's wait is then moved past.)
    @Test func pollsBeyondMaxWaitingAreAnsweredAtOnce() throws {
        let scheduler = ManualScheduler()
        let server = try APIServer(scheduler: scheduler) { $0.longPoll.maxWaiting = 1 }
        let account = try server.account()
        let phone = try server.device(account.token)
        let (since, held) = try Self.pollFromNow(server, "journals", token: phone.token, wait: 1)
        try Self.waitUntilHeld(server, 1)
        let second = try server.call("GET", "/v1/journals/changes?since=\(percentEncoded(since))&wait=4", token: phone.token)
        #expect(second.status == 200 && second["changes"]?.arrayValue?.isEmpty == true)
        try Self.advance(scheduler, by: 1, until: [held])
        #expect(try held.result().response.status == 200)
        let metrics = try server.call("GET", "/metrics", token: nil).raw.body
        #expect(metrics.contains("concord_long_poll_over_limit_total 1"))
        #expect(metrics.contains(#"concord_long_poll_wakeups_total{reason="timeout"} 1"#))
    }

    /// A client that leaves frees its place at once (not when its wait ends); one that only
    /// half-closes gets its empty page at once. (On the manual clock no wait ends.)
    @Test func aClientThatLeavesIsNoLongerHeld() throws {
        let server = try APIServer(scheduler: ManualScheduler())
        let account = try server.account()
        let phone = try server.device(account.token)
        let since = try #require(try server.call("GET", "/v1/journals/token", token: phone.token)["changeToken"]?.stringValue)
        let request = "GET /v1/journals/changes?since=\(percentEncoded(since))&wait=30 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(phone.token)\r\n\r\n"

        let leaving = try connectLoopback(port: server.port, receiveTimeout: 5)
        #expect(sendAll(leaving, request))
        try Self.waitUntilHeld(server, 1)
        close(leaving)
        let giveUp = monotonicSeconds() + 30
        while server.app.context.longPolls.waiting > 0, monotonicSeconds() < giveUp { usleep(5_000) }
        #expect(server.app.context.longPolls.waiting == 0)

        let halfClosed = try connectLoopback(port: server.port, receiveTimeout: 5)
        defer { close(halfClosed) }
        #expect(sendAll(halfClosed, request))
        try Self.waitUntilHeld(server, 1)
        shutdown(halfClosed, Int32(SHUT_WR))
        let answer = try parseResponse(receiveUntilClosed(halfClosed))
        #expect(answer.status == 200)
        #expect(answer.body.contains(#""changes":[]"#))
        let metrics = try server.call("GET", "/metrics", token: nil).raw.body
        #expect(metrics.contains(#"concord_long_poll_wakeups_total{reason="clientGone"} 2"#))
    }

    /// A commit that lands while a poll's query runs must not be lost: every poll started just
    /// before a write sees that write (on the manual clock its wait never passes: a missed
    /// commit leaves the poll held).
    @Test(arguments: TestEngine.available)
    func noCommitIsMissedBetweenAPollsQueryAndItsWait(_ engine: TestEngine) throws {
        let (server, phone, tablet) = try Self.manualClockServer(engine)
        for round in 0..<20 {
            let (_, poll) = try Self.pollFromNow(server, "journals", token: phone.token)
            usleep(UInt32(round % 5) * 300)   // the write lands before, during or after the poll's query
            try #require(try server.call("POST", "/v1/journals", token: tablet.token, body: #"{"title":"R\#(round)"}"#).status == 201)
            let (answer, _) = try poll.result()
            #expect(answer["changes"]?.arrayValue?.count == 1, "round \(round): \(answer.raw.body)")
        }
    }
}

/// Two `concord serve` processes on one PostgreSQL database: a poll held by one is woken by a
/// commit through the other (LISTEN/NOTIFY). Their clocks are the system's: each poll waits the
/// longest allowed (60 s), and an answer well before that (30 s) is one that was woken.
@Suite(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason)))
struct LongPollAcrossInstancesTests {
    @Test func aPollHeldByOneInstanceWakesOnACommitThroughTheOther() throws {
        try TwoInstances.run { instances in
            let (_, phone, tablet) = try instances.accountWithPhoneAndTablet()
            for round in 0..<5 {
                let since = try #require(try send(instances.port1, "GET", "/v1/journals/token", token: phone)["changeToken"]?.stringValue)
                let poll = LongPollTests.Poll(port: instances.port1, token: phone, "/v1/journals/changes?since=\(percentEncoded(since))&wait=60")
                usleep(300_000)   // held by instance one by now (another process: no gauge to read)
                let created = try send(instances.port2, "POST", "/v1/journals", token: tablet, body: #"{"title":"Across \#(round)"}"#)
                try #require(created.status == 201, "\(created.raw.body)")
                let (answer, at) = try poll.result()
                #expect(answer["changes"]?.arrayValue?.count == 1, "\(answer.raw.body)")
                #expect(at - poll.sentAt < 30, "held \(at - poll.sentAt) s: timed out instead of waking")
            }
        }
    }

    /// A poll held by one instance with the phone's token, while `revoke` acts through the other:
    /// the poll ends with 401, woken well before its wait (60 s) is over. Answers what `revoke` answered.
    @discardableResult
    static func heldPollEndsWith401(feed: String, revoke: (TwoInstances, _ accountToken: String, _ phoneID: String) throws -> APIResponse) throws -> (APIResponse, TwoInstances, String) {
        let instances = try TwoInstances()
        let (accountToken, phone, _) = try instances.accountWithPhoneAndTablet()
        let devices = try #require(try send(instances.port1, "GET", "/v1/devices", token: accountToken)["devices"]?.arrayValue)
        let phoneID = try #require(devices.first { $0["name"]?.stringValue == "Phone" }?["deviceID"]?.stringValue)
        let since = try #require(try send(instances.port1, "GET", "/v1/\(feed)/token", token: phone)["changeToken"]?.stringValue)
        let poll = LongPollTests.Poll(port: instances.port1, token: phone, "/v1/\(feed)/changes?since=\(percentEncoded(since))&wait=60")
        usleep(300_000)   // held by instance one by now
        let revoked = try revoke(instances, accountToken, phoneID)
        let (answer, at) = try poll.result()
        #expect(answer.status == 401, "\(answer.raw.body)")
        #expect(at - poll.sentAt < 30, "held \(at - poll.sentAt) s: timed out instead of waking")
        return (revoked, instances, phone)
    }

    /// Rotating the token through the other instance.
    @Test func aPollHeldByOneInstanceEndsWith401WhenTheOtherRotatesItsToken() throws {
        try Self.heldPollEndsWith401(feed: "journals") { instances, accountToken, phoneID in
            try send(instances.port2, "POST", "/v1/devices/\(phoneID)/token", token: accountToken)
        }
    }

    /// Creating the successor through the other instance; the successor adopts through the first.
    @Test func aPollHeldByOneInstanceEndsWith401WhenTheOtherCreatesTheSuccessor() throws {
        let (created, instances, phone) = try Self.heldPollEndsWith401(feed: "library") { instances, accountToken, phoneID in
            try send(instances.port2, "POST", "/v1/devices/\(phoneID)/successor", token: accountToken, body: #"{"name":"New"}"#)
        }
        defer { withExtendedLifetime(instances) {} }
        let newToken = try #require(created["deviceToken"]?.stringValue, "\(created.raw.body)")
        #expect(try send(instances.port1, "POST", "/v1/library/adopt", token: newToken, body: "{}")["adopted"]?.intValue == 0)
        #expect(try send(instances.port1, "GET", "/v1/library/token", token: phone).status == 401)
    }
}

func monotonicSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}
