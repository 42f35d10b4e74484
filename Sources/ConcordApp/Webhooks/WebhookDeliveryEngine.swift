import CConcordSystem
import ConcordDomain
import ConcordObservability
import ConcordOutbound
import Foundation
import Synchronization

/// Delivers webhook events, off the request path: a commit only stores its events and wakes the
/// engine. One serial queue claims due attempts (the database decides what is due, so several
/// instances share the work); each attempt then runs on a thread of its own, at most
/// `webhooks.maxInFlight` at once, and its outcome is recorded in its own transaction.
///
/// The engine looks again when woken (a commit here, or another instance's through the feed
/// listener), when the next event comes due, and at least once a second — so an event is attempted
/// within a second of becoming due while there is room.
final class WebhookDeliveryEngine: Sendable {
    private let delivery: WebhookDelivery
    private let sender: WebhookSender
    private let settings: WebhookSettings
    private let logger: Logger
    private let metrics: WebhookMetrics
    /// This instance's name on its claims.
    let instanceID: String
    /// Whether this process is the database's only user (SQLite): every claim left is then a dead one's.
    private let ownsDatabase: Bool
    private let queue = DispatchQueue(label: "concord.webhooks")
    /// The app's one scheduler times the next look (its thread only hands the look to `queue`).
    private let scheduler: any TimedWorkScheduler
    private let state = Mutex(State())

    private struct State {
        var running = false
        var inFlight = 0
        /// The next timed look, replaced by every pump.
        var nextLook: ScheduledWork?
        var lastMaintenance = 0.0
        var lastReleaseCheck = 0.0
        var warnedKeys: Set<String> = []
        /// A pump is queued: more wake-ups until it runs add nothing (a busy server commits thousands of times a second).
        var pumpQueued = false
    }

    init(service: ConcordService, sender: WebhookSender, settings: WebhookSettings, logger: Logger, metrics: MetricsRegistry, ownsDatabase: Bool,
         scheduler: any TimedWorkScheduler) {
        self.scheduler = scheduler
        self.delivery = WebhookDelivery(service)
        self.sender = sender
        self.settings = settings
        self.logger = logger
        self.metrics = WebhookMetrics(metrics)
        self.instanceID = Identifiers.newUUID()
        self.ownsDatabase = ownsDatabase
        metrics.gauge("concord_webhook_events_due", help: "Webhook events due now (pending, of enabled webhooks).") { [delivery] in
            Double((try? delivery.dueCount()) ?? 0)
        }
    }

    func start() {
        self.state.withLock { $0.running = true }
        self.queue.async {
            if self.ownsDatabase { self.releaseClaims(all: true) }
            self.pump()
        }
    }

    /// Something was committed: look for due events now.
    func wake() {
        let queue = self.state.withLock { s -> Bool in
            guard s.running, !s.pumpQueued else { return false }
            s.pumpQueued = true
            return true
        }
        if queue { self.queue.async { self.pump() } }
    }

    /// No attempt starts after this; those in flight get until `deadline` (seconds from now) to finish.
    /// Any still open then are a dead instance's claims for the next start.
    func stop(grace: Double) {
        self.state.withLock { $0.running = false }
        let until = Date().addingTimeInterval(grace)
        while self.state.withLock({ $0.inFlight }) > 0, Date() < until { usleep(10_000) }
    }

    private func pump() {
        let (running, room, previous) = self.state.withLock { s -> (Bool, Int, ScheduledWork?) in
            s.pumpQueued = false
            defer { s.nextLook = nil }
            return (s.running, self.settings.maxInFlight - s.inFlight, s.nextLook)
        }
        if let previous { _ = self.scheduler.cancel(previous) }
        guard running else { return }
        let now = Date().timeIntervalSince1970
        self.upkeep(now: now)
        // A read first: the claim is a write, and most wake-ups find nothing due.
        var due = try? self.delivery.nextDueTime()
        if room > 0, let first = due, first <= now {
            do {
                let plans = try self.delivery.claim(owner: self.instanceID, limit: room)
                for plan in plans { self.begin(plan) }
                due = try? self.delivery.nextDueTime()
            } catch {
                self.logger.warning("webhook claims failed; retrying", metadata: ["error": .string(error.message)])
            }
        }
        // Again when the next event comes due, and at least once a second.
        // (An event due now but not claimed waits behind its feed's attempt in flight, or for room:
        // that attempt's end wakes the engine.)
        var next = now + 1
        if let due, due > now { next = min(next, due) }
        let look = self.scheduler.schedule(after: max(0.01, next - now)) { [self] in self.wake() }
        self.state.withLock { $0.nextLook = look }
    }

    /// Every 10 s: claims of dead instances (PostgreSQL); every minute: the log's upkeep and a
    /// check for secrets sealed under a key this instance lacks.
    private func upkeep(now: Double) {
        let (release, maintain) = self.state.withLock { s -> (Bool, Bool) in
            let release = now - s.lastReleaseCheck >= 10
            let maintain = now - s.lastMaintenance >= 60
            if release { s.lastReleaseCheck = now }
            if maintain { s.lastMaintenance = now }
            return (release, maintain)
        }
        if release { self.releaseClaims(all: false) }
        guard maintain else { return }
        do {
            try self.delivery.maintain()
            for keyID in try self.delivery.foreignKeyIDs() where self.state.withLock({ $0.warnedKeys.insert(keyID).inserted }) {
                self.logger.error("webhook secrets sealed under another key: their events wait for an instance that has it; configure the same webhooks.secretKey on every instance",
                                  metadata: ["keyID": .string(keyID)])
            }
        } catch {
            self.logger.warning("webhook log upkeep failed", metadata: ["error": .string(error.message)])
        }
    }

    private func releaseClaims(all: Bool) {
        do {
            let released = try self.delivery.releaseExpiredClaims(all: all)
            if released > 0 {
                self.metrics.attempts(outcome: "interrupted").increment(by: released)
                self.logger.notice("webhook attempts interrupted by a stop were released", metadata: ["count": .int(released)])
            }
        } catch {
            self.logger.warning("releasing webhook claims failed", metadata: ["error": .string(error.message)])
        }
    }

    private func begin(_ plan: WebhookAttemptPlan) {
        self.state.withLock { $0.inFlight += 1 }
        let thread = Thread { [self] in
            concord_set_thread_name("concord-webhook")
            let outcome = self.send(plan)
            self.recordOutcome(plan, outcome)
            self.state.withLock { $0.inFlight -= 1 }
            self.wake()
        }
        thread.start()
    }

    /// One attempt: signed anew, sent to a checked address, classified.
    func send(_ plan: WebhookAttemptPlan) -> WebhookAttemptOutcome {
        let started = Date().timeIntervalSince1970
        guard case .ok(let url) = self.sender.policy.validateURL(plan.url) else {
            return WebhookAttemptOutcome(startedAt: started, durationMs: 0, responseStatus: nil, error: "forbiddenAddress", retryAfterSeconds: nil)
        }
        let timestamp = Int(started)
        let secrets = plan.secrets.compactMap { WebhookSecret(parsing: $0) }
        let signature = WebhookSigning.signatureHeader(secrets: secrets, id: plan.event.eventID, timestamp: timestamp, body: plan.body)
        let request = DeliveryRequest(
            url: url,
            headers: [("Content-Type", "application/json"), ("webhook-id", plan.event.eventID), ("webhook-timestamp", String(timestamp)),
                      ("webhook-signature", signature)],
            body: plan.body, timeoutSeconds: self.settings.timeoutSeconds, connectTimeoutSeconds: min(5, self.settings.timeoutSeconds))
        let result = self.sender.send(request)
        let outcome = WebhookAttemptOutcome(startedAt: started, durationMs: result.durationMs, responseStatus: result.status,
                                            error: result.error?.rawValue, retryAfterSeconds: result.retryAfterSeconds)
        self.metrics.seconds.observe(Double(result.durationMs) / 1000)
        let label: String
        switch result.error {
        case nil: label = outcome.succeeded ? "success" : "failure"
        case .timeout?: label = "timeout"
        case .forbiddenAddress?: label = "forbiddenAddress"
        default: label = "failure"
        }
        self.metrics.attempts(outcome: label).increment()
        if result.error == .forbiddenAddress {
            self.logger.warning("webhook attempt refused: forbidden address", metadata: [
                "webhookID": .string(plan.event.webhookID), "eventID": .string(plan.event.eventID), "destination": .string(url.origin),
            ])
        }
        return outcome
    }

    /// Records the outcome, retrying each second while storage is unavailable and the claim's lease
    /// lasts (after it, the attempt is another instance's to release as interrupted).
    private func recordOutcome(_ plan: WebhookAttemptPlan, _ outcome: WebhookAttemptOutcome) {
        let until = (plan.event.leaseUntil ?? 0) - 1
        while true {
            do {
                try self.recordOnce(plan, outcome)
                return
            } catch {
                guard Date().timeIntervalSince1970 + 1 < until, self.state.withLock({ $0.running }) else {
                    // The claim stays until its lease runs out; the attempt is then recorded as interrupted.
                    self.logger.warning("recording a webhook attempt failed", metadata: ["eventID": .string(plan.event.eventID), "error": .string(error.message)])
                    return
                }
                usleep(1_000_000)
            }
        }
    }

    private func recordOnce(_ plan: WebhookAttemptPlan, _ outcome: WebhookAttemptOutcome) throws(DomainError) {
        guard let result = try self.delivery.record(plan, outcome), let reason = result.disabled else { return }
        self.metrics.disabled(reason: reason.rawValue).increment()
        var metadata: LogMetadata = ["audit": .bool(true), "scope": .string(result.accountID == nil ? "server" : "account"),
                                     "webhookID": .string(result.webhookID), "reason": .string(reason.rawValue),
                                     "destination": .string(result.origin)]
        if let account = result.accountID { metadata["accountID"] = .string(account) }
        self.logger.notice("webhook disabled", metadata: metadata)
    }

    /// `POST …/ping`: one attempt now, answered with its outcome.
    func ping(_ owner: WebhookOwner, id: String, idempotency: IdempotencyScope?) throws(DomainError) -> WebhookPingResult {
        let plan = try self.delivery.preparePing(owner, id: id, owner: self.instanceID, idempotency: idempotency)
        let outcome = self.send(plan)
        return try self.delivery.finishPing(plan, outcome, owner)
    }
}

/// The webhook metrics (`concord_webhook_*`).
struct WebhookMetrics: Sendable {
    let registry: MetricsRegistry
    let seconds: Histogram

    init(_ registry: MetricsRegistry) {
        self.registry = registry
        self.seconds = registry.histogram("concord_webhook_attempt_seconds", help: "Duration of webhook delivery attempts.")
        for outcome in ["success", "failure", "timeout", "forbiddenAddress", "interrupted"] { _ = self.attempts(outcome: outcome) }
        for reason in ["manual", "failing", "gone"] { _ = self.disabled(reason: reason) }
    }

    func attempts(outcome: String) -> Counter {
        self.registry.counter("concord_webhook_attempts_total", help: "Webhook delivery attempts by outcome.", labels: [("outcome", outcome)])
    }

    func disabled(reason: String) -> Counter {
        self.registry.counter("concord_webhooks_disabled_total", help: "Webhooks disabled, by reason.", labels: [("reason", reason)])
    }
}
