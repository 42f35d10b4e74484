import ConcordDomain
import ConcordObservability

/// What route handlers share: configuration, logging, metrics, the admin token and
/// storage. Built once by `startApp` and captured by the route closures.
public final class AppContext: Sendable {
    public let configuration: Configuration
    public let logger: Logger
    /// Register module metrics here; `/metrics` exposes the whole registry.
    public let metrics: MetricsRegistry
    /// The effective admin token (configured, or generated and kept in the data directory).
    public let adminToken: String
    /// The opened store and the service over it (see `StorageHook`).
    public let storage: StorageHook
    /// Mapping outcomes and storage latency (see `AppMetrics`).
    let appMetrics: AppMetrics
    /// Token buckets per address and per caller (`rateLimits`).
    let rates: RequestRates
    /// Held long-polls of the change feeds, woken by the store's feed signals.
    let longPolls: LongPolls
    /// The one clock of rate limits, long-polls, the pipeline's timing and the dispatcher.
    let clock: AppClock

    /// The one domain service every route calls (on the worker pool, never on a loop).
    public var service: ConcordService { self.storage.service }
    /// Delivers webhook events (nil in contexts built without one: pings answer 404).
    let webhookEngine: WebhookDeliveryEngine?

    /// `POST …/webhooks/{id}/ping`: one attempt now, and its outcome.
    func webhookPing(_ owner: WebhookOwner, id: String, idempotency: IdempotencyScope?) throws -> WebhookPingResult {
        guard let engine = self.webhookEngine else { throw DomainError.notFound(message: "Webhooks are not served here.") }
        return try engine.ping(owner, id: id, idempotency: idempotency)
    }

    /// - Parameter scheduler: where long-poll deadlines wait (nil: a process-wide one; `startApp`
    ///   passes its own, stopped at shutdown). Deadlines are read on its clock.
    /// - Parameter webhooks: delivers webhook events (nil: pings answer 404).
    public convenience init(configuration: Configuration, logger: Logger, metrics: MetricsRegistry, adminToken: String, storage: StorageHook,
                            clock: AppClock = .monotonic, scheduler: (any TimedWorkScheduler)? = nil) {
        self.init(configuration: configuration, logger: logger, metrics: metrics, adminToken: adminToken, storage: storage, clock: clock,
                  scheduler: scheduler, webhooks: nil)
    }

    init(configuration: Configuration, logger: Logger, metrics: MetricsRegistry, adminToken: String, storage: StorageHook,
         clock: AppClock, scheduler: (any TimedWorkScheduler)?, webhooks: WebhookDeliveryEngine?) {
        self.webhookEngine = webhooks
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        self.adminToken = adminToken
        self.storage = storage
        self.appMetrics = AppMetrics(registry: metrics)
        self.clock = clock
        self.rates = RequestRates(configuration.rateLimits, metrics: metrics, clock: clock)
        let longPolls = LongPolls(maxWaiting: configuration.longPoll.maxWaiting, maxWaitingPerAccount: configuration.longPoll.maxWaitingPerAccount,
                                  metrics: metrics, scheduler: scheduler ?? Scheduler.shared)
        storage.store.feedSignals.observe { signal in longPolls.signal(signal) }
        self.longPolls = longPolls
    }

    private static let decimalCharacters = Set("0123456789.eE+-".utf8)

    /// Whether the poll's token still belongs to `device`, asked each time a held poll wakes: a
    /// token rotated, or whose device or account was deleted or replaced, ends its polls with
    /// `401` at the revocation, never with data committed after it.
    func requireStillAuthorized(_ request: RequestContext, _ device: DeviceRef) throws {
        guard let token = request.bearerToken, case .device(device)? = try self.service.accounts.authenticate(token: token) else {
            throw DomainError.unauthorized
        }
    }

    /// A long-poll's `wait=` in seconds (0 without one), at most `longPoll.maxWaitSeconds`.
    func waitQuery(_ request: RequestContext) throws(APIError) -> Double {
        guard let text = request.query("wait") else { return 0 }
        // A decimal number (no hexadecimal, no `nan`/`inf`); `-0` is 0.
        guard text.utf8.allSatisfy({ Self.decimalCharacters.contains($0) }), let seconds = Double(text), seconds.isFinite, seconds >= 0 else {
            throw APIError.badRequest("wait must be a number of seconds, 0 or more.", field: "wait")
        }
        return min(seconds, self.configuration.longPoll.maxWaitSeconds)
    }

    /// Elements a batch body may hold while it is parsed: `maxBatch` items of up to three
    /// elements each (a journal photo is an object with a member), and room for the rest.
    var batchElements: Int { self.configuration.server.limits.maxBatch * 3 + 1024 }

    /// One audit line (JSON, `"audit": true`): a token issued, rotated or revoked, or a failed
    /// authentication. Never the token itself.
    func audit(_ event: String, _ request: RequestContext, _ fields: LogMetadata) {
        var metadata = fields
        metadata["audit"] = .bool(true)
        metadata["route"] = .string(request.routePattern)
        if let address = request.connection.remoteAddress { metadata["remoteAddress"] = .string(address) }
        request.logger.notice(event, metadata: metadata)
    }

    /// Whether `token` is the admin token, compared in constant time.
    public func isAdminToken(_ token: String?) -> Bool {
        guard let token else { return false }
        return Secrets.constantTimeEquals(Array(token.utf8), Array(self.adminToken.utf8))
    }
}
