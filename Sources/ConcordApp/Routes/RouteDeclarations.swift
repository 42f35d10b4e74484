import ConcordDomain
import ConcordHTTP
import ConcordObservability

/// Caller-typed route declarations. An API route is declared as a device, account or
/// admin route with its whole policy — body class, idempotency, scheduling — and its handler; the
/// declaration builds the route's `RoutePipeline` (authenticate → caller rate → idempotency →
/// timing), so a handler only decodes, calls the service once and encodes.
extension AppContext {
    /// A handler of an API route: may throw `APIError` (decoding) or `DomainError` (the service).
    typealias Handler<Caller> = @Sendable (RequestContext, Caller) throws -> HTTPResponse

    /// A route for device tokens; the handler gets the device.
    func deviceRoute(_ method: String, _ pattern: String, operation: String, body: Route.BodyClass = .small, idempotent: Bool = false,
                     scheduling: Route.Scheduling = .blockingPool, _ handler: @escaping Handler<DeviceRef>) -> Route {
        self.route(DeviceCaller.self, method, pattern, operation, body, idempotent, scheduling, handler)
    }

    /// A route for account tokens; the handler gets the account ID.
    func accountRoute(_ method: String, _ pattern: String, operation: String, body: Route.BodyClass = .small, idempotent: Bool = false,
                      _ handler: @escaping Handler<String>) -> Route {
        self.route(AccountCaller.self, method, pattern, operation, body, idempotent, .blockingPool, handler)
    }

    /// A route for an account token or a device token; the handler gets the account and the device, if any.
    func accountOrDeviceRoute(_ method: String, _ pattern: String, operation: String, body: Route.BodyClass = .small, idempotent: Bool = false,
                              _ handler: @escaping Handler<(accountID: String, device: DeviceRef?)>) -> Route {
        self.route(AccountOrDeviceCaller.self, method, pattern, operation, body, idempotent, .blockingPool, handler)
    }

    /// A route for the admin token.
    func adminRoute(_ method: String, _ pattern: String, operation: String, body: Route.BodyClass = .small, idempotent: Bool = false,
                    _ handler: @escaping Handler<Void>) -> Route {
        self.route(AdminCaller.self, method, pattern, operation, body, idempotent, .blockingPool, handler)
    }

    /// A device route answered through `respond`, now or later (a long-poll); the
    /// handler's own work (not the wait) is timed.
    func deviceDeferredRoute(_ method: String, _ pattern: String, operation: String,
                             _ handler: @escaping @Sendable (RequestContext, DeviceRef, DeferredAnswer) throws -> Void) -> Route {
        let pipeline = self.pipeline(DeviceCaller.self, operation: operation, idempotent: false)
        return Route(method, pattern, caller: .device, admit: pipeline.admit) { request, answer throws(APIError) in
            try pipeline.answer(request) { context in try handler(context.request, context.value, answer) }
        }
    }

    private func route<Kind: CallerKind>(_ kind: Kind.Type, _ method: String, _ pattern: String, _ operation: String, _ body: Route.BodyClass,
                                         _ idempotent: Bool, _ scheduling: Route.Scheduling,
                                         _ handler: @escaping Handler<Kind.Value>) -> Route {
        let pipeline = self.pipeline(kind, operation: operation, idempotent: idempotent)
        return Route(method, pattern, caller: Kind.kind, body: body, idempotent: idempotent, scheduling: scheduling,
                     admit: pipeline.admit) { request throws(APIError) in
            try pipeline.respond(request) { context in try handler(context.request, context.value) }
        }
    }

    /// The stages of a route of callers `Kind`.
    private func pipeline<Kind: CallerKind>(_ kind: Kind.Type, operation: String, idempotent: Bool) -> RoutePipeline<Kind> {
        RoutePipeline(
            authenticate: AuthenticateStage(identify: { token, request throws(APIError) in try self.identify(token, request) },
                                            refused: { request, error, reason in self.refused(request, error, reason) }),
            callerRate: CallerRateStage(rates: self.rates),
            idempotency: idempotent ? IdempotencyStage(keys: self.service.idempotency) : nil,
            timing: TimingStage(histogram: self.appMetrics.operation(operation), operation: operation, clock: self.clock))
    }

    /// Who holds `token`: the admin (compared in constant time, no storage), an account or a
    /// device (a storage read, timed as `operation="authenticate"`), or nobody.
    private func identify(_ token: String, _ request: RequestContext) throws(APIError) -> AuthenticatedCaller? {
        if self.isAdminToken(token) { return .admin }
        let timing = TimingStage(histogram: self.appMetrics.authenticate, operation: "authenticate", clock: self.clock)
        let found = try timing.handle(request) { try self.service.accounts.authenticateWithDeviceCheck(token: token) }
        request.deviceCheck.check = found?.deviceCheck
        switch found?.principal {
        case .device(let device): return .device(device)
        case .account(let accountID): return .account(accountID: accountID)
        case nil: return nil
        }
    }

    /// A failed authentication, audited (the token itself never is). An unknown token — a guess —
    /// also costs its address `rateLimits.failedAuthCost` requests; a missing one costs nothing extra.
    private func refused<Kind>(_ request: RequestContext, _ error: APIError, _ reason: AuthenticateStage<Kind>.Refusal) -> APIError {
        self.audit("authentication failed", request, ["status": .int(error.status), "reason": .string(reason.rawValue)])
        if reason == .unknownToken { self.rates.failedAuthentication(request.connection.remoteAddress) }
        return error
    }

    /// The body limit of the declared route `method` `pattern` (nil: the server's own, or no such route).
    func maxBodyBytes(_ method: String, _ pattern: String) -> Int? {
        guard let route = allRoutes(self).first(where: { $0.method == method && $0.pattern == pattern }) else { return nil }
        return BodyLimits(self.configuration.server.limits).limit(route.body)
    }
}

/// The byte limit of each body class: the server's own for whole manifests and change batches,
/// room for `maxBatch` identifiers (255 bytes each, written with escapes at worst) where a batch
/// goes, and `smallBodyBytes` everywhere else.
struct BodyLimits: Sendable {
    var small: Int?
    var batch: Int?
    var manifest: Int?

    /// No route-specific limits (the server's own applies): dispatchers built without a configuration.
    static let serverOnly = BodyLimits(small: nil, batch: nil, manifest: nil)

    init(small: Int?, batch: Int?, manifest: Int?) {
        self.small = small
        self.batch = batch
        self.manifest = manifest
    }

    init(_ limits: Configuration.Limits) {
        self.init(small: min(limits.bodyBytes, limits.smallBodyBytes), batch: min(limits.bodyBytes, limits.maxBatch * 1536 + 64 * 1024), manifest: nil)
    }

    func limit(_ body: Route.BodyClass) -> Int? {
        switch body {
        case .small: self.small
        case .batch: self.batch
        case .manifest: self.manifest
        }
    }
}
