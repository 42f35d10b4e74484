import Foundation

/// One claimed attempt, ready to send: the event's body, where, and the secrets that sign it.
public struct WebhookAttemptPlan: Sendable {
    public var event: StoredWebhookEvent
    public var url: String
    public var body: [UInt8]
    /// The current secret first, then the previous one while it still signs.
    public var secrets: [String]
    /// The instance's claim.
    public var owner: String
}

/// What one attempt came to.
public struct WebhookAttemptOutcome: Sendable {
    public var startedAt: Double
    public var durationMs: Int
    /// The answer's status, nil when none came.
    public var responseStatus: Int?
    /// nil, or `timeout`, `connectionFailed`, `dnsFailure`, `forbiddenAddress`, `tlsFailure`, `invalidResponse`.
    public var error: String?
    public var retryAfterSeconds: Int?

    public init(startedAt: Double, durationMs: Int, responseStatus: Int?, error: String?, retryAfterSeconds: Int?) {
        self.startedAt = startedAt
        self.durationMs = durationMs
        self.responseStatus = responseStatus
        self.error = error
        self.retryAfterSeconds = retryAfterSeconds
    }

    public var succeeded: Bool { self.error == nil && (200..<300).contains(self.responseStatus ?? 0) }
}

/// What recording an outcome did to the webhook, for metrics and the audit log.
public struct WebhookRecordResult: Sendable, Equatable {
    public var disabled: WebhookDisabledReason?
    public var webhookID: String
    public var accountID: String?
    public var origin: String
}

/// The ping's answer.
public struct WebhookPingResult: Sendable, Equatable {
    public var eventID: String
    public var succeeded: Bool
    public var responseStatus: Int?
    public var durationMs: Int
    public var error: String?
}

/// Delivery's rules over storage: claiming due attempts, recording outcomes (retries, coalescing on
/// failure, disabling, catch-up), releasing claims of dead instances, pings, and the log's upkeep.
/// The engine (the app) runs these and sends the requests.
public struct WebhookDelivery: ServiceArea {
    let core: ServiceCore

    public init(_ service: ConcordService) { self.core = service.core }

    var environment: WebhookEnvironment {
        get throws(DomainError) {
            guard let e = self.core.webhookEnvironment else { throw DomainError.internalError(message: "webhooks are not configured") }
            return e
        }
    }

    /// Claims up to `limit` due attempts for `owner`.
    public func claim(owner: String, limit: Int) throws(DomainError) -> [WebhookAttemptPlan] {
        let env = try self.environment
        let now = self.now.timeIntervalSince1970
        let leaseUntil = now + Double(env.settings.leaseSeconds)
        return try self.run {
            try self.store.writeServer { tx in
                let events = try tx.claimDueWebhookEvents(now: now, owner: owner, leaseUntil: leaseUntil, keyID: env.secrets.keyID, limit: limit)
                var webhooks: [String: StoredWebhook] = [:]
                var plans: [WebhookAttemptPlan] = []
                for var event in events {
                    for _ in 0..<event.coalescedChanges { env.coalesced() }
                    guard let w = try webhooks[event.webhookID] ?? tx.webhook(id: event.webhookID) else { continue }
                    webhooks[w.webhookID] = w
                    guard let secrets = Self.secrets(w, env, now: now) else {
                        event.leaseOwner = nil
                        event.leaseUntil = nil
                        try tx.updateWebhookEvent(event, onlyIfUnclaimed: false)
                        continue
                    }
                    if event.type.isCoalesced { try tx.setWebhookFeedLastAttempt(webhookID: w.webhookID, feed: event.feed, at: now) }
                    plans.append(WebhookAttemptPlan(event: event, url: w.url, body: event.body, secrets: secrets, owner: owner))
                }
                return plans
            }
        }
    }

    /// The secrets that sign for `w` now, current first; nil when this instance's key did not seal the current one.
    static func secrets(_ w: StoredWebhook, _ env: WebhookEnvironment, now: Double) -> [String]? {
        guard w.secret.keyID == env.secrets.keyID,
              let current = env.secrets.open(w.secret.sealed, webhookID: w.webhookID, serial: w.secretSerial) else { return nil }
        var out = [current]
        if let p = w.previousSecret(at: now), p.keyID == env.secrets.keyID,
           let previous = env.secrets.open(p.sealed, webhookID: w.webhookID, serial: w.secretSerial - 1) {
            out.append(previous)
        }
        return out
    }

    /// Records an attempt's outcome and decides what comes next. nil when the claim was lost
    /// meanwhile (released as interrupted) or the webhook is gone.
    public func record(_ plan: WebhookAttemptPlan, _ outcome: WebhookAttemptOutcome) throws(DomainError) -> WebhookRecordResult? {
        let env = try self.environment
        let settings = env.settings
        let now = self.now.timeIntervalSince1970
        let result = try self.run {
            try self.core.write(account: plan.event.accountID, idempotency: nil) { tx -> WebhookRecordResult? in
                guard var e = try tx.webhookEvent(id: plan.event.eventID), e.leaseOwner == plan.owner,
                      var w = try tx.webhook(id: e.webhookID) else { return nil }
                try tx.insertWebhookAttempt(StoredWebhookAttempt(eventID: e.eventID, attemptedAt: outcome.startedAt, durationMs: outcome.durationMs,
                                                                 responseStatus: outcome.responseStatus, error: outcome.error))
                e.leaseOwner = nil
                e.leaseUntil = nil
                e.attempted = true
                var disabled: WebhookDisabledReason? = nil
                if outcome.succeeded {
                    e.status = .succeeded
                    e.nextAttemptAt = nil
                    e.manual = false
                    w.consecutiveFailures = 0
                    w.lastSuccessAt = now
                    try tx.updateWebhookEvent(e, onlyIfUnclaimed: false)
                    try tx.updateWebhook(w)
                    try Self.catchUp(tx, w, now: now, newID: self.core.newID, logSeconds: settings.logSeconds)
                    return WebhookRecordResult(disabled: nil, webhookID: w.webhookID, accountID: w.accountID, origin: WebhookService.origin(of: w.url))
                }
                w.consecutiveFailures += 1
                w.lastFailureAt = now
                if w.enabled {
                    if outcome.responseStatus == 410 {
                        disabled = .gone
                    } else if w.consecutiveFailures >= settings.disableAfterFailures,
                              w.lastSuccessAt.map({ now - $0 >= Double(settings.disableAfterSeconds) }) ?? true {
                        disabled = .failing
                    }
                }
                if let disabled {
                    w.enabled = false
                    w.disabledReason = disabled
                    w.disabledAt = now
                }
                try tx.updateWebhook(w)
                let n = e.attempts + 1
                e.attempts = n
                let newer = e.type.isCoalesced ? try tx.waitingWebhookEvent(webhookID: w.webhookID, feed: e.feed) : nil
                let spacing = e.type.isCoalesced ? outcome.startedAt + Double(w.minIntervalSeconds) : now
                if e.manual {
                    // A redelivery is one attempt, never retried.
                    e.manual = false
                    e.status = .failed
                    e.nextAttemptAt = nil
                } else if !w.enabled {
                    // Held: due again when the webhook is enabled; a newer waiting event takes its place.
                    if var newer {
                        e.status = .superseded
                        e.supersededBy = newer.eventID
                        e.nextAttemptAt = nil
                        newer.attempts = 0
                        try tx.updateWebhookEvent(newer, onlyIfUnclaimed: true)
                    } else {
                        e.nextAttemptAt = now
                    }
                } else {
                    let last = n >= settings.attemptsPerSchedule
                    let next = max(Self.retryTime(after: n, settings: settings, retryAfter: outcome.retryAfterSeconds, now: now), spacing)
                    if var newer {
                        if last {
                            e.status = .failed
                            e.nextAttemptAt = nil
                            newer.attempts = 0
                            newer.nextAttemptAt = max(now, spacing)
                        } else {
                            e.status = .superseded
                            e.supersededBy = newer.eventID
                            e.nextAttemptAt = nil
                            newer.attempts = n
                            newer.nextAttemptAt = next
                        }
                        try tx.updateWebhookEvent(newer, onlyIfUnclaimed: true)
                    } else if last {
                        e.status = .failed
                        e.nextAttemptAt = nil
                    } else {
                        e.nextAttemptAt = next
                    }
                }
                try tx.updateWebhookEvent(e, onlyIfUnclaimed: false)
                return WebhookRecordResult(disabled: disabled, webhookID: w.webhookID, accountID: w.accountID, origin: WebhookService.origin(of: w.url))
            }
        }
        return result
    }

    /// When the attempt after the n-th failed one comes: the schedule's delay lengthened by a random
    /// 0–20 % (never earlier), or `Retry-After` when later (at most 24 hours ahead).
    public static func retryTime(after n: Int, settings: WebhookSettings, retryAfter: Int?, now: Double,
                                 jitter: Double = Double.random(in: 0...0.2)) -> Double {
        let delay = Double(settings.retrySchedule[min(n - 1, settings.retrySchedule.count - 1)])
        var next = now + delay * (1 + jitter)
        if let retryAfter { next = max(next, now + Double(min(max(retryAfter, 0), 86_400))) }
        return next
    }

    /// After a success (or on enabling): a new event with the current token for each feed whose
    /// newest event failed within the log's days and has none waiting.
    static func catchUp(_ tx: any WebhookWrites, _ w: StoredWebhook, now: Double, newID: () -> String, logSeconds: Double = 7 * 86_400) throws {
        for head in try tx.failedWebhookFeedHeads(webhookID: w.webhookID) where head.createdAt >= now - logSeconds {
            guard try tx.waitingWebhookEvent(webhookID: w.webhookID, feed: head.feed) == nil else { continue }
            let last = try tx.webhookFeedLastAttempt(webhookID: w.webhookID, feed: head.feed)
            try tx.insertWebhookEvent(StoredWebhookEvent(
                eventID: newID(), webhookID: w.webhookID, accountID: head.accountID, feed: head.feed, type: head.type, createdAt: now,
                timestamp: head.timestamp, data: head.data, originDeviceID: head.originDeviceID,
                nextAttemptAt: max(now, (last ?? now) + Double(w.minIntervalSeconds))))
        }
    }

    /// On enabling: every held event due at once with a fresh schedule, and catch-up.
    static func releaseHeld(_ tx: any WebhookWrites, _ w: StoredWebhook, now: Double, settings: WebhookSettings, newID: () -> String) throws {
        for var e in try tx.webhookEvents(webhookID: w.webhookID, status: .pending, beforeSeq: nil, limit: Int(Int32.max)) where e.leaseOwner == nil {
            e.attempts = 0
            e.nextAttemptAt = now
            try tx.updateWebhookEvent(e, onlyIfUnclaimed: true)
        }
        try Self.catchUp(tx, w, now: now, newID: newID, logSeconds: settings.logSeconds)
    }

    /// Claims whose lease ran out (every claim with `all`: SQLite's start, one process owning the
    /// file): each recorded as an `interrupted` attempt and due again at once, not counted.
    public func releaseExpiredClaims(all: Bool) throws(DomainError) -> Int {
        let env = try self.environment
        let now = self.now.timeIntervalSince1970
        let expired = try self.run { try self.store.readServer { tx in try tx.expiredWebhookClaims(now: all ? .infinity : now) } }
        var released = 0
        for claimed in expired {
            let done = try self.run {
                try self.core.write(account: claimed.accountID, idempotency: nil) { tx -> Bool in
                    guard var e = try tx.webhookEvent(id: claimed.eventID), e.leaseOwner == claimed.leaseOwner,
                          let until = e.leaseUntil, all || until < now else { return false }
                    try tx.insertWebhookAttempt(StoredWebhookAttempt(eventID: e.eventID, attemptedAt: until - Double(env.settings.leaseSeconds),
                                                                     durationMs: 0, responseStatus: nil, error: "interrupted"))
                    e.leaseOwner = nil
                    e.leaseUntil = nil
                    e.attempted = true
                    if e.type == .ping {
                        e.status = .failed
                        e.nextAttemptAt = nil
                    } else if e.type.isCoalesced, var newer = try tx.waitingWebhookEvent(webhookID: e.webhookID, feed: e.feed) {
                        e.status = .superseded
                        e.supersededBy = newer.eventID
                        e.nextAttemptAt = nil
                        newer.attempts = e.attempts
                        newer.nextAttemptAt = now
                        try tx.updateWebhookEvent(newer, onlyIfUnclaimed: true)
                    } else {
                        e.nextAttemptAt = now
                    }
                    try tx.updateWebhookEvent(e, onlyIfUnclaimed: false)
                    return true
                }
            }
            if done { released += 1 }
        }
        return released
    }

    /// When the next pending event comes due (nil: none).
    public func nextDueTime() throws(DomainError) -> Double? {
        try self.run { try self.store.readServer { tx in try tx.nextWebhookDueTime() } }
    }

    public func dueCount() throws(DomainError) -> Int {
        let now = self.now.timeIntervalSince1970
        return try self.run { try self.store.readServer { tx in try tx.dueWebhookEventCount(now: now) } }
    }

    /// The key IDs stored secrets were sealed under that this instance lacks.
    public func foreignKeyIDs() throws(DomainError) -> [String] {
        let env = try self.environment
        return try self.run { try self.store.readServer { tx in try tx.webhookSecretKeyIDs() } }.filter { $0 != env.secrets.keyID }
    }

    /// The log's upkeep: finished events past `webhooks.logDays` or beyond the newest 10 000 per
    /// webhook go; held events older than `logDays` fail.
    public func maintain() throws(DomainError) {
        let env = try self.environment
        let now = self.now.timeIntervalSince1970
        let before = now - env.settings.logSeconds
        let held = try self.run { try self.store.readServer { tx in try tx.heldWebhookEvents(createdBefore: before) } }
        for old in held {
            try self.run {
                try self.core.write(account: old.accountID, idempotency: nil) { tx in
                    guard var e = try tx.webhookEvent(id: old.eventID), e.status == .pending, e.leaseOwner == nil else { return }
                    e.status = .failed
                    e.nextAttemptAt = nil
                    try tx.updateWebhookEvent(e, onlyIfUnclaimed: true)
                }
            }
        }
        try self.run { try self.store.writeServer { tx in try tx.pruneWebhookEvents(finishedBefore: before, keep: env.settings.logKeptPerWebhook) } }
    }

    // MARK: - Ping

    /// Starts a ping: one `webhook.ping` event, claimed by `owner`, attempted now whether the webhook
    /// is enabled or not. At most one per webhook per second.
    public func preparePing(_ who: WebhookOwner, id: String, owner: String, idempotency: IdempotencyScope? = nil) throws(DomainError) -> WebhookAttemptPlan {
        let env = try self.environment
        let now = self.now.timeIntervalSince1970
        let service = WebhookService(core: self.core)
        return try service.write(who, idempotency: idempotency) { tx in
            var w = try WebhookService.require(tx, who, id)
            if let last = w.lastPingAt, now - last < 1, now >= last { throw DomainError.tooManyRequests(retryAfter: 1) }
            guard let secrets = Self.secrets(w, env, now: now) else {
                throw DomainError.unavailable(message: "This instance lacks the webhook key that sealed this webhook's secret (webhooks.secretKey).")
            }
            w.lastPingAt = now
            try tx.updateWebhook(w)
            let data = WebhookJSON.object([("webhookID", WebhookJSON.string(w.webhookID))])
            var event = StoredWebhookEvent(eventID: self.core.newID(), webhookID: w.webhookID, accountID: w.accountID ?? "",
                                           feed: "P:" + w.webhookID, type: .ping, createdAt: now, timestamp: now, data: data,
                                           originDeviceID: nil, nextAttemptAt: nil, leaseOwner: owner,
                                           leaseUntil: now + Double(env.settings.leaseSeconds))
            event.seq = try tx.insertWebhookEvent(event)
            return WebhookAttemptPlan(event: event, url: w.url, body: event.body, secrets: secrets, owner: owner)
        }
    }

    /// Records the ping's one attempt; it changes no counter of the webhook.
    public func finishPing(_ plan: WebhookAttemptPlan, _ outcome: WebhookAttemptOutcome, _ who: WebhookOwner) throws(DomainError) -> WebhookPingResult {
        let service = WebhookService(core: self.core)
        try service.write(who) { tx in
            guard var e = try tx.webhookEvent(id: plan.event.eventID) else { return }
            try tx.insertWebhookAttempt(StoredWebhookAttempt(eventID: e.eventID, attemptedAt: outcome.startedAt, durationMs: outcome.durationMs,
                                                             responseStatus: outcome.responseStatus, error: outcome.error))
            e.leaseOwner = nil
            e.leaseUntil = nil
            e.attempted = true
            e.attempts = 1
            e.status = outcome.succeeded ? .succeeded : .failed
            try tx.updateWebhookEvent(e, onlyIfUnclaimed: false)
        }
        return WebhookPingResult(eventID: plan.event.eventID, succeeded: outcome.succeeded, responseStatus: outcome.responseStatus,
                                 durationMs: outcome.durationMs, error: outcome.error)
    }
}
