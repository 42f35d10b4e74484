import Foundation

/// Whose webhooks a caller manages: an account's (account token) or the server's (admin token).
public enum WebhookOwner: Sendable, Equatable {
    case account(String)
    case server

    var accountID: String? {
        if case .account(let a) = self { return a }
        return nil
    }
    var scope: WebhookScope { self.accountID == nil ? .server : .account }
}

/// The members a create or `PATCH` sets; nil keeps (or, on create, defaults) a value.
public struct WebhookInput: Sendable, Equatable {
    public var url: String?
    public var events: [String]?
    public var description: String?
    public var enabled: Bool?
    public var minIntervalSeconds: Int?
    public init(url: String? = nil, events: [String]? = nil, description: String? = nil, enabled: Bool? = nil, minIntervalSeconds: Int? = nil) {
        self.url = url
        self.events = events
        self.description = description
        self.enabled = enabled
        self.minIntervalSeconds = minIntervalSeconds
    }
}

/// A webhook as answered.
public struct WebhookView: Sendable, Equatable {
    public var webhook: StoredWebhook
    public var pendingEvents: Int
    /// `previousSecretExpiresAt`: nil once the previous secret no longer signs.
    public var previousSecretExpiresAt: Double?
}

/// An event as the deliveries log shows it.
public struct DeliveryView: Sendable, Equatable {
    public var event: StoredWebhookEvent
    public var attempts: [StoredWebhookAttempt]
    /// nil unless pending and the webhook enabled (held events have none).
    public var nextAttemptAt: Double?
}

/// What changed in an update, for the audit log.
public struct WebhookChange: Sendable, Equatable {
    public var view: WebhookView
    public var origin: String
    public var enabledNow: Bool
    public var disabledNow: Bool
}

/// Webhooks: management (create, list, update, delete, rotate, the deliveries log, redelivery).
/// Delivery itself is `WebhookDelivery`'s.
public struct WebhookService: ServiceArea {
    let core: ServiceCore

    var environment: WebhookEnvironment {
        get throws(DomainError) {
            guard let e = self.core.webhookEnvironment else { throw DomainError.notFound(message: "Webhooks are not served here.") }
            return e
        }
    }

    /// Validates and stores a new webhook; returns it and its secret (shown once), and the
    /// destination's origin for the audit line.
    public func create(_ owner: WebhookOwner, _ input: WebhookInput, idempotency: IdempotencyScope? = nil)
        throws(DomainError) -> (view: WebhookView, secret: String, origin: String) {
        let env = try self.environment
        guard let url = input.url else { throw DomainError.badRequest(message: "url is required.", field: "url") }
        guard let eventNames = input.events else { throw DomainError.badRequest(message: "events is required.", field: "events") }
        let events = try Self.validateEvents(eventNames, owner: owner)
        let description = try Self.validateDescription(input.description ?? "")
        let interval = try Self.validateInterval(input.minIntervalSeconds ?? 1)
        let origin = try Self.checkDestination(url, env)
        let now = self.now.timeIntervalSince1970
        let id = self.core.newID()
        let secret = env.secrets.newSecret()
        let sealed = StoredWebhookSecret(sealed: env.secrets.seal(secret, webhookID: id, serial: 1), keyID: env.secrets.keyID, createdAt: now)
        let enabled = input.enabled ?? true
        let webhook = StoredWebhook(
            webhookID: id, scope: owner.scope, accountID: owner.accountID, url: url, events: events, description: description,
            enabled: enabled, disabledReason: enabled ? nil : .manual, disabledAt: enabled ? nil : now, minIntervalSeconds: interval,
            createdAt: now, updatedAt: now, secret: sealed, previousSecret: nil, secretSerial: 1, consecutiveFailures: 0,
            lastSuccessAt: nil, lastFailureAt: nil, lastPingAt: nil)
        try self.write(owner, idempotency: idempotency) { tx in
            let count = try tx.webhooks(accountID: owner.accountID).count
            let (quota, limit) = owner.accountID == nil
                ? ("maxServerWebhooks", env.settings.maxServerWebhooks) : ("webhooksPerAccount", env.settings.webhooksPerAccount)
            if count >= limit { throw DomainError.quotaExceeded(quota: quota, limit: limit) }
            try tx.insertWebhook(webhook)
        }
        return (WebhookView(webhook: webhook, pendingEvents: 0, previousSecretExpiresAt: nil), secret, origin)
    }

    /// The owner's webhooks in creation order.
    public func list(_ owner: WebhookOwner) throws(DomainError) -> [WebhookView] {
        _ = try self.environment
        let now = self.now.timeIntervalSince1970
        return try self.read(owner) { tx in
            try tx.webhooks(accountID: owner.accountID).map { w in try Self.view(tx, w, now: now) }
        }
    }

    public func get(_ owner: WebhookOwner, id: String) throws(DomainError) -> WebhookView {
        _ = try self.environment
        let now = self.now.timeIntervalSince1970
        return try self.read(owner) { tx in try Self.view(tx, try Self.require(tx, owner, id), now: now) }
    }

    /// A JSON merge patch over the five members; a refused patch changes nothing.
    public func update(_ owner: WebhookOwner, id: String, _ patch: WebhookInput) throws(DomainError) -> WebhookChange {
        let env = try self.environment
        let events = try patch.events.map { names throws(DomainError) in try Self.validateEvents(names, owner: owner) }
        let description = try patch.description.map { d throws(DomainError) in try Self.validateDescription(d) }
        let interval = try patch.minIntervalSeconds.map { i throws(DomainError) in try Self.validateInterval(i) }
        var origin: String? = nil
        if let url = patch.url { origin = try Self.checkDestination(url, env) }
        let now = self.now.timeIntervalSince1970
        let change = try self.write(owner) { tx -> WebhookChange in
            var w = try Self.require(tx, owner, id)
            let wasEnabled = w.enabled
            if let url = patch.url {
                w.url = url
                w.consecutiveFailures = 0
            }
            if let events {
                for removed in w.events where !events.contains(removed) {
                    try tx.cancelPendingWebhookEvents(webhookID: w.webhookID, accountID: nil, feed: nil, type: removed)
                }
                w.events = events
            }
            if let description { w.description = description }
            if let interval { w.minIntervalSeconds = interval }
            if let enabled = patch.enabled {
                if enabled {
                    w.consecutiveFailures = 0
                    if !wasEnabled {
                        w.enabled = true
                        w.disabledReason = nil
                        w.disabledAt = nil
                    }
                } else if wasEnabled {
                    w.enabled = false
                    w.disabledReason = .manual
                    w.disabledAt = now
                }
            }
            w.updatedAt = now
            try tx.updateWebhook(w)
            // The events it hears may have changed: its feeds' next commits check who hears them.
            try tx.recheckWebhookFeeds(accountID: w.accountID)
            if w.enabled && !wasEnabled {
                try WebhookDelivery.releaseHeld(tx, w, now: now, settings: env.settings, newID: self.core.newID)
            }
            return WebhookChange(view: try Self.view(tx, w, now: now), origin: origin ?? Self.origin(of: w.url),
                                 enabledNow: w.enabled && !wasEnabled, disabledNow: !w.enabled && wasEnabled)
        }
        if change.enabledNow { env.wake() }
        return change
    }

    /// Deletes the webhook with its pending events and its log; returns its origin for the audit line.
    public func delete(_ owner: WebhookOwner, id: String) throws(DomainError) -> String {
        _ = try self.environment
        return try self.write(owner) { tx in
            let w = try Self.require(tx, owner, id)
            try tx.deleteWebhook(id: w.webhookID)
            return Self.origin(of: w.url)
        }
    }

    /// A new secret; the previous one keeps signing (second signature) for `previousSecretTTLSeconds`.
    public func rotateSecret(_ owner: WebhookOwner, id: String, previousSecretTTLSeconds ttl: Int?, idempotency: IdempotencyScope? = nil)
        throws(DomainError) -> (secret: String, previousSecretExpiresAt: Double?, origin: String) {
        let env = try self.environment
        let ttl = ttl ?? 86_400
        guard (0...604_800).contains(ttl) else {
            throw DomainError.badRequest(message: "previousSecretTTLSeconds must be 0 to 604800.", field: "previousSecretTTLSeconds")
        }
        let now = self.now.timeIntervalSince1970
        let secret = env.secrets.newSecret()
        return try self.write(owner, idempotency: idempotency) { tx in
            var w = try Self.require(tx, owner, id)
            let serial = w.secretSerial + 1
            let expires: Double? = ttl > 0 ? now + Double(ttl) : nil
            // A secret sealed under a key this instance lacks cannot sign: it is not kept as the previous one.
            let previousUsable = env.secrets.open(w.secret.sealed, webhookID: w.webhookID, serial: w.secretSerial) != nil
            w.previousSecret = (expires != nil && previousUsable)
                ? StoredWebhookSecret(sealed: w.secret.sealed, keyID: w.secret.keyID, createdAt: w.secret.createdAt, expiresAt: expires) : nil
            // The previous secret's serial is kept in its sealed bytes' position: serial - 1.
            w.secret = StoredWebhookSecret(sealed: env.secrets.seal(secret, webhookID: w.webhookID, serial: serial), keyID: env.secrets.keyID,
                                           createdAt: now)
            w.secretSerial = serial
            w.updatedAt = now
            try tx.updateWebhook(w)
            return (secret, w.previousSecret == nil ? nil : expires, Self.origin(of: w.url))
        }
    }

    /// The deliveries log, newest first; `after` must name an event of the list as filtered.
    public func deliveries(_ owner: WebhookOwner, id: String, status: String?, after: String?, limit: Int?)
        throws(DomainError) -> (deliveries: [DeliveryView], hasMore: Bool) {
        _ = try self.environment
        let filter = try status.map { s throws(DomainError) -> WebhookEventStatus in
            guard let f = WebhookEventStatus(rawValue: s) else {
                throw DomainError.badRequest(message: "status must be one of pending, succeeded, failed, superseded, cancelled.", field: "status")
            }
            return f
        }
        let limit = limit ?? 100
        guard (1...1000).contains(limit) else { throw DomainError.badRequest(message: "limit must be 1 to 1000.", field: "limit") }
        let now = self.now.timeIntervalSince1970
        return try self.read(owner) { tx in
            let w = try Self.require(tx, owner, id)
            var before: Int64? = nil
            if let after {
                guard let e = try tx.webhookEvent(id: after), e.webhookID == w.webhookID, filter == nil || e.status == filter else {
                    throw DomainError.badRequest(message: "after names nothing in this list (the last eventID of the previous page is expected).",
                                                 field: "after")
                }
                before = e.seq
            }
            let events = try tx.webhookEvents(webhookID: w.webhookID, status: filter, beforeSeq: before, limit: limit + 1)
            let page = Array(events.prefix(limit))
            let attempts = try tx.webhookAttempts(eventIDs: page.map(\.eventID))
            let views = page.map { Self.delivery($0, attempts[$0.eventID] ?? [], w, now: now) }
            return (views, events.count > limit)
        }
    }

    public func delivery(_ owner: WebhookOwner, id: String, eventID: String) throws(DomainError) -> DeliveryView {
        _ = try self.environment
        let now = self.now.timeIntervalSince1970
        return try self.read(owner) { tx in
            let w = try Self.require(tx, owner, id)
            guard let e = try tx.webhookEvent(id: eventID), e.webhookID == w.webhookID else { throw DomainError.notFound(message: "No such event.") }
            return Self.delivery(e, try tx.webhookAttempts(eventIDs: [e.eventID])[e.eventID] ?? [], w, now: now)
        }
    }

    /// Queues the event again, due at once, as one more attempt that is not retried.
    public func redeliver(_ owner: WebhookOwner, id: String, eventID: String, idempotency: IdempotencyScope? = nil) throws(DomainError) -> DeliveryView {
        let env = try self.environment
        let now = self.now.timeIntervalSince1970
        let view = try self.write(owner, idempotency: idempotency) { tx -> DeliveryView in
            let w = try Self.require(tx, owner, id)
            guard var e = try tx.webhookEvent(id: eventID), e.webhookID == w.webhookID else { throw DomainError.notFound(message: "No such event.") }
            guard w.enabled else { throw DomainError.webhookDisabled }
            if e.type.isCoalesced, let newest = try tx.newestWebhookEvent(webhookID: w.webhookID, feed: e.feed), newest.eventID != e.eventID {
                throw DomainError.eventSuperseded(supersededBy: newest.eventID)
            }
            if e.status != .pending {
                e.status = .pending
                e.manual = true
                e.supersededBy = nil
            }
            e.nextAttemptAt = now
            try tx.updateWebhookEvent(e, onlyIfUnclaimed: false)
            return Self.delivery(e, try tx.webhookAttempts(eventIDs: [e.eventID])[e.eventID] ?? [], w, now: now)
        }
        env.wake()
        return view
    }

    // MARK: - Shared

    func read<T>(_ owner: WebhookOwner, _ body: (any WebhookReads) throws -> T) throws(DomainError) -> T {
        switch owner {
        case .account(let a): return try self.run { try self.store.read(account: a) { tx in try body(tx) } }
        case .server: return try self.run { try self.store.readServer { tx in try body(tx) } }
        }
    }

    /// An account's write (its `Idempotency-Key`, if any, marked applied in it) or a server write.
    func write<T>(_ owner: WebhookOwner, idempotency: IdempotencyScope? = nil, _ body: (any WebhookWrites) throws -> T) throws(DomainError) -> T {
        switch owner {
        case .account(let a):
            return try self.run {
                try self.core.write(account: a, idempotency: idempotency) { tx in
                    guard try tx.accountExists() else { throw DomainError.notFound(message: "No such account.") }
                    return try body(tx)
                }
            }
        case .server: return try self.run { try self.store.writeServer { tx in try body(tx) } }
        }
    }

    static func require(_ tx: any WebhookReads, _ owner: WebhookOwner, _ id: String) throws -> StoredWebhook {
        guard let w = try tx.webhook(id: id), w.accountID == owner.accountID, w.scope == owner.scope else {
            throw DomainError.notFound(message: "No such webhook.")
        }
        return w
    }

    static func view(_ tx: any WebhookReads, _ w: StoredWebhook, now: Double) throws -> WebhookView {
        WebhookView(webhook: w, pendingEvents: try tx.pendingWebhookEventCount(webhookID: w.webhookID),
                    previousSecretExpiresAt: w.previousSecret(at: now)?.expiresAt)
    }

    static func delivery(_ e: StoredWebhookEvent, _ attempts: [StoredWebhookAttempt], _ w: StoredWebhook, now: Double) -> DeliveryView {
        DeliveryView(event: e, attempts: attempts, nextAttemptAt: e.status == .pending && w.enabled ? e.nextAttemptAt : nil)
    }

    static func validateEvents(_ names: [String], owner: WebhookOwner) throws(DomainError) -> [WebhookEventType] {
        guard (1...6).contains(names.count) else { throw DomainError.badRequest(message: "events must list 1 to 6 event types.", field: "events") }
        var seen: [WebhookEventType] = []
        for name in names {
            guard let type = WebhookEventType(rawValue: name), type != .ping else {
                throw DomainError.badRequest(message: "events: unknown event type \"\(name)\".", field: "events")
            }
            if type == .accountDeleted, owner.accountID != nil {
                throw DomainError.badRequest(message: "events: account.deleted is sent to server webhooks only.", field: "events")
            }
            if seen.contains(type) { throw DomainError.badRequest(message: "events: \"\(name)\" is listed twice.", field: "events") }
            seen.append(type)
        }
        return seen
    }

    static func validateDescription(_ d: String) throws(DomainError) -> String {
        guard d.utf8.count <= 1024 else { throw DomainError.badRequest(message: "description must be at most 1024 bytes.", field: "description") }
        return d
    }

    static func validateInterval(_ i: Int) throws(DomainError) -> Int {
        guard (1...3600).contains(i) else { throw DomainError.badRequest(message: "minIntervalSeconds must be 1 to 3600.", field: "minIntervalSeconds") }
        return i
    }

    /// Form first (`400`), then scheme and addresses (`422`).
    static func checkDestination(_ url: String, _ env: WebhookEnvironment) throws(DomainError) -> String {
        switch env.destinations.check(url: url) {
        case .allowed(let origin): return origin
        case .invalid(let message): throw DomainError.badRequest(message: "url: " + message, field: "url")
        case .forbidden(let reason, _): throw DomainError.forbiddenDestination(reason: reason)
        }
    }

    /// `scheme://host:port` of a stored URL, for logs (never its path or query).
    public static func origin(of url: String) -> String {
        guard let c = URLComponents(string: url), let scheme = c.scheme?.lowercased(), let host = c.host else { return "?" }
        let port = c.port ?? (scheme == "https" ? 443 : 80)
        let shownHost = host.contains(":") && !host.hasPrefix("[") ? "[" + host + "]" : host
        return scheme + "://" + shownHost + ":" + String(port)
    }
}
