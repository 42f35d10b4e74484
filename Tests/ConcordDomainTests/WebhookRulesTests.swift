import ConcordDomain
import ConcordStorage
import ConcordTestSupport
import Foundation
import Testing

/// Every destination allowed: these tests are about the outbox and delivery's rules, not addresses.
private struct AnyDestination: WebhookDestinationChecking {
    func check(url: String) -> WebhookDestinationVerdict { .allowed(origin: "http://relay.test:80") }
}

/// Secrets sealed under a fixed key, as the app's keeper does.
private struct FixedKeySecrets: WebhookSecretKeeping {
    var key = WebhookKey(bytes: [UInt8](repeating: 7, count: 32))!
    var keyID: String { self.key.keyID }
    func newSecret() -> String { WebhookSecret.generate().text }
    func seal(_ secret: String, webhookID: String, serial: Int64) -> [UInt8] {
        WebhookSecretSealing.seal(WebhookSecret(parsing: secret)!, webhookID: webhookID, serial: serial, key: self.key).encoded
    }
    func open(_ sealed: [UInt8], webhookID: String, serial: Int64) -> String? {
        (try? WebhookSecretSealing.open(encoded: sealed, webhookID: webhookID, key: self.key))?.text
    }
}

/// A service with webhooks on a database of `engine`, its clock moved by hand.
private final class WebhookEnv {
    let env: TestEnv
    let service: ConcordService
    let delivery: WebhookDelivery
    var clock: ManualClock { self.env.clock }
    var accountID: String { self.env.account.accountID }

    init(_ engine: TestEngine, _ configure: (inout WebhookSettings) -> Void = { _ in }) throws {
        self.env = try TestEnv(engine)
        var settings = WebhookSettings()
        settings.retrySchedule = [5, 300]
        configure(&settings)
        let clock = self.env.clock
        self.service = try ConcordService(store: self.env.store, clock: { clock.now },
                                          webhooks: WebhookEnvironment(destinations: AnyDestination(), secrets: FixedKeySecrets(), settings: settings))
        self.delivery = WebhookDelivery(self.service)
    }

    func webhook(_ events: [String], minInterval: Int = 1) throws -> String {
        try self.service.webhooks.create(.account(self.accountID), WebhookInput(url: "https://relay.test/hook", events: events,
                                                                                 minIntervalSeconds: minInterval)).view.webhook.webhookID
    }

    func device(_ name: String = "phone") throws -> DeviceRef {
        let d = try self.service.accounts.createDevice(accountID: self.accountID, name: name, platform: nil)
        return DeviceRef(accountID: self.accountID, deviceID: d.deviceID)
    }

    func write(_ device: DeviceRef, _ n: Int) throws -> String {
        try self.service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: [.asset("A\(n)/L0/001", fingerprint: fingerprintText(n))])),
                                              device: device).changeToken
    }

    /// A `library.changed` webhook, then a device that writes once (`write(phone, 1)`): how most
    /// delivery tests begin.
    func libraryHookAfterOneWrite(minInterval: Int = 1) throws -> (hook: String, phone: DeviceRef) {
        let hook = try self.webhook(["library.changed"], minInterval: minInterval)
        let phone = try self.device()
        _ = try self.write(phone, 1)
        return (hook, phone)
    }

    func log(_ webhookID: String, status: String? = nil) throws -> [DeliveryView] {
        try self.service.webhooks.deliveries(.account(self.accountID), id: webhookID, status: status, after: nil, limit: 1000).deliveries
    }

    func claim() throws -> [WebhookAttemptPlan] { try self.delivery.claim(owner: "test", limit: 64) }

    func answer(_ plan: WebhookAttemptPlan, status: Int?, error: String? = nil, retryAfter: Int? = nil) throws {
        let now = self.clock.now.timeIntervalSince1970
        _ = try self.delivery.record(plan, WebhookAttemptOutcome(startedAt: now, durationMs: 3, responseStatus: status, error: error,
                                                                 retryAfterSeconds: retryAfter))
    }
}

private func fingerprintText(_ n: Int) -> String {
    let bytes = SHA256.hash(Array("photo \(n)".utf8))
    return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

private func token(_ view: DeliveryView) -> String? {
    ((try? JSONSerialization.jsonObject(with: Data(view.event.body))) as? [String: Any]).flatMap { ($0["data"] as? [String: Any])?["changeToken"] as? String }
}

@Suite struct WebhookRulesTests {
    @Test(arguments: TestEngine.available) func aBurstOfCommitsWaitsAsOneEventCarryingTheLastToken(_ engine: TestEngine) throws {
        let w = try WebhookEnv(engine)
        let hook = try w.webhook(["library.changed"])
        let phone = try w.device()
        var last = ""
        for n in 0..<5 {
            w.clock.advance(1)
            last = try w.write(phone, n)
        }
        let pending = try w.log(hook, status: "pending")
        #expect(pending.count == 1)
        #expect(token(pending[0]) == last)
        #expect(pending[0].event.timestamp == w.clock.now.timeIntervalSince1970)
        // The waiting event kept its ID while it took the new tokens: nobody has seen it.
        #expect(try w.log(hook).count == 1)
    }

    /// A commit writes its feed's head alone until something changes who hears the feed: a webhook
    /// made, or its events changed, after the feed's commits still hears the next one.
    @Test(arguments: TestEngine.available) func webhooksMadeOrChangedAfterAFeedsCommitsHearItsNextCommit(_ engine: TestEngine) throws {
        let w = try WebhookEnv(engine)
        let phone = try w.device()
        for n in 0..<3 { _ = try w.write(phone, n) }   // the feed's head exists, checked, heard by nobody
        let account = try w.webhook(["library.changed"])
        let narrow = try w.webhook(["journals.changed"])
        let server = try w.service.webhooks.create(.server, WebhookInput(url: "https://relay.test/all", events: ["library.changed"]))
            .view.webhook.webhookID
        let second = try w.write(phone, 3)
        #expect(try w.log(account, status: "pending").map(token) == [second])
        #expect(try w.service.webhooks.deliveries(.server, id: server, status: "pending", after: nil, limit: 10).deliveries.map(token) == [second])
        #expect(try w.log(narrow).isEmpty)
        // Its events widened: the next commit reaches it too; the others' waiting events take it in place.
        _ = try w.service.webhooks.update(.account(w.accountID), id: narrow, WebhookInput(events: ["library.changed", "journals.changed"]))
        let third = try w.write(phone, 4)
        #expect(try w.log(narrow, status: "pending").map(token) == [third])
        #expect(try w.log(account).map(token) == [third])
        // Claimed: the commit after the claim gives the webhook a new waiting event.
        let plans = try w.claim()
        #expect(plans.count == 3)
        let fourth = try w.write(phone, 5)
        #expect(try w.log(account, status: "pending").map(token) == [fourth, third])   // newest first
    }

    @Test(arguments: TestEngine.available) func aCommitDuringAnAttemptWaitsAndTakesOverIfTheAttemptFails(_ engine: TestEngine) throws {
        let w = try WebhookEnv(engine)
        let (hook, phone) = try w.libraryHookAfterOneWrite()
        let first = try w.claim()
        try #require(first.count == 1)
        // In flight: a new commit makes a second, waiting event; the claim picks nothing more of the feed.
        let newest = try w.write(phone, 2)
        #expect(try w.claim().isEmpty)
        #expect(try w.log(hook, status: "pending").count == 2)
        // The attempt fails: the newer event takes over its schedule (one attempt made, next in 5–6 s).
        try w.answer(first[0], status: 500)
        let log = try w.log(hook)
        let old = try #require(log.first { $0.event.eventID == first[0].event.eventID })
        #expect(old.event.status == .superseded)
        let waiting = try #require(log.first { $0.event.status == .pending })
        #expect(old.event.supersededBy == waiting.event.eventID)
        #expect(token(waiting) == newest && waiting.event.attempts == 1)
        let now = w.clock.now.timeIntervalSince1970
        #expect((now + 5...now + 6).contains(waiting.nextAttemptAt ?? 0))
        // Not due yet; due after the retry delay, and the same event is attempted.
        #expect(try w.claim().isEmpty)
        w.clock.advance(6)
        #expect(try w.claim().map(\.event.eventID) == [waiting.event.eventID])
    }

    @Test(arguments: TestEngine.available) func aCommitWhileAnEventWaitsForItsRetrySupersedesIt(_ engine: TestEngine) throws {
        let w = try WebhookEnv(engine)
        let (hook, phone) = try w.libraryHookAfterOneWrite()
        let plan = try #require(try w.claim().first)
        try w.answer(plan, status: 503)
        let retrying = try #require(try w.log(hook, status: "pending").first)
        #expect(retrying.event.eventID == plan.event.eventID && retrying.event.attempts == 1)
        let newest = try w.write(phone, 2)
        let pending = try #require(try w.log(hook, status: "pending").first)
        #expect(pending.event.eventID != plan.event.eventID)
        #expect(token(pending) == newest && pending.event.attempts == 1 && pending.nextAttemptAt == retrying.nextAttemptAt)
        #expect(try w.log(hook, status: "superseded").first?.event.supersededBy == pending.event.eventID)
    }

    @Test(arguments: TestEngine.available) func journalEventsNameTheirOriginDeviceOnlyWhileOneDeviceWroteThem(_ engine: TestEngine) throws {
        let w = try WebhookEnv(engine)
        let hook = try w.webhook(["journals.changed"])
        let phone = try w.device("phone"), mac = try w.device("mac")
        _ = try w.service.journals.createJournal(title: "One", device: phone)
        _ = try w.service.journals.createJournal(title: "Two", device: phone)
        var data = try #require(try w.log(hook, status: "pending").first).event.data
        #expect(data.contains(#""originDeviceID":"\#(phone.deviceID)""#))
        _ = try w.service.journals.createJournal(title: "Three", device: mac)
        data = try #require(try w.log(hook, status: "pending").first).event.data
        #expect(data.contains(#""originDeviceID":null"#))
    }

    @Test(arguments: TestEngine.available) func aFeedsNextAttemptWaitsMinIntervalAfterThePreviousStarted(_ engine: TestEngine) throws {
        let w = try WebhookEnv(engine)
        let (hook, phone) = try w.libraryHookAfterOneWrite(minInterval: 60)
        let started = w.clock.now.timeIntervalSince1970
        let plan = try #require(try w.claim().first)   // a quiet feed's first event goes at once
        try w.answer(plan, status: 200)
        w.clock.advance(10)
        _ = try w.write(phone, 2)
        let waiting = try #require(try w.log(hook, status: "pending").first)
        #expect(waiting.nextAttemptAt == started + 60)
        #expect(try w.claim().isEmpty)
        w.clock.advance(50)
        #expect(try w.claim().count == 1)
    }

    @Test(arguments: TestEngine.available) func theLastAttemptFailsTheEventAndANewerOneStartsAFreshSchedule(_ engine: TestEngine) throws {
        let w = try WebhookEnv(engine) { $0.retrySchedule = [5] }
        let (hook, phone) = try w.libraryHookAfterOneWrite()
        try w.answer(try #require(try w.claim().first), status: 500)
        w.clock.advance(7)
        let second = try #require(try w.claim().first)   // the schedule's last attempt
        _ = try w.write(phone, 2)
        try w.answer(second, status: 500)
        #expect(try w.log(hook, status: "failed").map(\.event.eventID) == [second.event.eventID])
        let fresh = try #require(try w.log(hook, status: "pending").first)
        #expect(fresh.event.attempts == 0)
    }

    @Test(arguments: TestEngine.available) func failuresDisableAWebhookAndEnablingMakesHeldEventsDue(_ engine: TestEngine) throws {
        let w = try WebhookEnv(engine) { $0.disableAfterFailures = 2; $0.disableAfterSeconds = 0 }
        let (hook, phone) = try w.libraryHookAfterOneWrite()
        try w.answer(try #require(try w.claim().first), status: 500)
        w.clock.advance(7)
        try w.answer(try #require(try w.claim().first), status: 500)
        var view = try w.service.webhooks.get(.account(w.accountID), id: hook)
        #expect(!view.webhook.enabled && view.webhook.disabledReason == .failing && view.webhook.consecutiveFailures == 2)
        // Held: still coalescing, never attempted, no next attempt shown.
        let last = try w.write(phone, 2)
        w.clock.advance(1000)
        #expect(try w.claim().isEmpty)
        let held = try w.log(hook, status: "pending")
        #expect(held.count == 1 && held[0].nextAttemptAt == nil && token(held[0]) == last)
        // Enabled: due at once with a fresh schedule.
        _ = try w.service.webhooks.update(.account(w.accountID), id: hook, WebhookInput(enabled: true))
        view = try w.service.webhooks.get(.account(w.accountID), id: hook)
        #expect(view.webhook.enabled && view.webhook.disabledReason == nil && view.webhook.consecutiveFailures == 0)
        let due = try w.claim()
        #expect(due.count == 1 && due.first?.event.attempts == 0)
    }

    @Test(arguments: TestEngine.available) func gonePingsRedeliveryAndDeletingADevice(_ engine: TestEngine) throws {
        let w = try WebhookEnv(engine)
        let hook = try w.webhook(["library.changed", "device.deleted", "device.created"])
        let phone = try w.device()
        let created = try #require(try w.claim().first)
        #expect(created.event.type == .deviceCreated)
        try w.answer(created, status: 204)
        _ = try w.write(phone, 1)
        // Deleting the device cancels its feed's pending event and queues device.deleted.
        try w.service.accounts.deleteDevice(accountID: w.accountID, deviceID: phone.deviceID)
        #expect(try w.log(hook, status: "cancelled").map(\.event.type) == [.libraryChanged])
        let deleted = try #require(try w.claim().first)
        #expect(deleted.event.type == .deviceDeleted)
        // 410 disables at once.
        try w.answer(deleted, status: 410)
        #expect(try w.service.webhooks.get(.account(w.accountID), id: hook).webhook.disabledReason == .gone)
        // Redelivering on a disabled webhook is refused.
        #expect(throws: DomainError.webhookDisabled) {
            _ = try w.service.webhooks.redeliver(.account(w.accountID), id: hook, eventID: created.event.eventID)
        }
        _ = try w.service.webhooks.update(.account(w.accountID), id: hook, WebhookInput(enabled: true))
        let again = try w.service.webhooks.redeliver(.account(w.accountID), id: hook, eventID: created.event.eventID)
        #expect(again.event.status == .pending && again.event.eventID == created.event.eventID)
    }

    @Test(arguments: TestEngine.available) func aStaleLibraryEventIsNotRedelivered(_ engine: TestEngine) throws {
        let w = try WebhookEnv(engine)
        let (hook, phone) = try w.libraryHookAfterOneWrite()
        let first = try #require(try w.claim().first)
        try w.answer(first, status: 200)
        _ = try w.write(phone, 2)
        let newer = try #require(try w.log(hook, status: "pending").first)
        #expect(throws: DomainError.eventSuperseded(supersededBy: newer.event.eventID)) {
            _ = try w.service.webhooks.redeliver(.account(w.accountID), id: hook, eventID: first.event.eventID)
        }
    }

    @Test(arguments: TestEngine.available) func aClaimOfADeadInstanceIsReleasedAsInterrupted(_ engine: TestEngine) throws {
        let w = try WebhookEnv(engine)
        let (hook, _) = try w.libraryHookAfterOneWrite()
        let plan = try #require(try w.claim().first)
        w.clock.advance(61)
        #expect(try w.delivery.releaseExpiredClaims(all: false) == 1)
        let view = try w.service.webhooks.delivery(.account(w.accountID), id: hook, eventID: plan.event.eventID)
        #expect(view.event.status == .pending && view.event.attempts == 0)
        #expect(view.attempts.map(\.error) == ["interrupted"])
        let webhook = try w.service.webhooks.get(.account(w.accountID), id: hook).webhook
        #expect(webhook.consecutiveFailures == 0 && webhook.lastFailureAt == nil)
        // The receiver never answered for the dead instance: its late outcome is not recorded.
        try w.answer(plan, status: 200)
        #expect(try w.service.webhooks.delivery(.account(w.accountID), id: hook, eventID: plan.event.eventID).event.status == .pending)
    }

    @Test(arguments: TestEngine.available) func anInstanceWithoutTheWebhookKeyClaimsNothing(_ engine: TestEngine) throws {
        let w = try WebhookEnv(engine)
        _ = try w.webhook(["library.changed"])
        _ = try w.write(try w.device(), 1)
        let clock = w.clock
        let other = try ConcordService(store: try w.env.database.openAnotherStore(), clock: { clock.now },
                                       webhooks: WebhookEnvironment(destinations: AnyDestination(),
                                                                    secrets: FixedKeySecrets(key: WebhookKey(bytes: [UInt8](repeating: 9, count: 32))!),
                                                                    settings: WebhookSettings()))
        let stranger = WebhookDelivery(other)
        #expect(try stranger.claim(owner: "stranger", limit: 64).isEmpty)
        #expect(try stranger.foreignKeyIDs() == [FixedKeySecrets().keyID])
        #expect(try w.claim().count == 1)
    }

    /// The retry schedule: the n-th failure waits `schedule[n-1]` seconds, 0–20 % longer, or until
    /// `Retry-After` when that is later (at most a day).
    @Test(arguments: [
        (1, 0.0, nil, 5.0), (1, 0.2, nil, 6.0), (2, 0.0, nil, 300.0), (2, 0.1, nil, 330.0), (9, 0.0, nil, 86_400.0),
        (1, 0.0, 60, 60.0), (1, 0.0, 2, 5.0), (1, 0.0, 1_000_000, 86_400.0),
    ] as [(Int, Double, Int?, Double)])
    func retryTimes(_ n: Int, _ jitter: Double, _ retryAfter: Int?, _ expected: Double) {
        #expect(WebhookDelivery.retryTime(after: n, settings: WebhookSettings(), retryAfter: retryAfter, now: 0, jitter: jitter) == expected)
    }
}
