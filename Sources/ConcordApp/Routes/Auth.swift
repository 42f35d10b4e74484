import ConcordDomain
import ConcordHTTP
import ConcordObservability

/// Caller-typed route declarations (API.md §1). An API route is declared as a device, account or
/// admin route; the declaration authenticates the bearer token (missing or unknown `401`, another
/// kind `403`), times the handler into `concord_storage_duration_seconds{operation}` and maps its
/// errors to the contract's answers, so a handler only decodes, calls the service once and encodes.
extension AppContext {
    /// A handler of an API route: may throw `APIError` (decoding) or `DomainError` (the service).
    typealias Handler<Caller> = @Sendable (RequestContext, Caller) throws -> HTTPResponse

    /// A route for device tokens; the handler gets the device.
    func deviceRoute(_ method: String, _ pattern: String, operation: String, _ handler: @escaping Handler<DeviceRef>) -> Route {
        self.route(method, pattern, .device, operation, authenticate: self.device) { request, device in try handler(request, device) }
    }

    /// A route for account tokens; the handler gets the account ID.
    func accountRoute(_ method: String, _ pattern: String, operation: String, _ handler: @escaping Handler<String>) -> Route {
        self.route(method, pattern, .account, operation) { request throws(APIError) in
            guard case .account(let accountID) = try self.principal(request) else { throw self.refused(request, .forbidden, "token of another kind") }
            return accountID
        } handler: { request, accountID in try handler(request, accountID) }
    }

    /// A route for the admin token.
    func adminRoute(_ method: String, _ pattern: String, operation: String, _ handler: @escaping Handler<Void>) -> Route {
        self.route(method, pattern, .admin, operation) { request throws(APIError) in
            guard let token = request.bearerToken else { throw self.refused(request, .unauthorized, "no token") }
            if self.isAdminToken(token) { return () }
            guard try self.authenticate(token, request) != nil else { throw self.refused(request, .unauthorized, Self.unknownToken) }
            throw self.refused(request, .forbidden, "token of another kind")
        } handler: { request, _ in try handler(request, ()) }
    }

    /// The device whose token the request presents (`401`/`403` otherwise).
    private func device(_ request: RequestContext) throws(APIError) -> DeviceRef {
        guard case .device(let device) = try self.principal(request) else { throw self.refused(request, .forbidden, "token of another kind") }
        return device
    }

    /// Who presented the request's token (never the admin), or `401` when it is missing or unknown.
    private func principal(_ request: RequestContext) throws(APIError) -> Principal {
        guard let token = request.bearerToken else { throw self.refused(request, .unauthorized, "no token") }
        // The admin token is no account's or device's: a valid token of the wrong kind.
        if self.isAdminToken(token) { throw self.refused(request, .forbidden, "admin token") }
        guard let principal = try self.authenticate(token, request) else { throw self.refused(request, .unauthorized, Self.unknownToken) }
        return principal
    }

    /// A failed authentication, audited (the token itself never is). An unknown token — a guess —
    /// also costs its address `rateLimits.failedAuthCost` requests; a missing one costs nothing extra.
    private func refused(_ request: RequestContext, _ error: APIError, _ reason: String) -> APIError {
        self.audit("authentication failed", request, ["status": .int(error.status), "reason": .string(reason)])
        if reason == Self.unknownToken { self.rates.failedAuthentication(request.request.remoteAddress) }
        return error
    }

    private static let unknownToken = "unknown token"

    private func authenticate(_ token: String, _ request: RequestContext) throws(APIError) -> Principal? {
        try self.timed(self.appMetrics.authenticate, request, operation: "authenticate") { try self.service.accounts.authenticate(token: token) }
    }

    /// The route, its token also checked from the head when the transport asks before reading
    /// a body (then the caller found there is the handler's, not looked up again).
    private func route<Caller: Sendable>(_ method: String, _ pattern: String, _ caller: RouteCaller, _ operation: String,
                                         authenticate: @escaping @Sendable (RequestContext) throws(APIError) -> Caller,
                                         handler: @escaping Handler<Caller>) -> Route {
        let histogram = self.appMetrics.operation(operation)
        let who = self.callerCheck(authenticate)
        let honoursKey = Self.honoursIdempotencyKey(method, pattern)
        var route = Route(method, pattern, caller: caller) { request throws(APIError) in
            let caller = try who.handler(request)
            let run = { () throws(APIError) -> HTTPResponse in
                try self.timed(histogram, request, operation: operation) { try handler(request, caller) }
            }
            guard honoursKey, let key = request.request.headers[first: "Idempotency-Key"] else { return try run() }
            return try self.idempotently(request, key: key, accountID: Self.accountID(of: caller), run)
        }
        route.admit = who.admit
        route.maxBodyBytes = self.maxBodyBytes(method, pattern)
        return route
    }

    /// A device route answered through `respond`, now or later (a long-poll, issue 13); the
    /// handler's own work (not the wait) is timed.
    func deviceDeferredRoute(_ method: String, _ pattern: String, operation: String,
                             _ handler: @escaping @Sendable (RequestContext, DeviceRef, DeferredAnswer) throws -> Void) -> Route {
        let histogram = self.appMetrics.operation(operation)
        let who = self.callerCheck(self.device)
        var route = Route(method, pattern, caller: .device) { request, answer throws(APIError) in
            let device = try who.handler(request)
            try self.timed(histogram, request, operation: operation) { try handler(request, device, answer) }
        }
        route.admit = who.admit
        route.maxBodyBytes = self.maxBodyBytes(method, pattern)
        return route
    }

    /// The caller of a request: from its head when the transport admitted it (authenticated and
    /// counted there), else authenticated and counted against its rate limit now; and the head's check.
    private func callerCheck<Caller: Sendable>(_ authenticate: @escaping @Sendable (RequestContext) throws(APIError) -> Caller)
        -> (handler: @Sendable (RequestContext) throws(APIError) -> Caller, admit: @Sendable (RequestContext) throws(APIError) -> (any Sendable)?) {
        let limited: @Sendable (Caller) throws(APIError) -> Void = { who throws(APIError) in
            if let refusal = self.rates.checkCaller(Self.rateKey(who)) { throw refusal }
        }
        let handler: @Sendable (RequestContext) throws(APIError) -> Caller = { request throws(APIError) in
            if let admitted = request.request.admission as? Caller { return admitted }
            let who = try authenticate(request)
            try limited(who)
            return who
        }
        let admit: @Sendable (RequestContext) throws(APIError) -> (any Sendable)? = { request throws(APIError) in
            let who = try authenticate(request)
            try limited(who)
            return who
        }
        return (handler, admit)
    }

    /// The caller's rate-limit bucket: its device or account, or the admin.
    static func rateKey<Caller>(_ who: Caller) -> String {
        switch who {
        case let device as DeviceRef: return "device:" + device.deviceID
        case let account as String: return "account:" + account
        default: return "admin"
        }
    }

    /// Each route's body limit: the server's own for whole manifests and change batches, room for
    /// `maxBatch` identifiers (255 bytes each, written with escapes at worst) where a batch goes,
    /// and `smallBodyBytes` everywhere else.
    func maxBodyBytes(_ method: String, _ pattern: String) -> Int? {
        let limits = self.configuration.server.limits
        switch (method, pattern) {
        case ("PUT", "/v1/library"), ("POST", "/v1/library/changes"):
            return nil
        case ("POST", "/v1/library/cloud-identifiers"), ("POST", "/v1/library/local-identifiers"),
             ("PUT", "/v1/journals/{journalID}/entries/{entryID}"), ("POST", "/v1/journals/{journalID}/entries/{entryID}/selection"):
            return min(limits.bodyBytes, limits.maxBatch * 1536 + 64 * 1024)
        default:
            return min(limits.bodyBytes, limits.smallBodyBytes)
        }
    }

    /// Runs `body` timed into `histogram`; its errors become the contract's answers. An internal
    /// error is logged with the route (its text never reaches the client).
    private func timed<T>(_ histogram: Histogram, _ request: RequestContext, operation: String, _ body: () throws -> T) throws(APIError) -> T {
        let start = MonotonicClock.nanoseconds()
        defer { histogram.observe(Double(MonotonicClock.nanoseconds() - start) / 1e9) }
        do {
            return try body()
        } catch let error as APIError {
            throw error
        } catch let error as DomainError {
            if case .internalError(let message) = error { self.logFailure(request, operation, message) }
            throw APIError(error)
        } catch {
            self.logFailure(request, operation, String(describing: error))
            throw APIError.internalError()
        }
    }

    private func logFailure(_ request: RequestContext, _ operation: String, _ message: String) {
        request.logger.error("storage failed", metadata: [
            "route": .string(request.routePattern), "operation": .string(operation), "error": .string(message),
        ])
    }
}
