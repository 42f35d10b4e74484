import ConcordHTTP

/// The ordered stages an authenticated route runs, after the dispatcher's `AddressRateStage`:
///
///     authenticate → caller rate → idempotency → timing → handler
///
/// When the transport asks about a head before reading its body, `admit` runs the first two and
/// the caller it finds comes back, typed, with the whole request (`RequestContext.admitted`): the
/// handler is then not authenticated or counted twice.
struct RoutePipeline<Kind: CallerKind>: Sendable {
    let authenticate: AuthenticateStage<Kind>
    let callerRate: CallerRateStage
    /// Nil: the route does not honour `Idempotency-Key`.
    let idempotency: IdempotencyStage?
    let timing: TimingStage

    /// The head's check: authenticate, then the caller's rate.
    func admit(_ request: RequestContext) throws(APIError) -> AuthenticatedCaller {
        try self.caller(request).caller
    }

    /// The request's caller: the head's when it was admitted, else authenticated and counted now.
    func caller(_ request: RequestContext) throws(APIError) -> CallerContext<Kind> {
        if let admitted = request.admitted, let context = CallerContext<Kind>(request, admitted) {
            return context
        }
        let context = try self.authenticate.handle(request)
        try self.callerRate.handle(context.caller, token: request.bearerToken)
        return context
    }

    /// Runs the stages and `handler`, which returns the answer.
    func respond(_ request: RequestContext, _ handler: (CallerContext<Kind>) throws -> HTTPResponse) throws(APIError) -> HTTPResponse {
        let context = try self.caller(request)
        // `request` as the idempotency stage hands it on: with its key's scope, for the writes.
        func timed(_ request: RequestContext) throws(APIError) -> HTTPResponse {
            var context = context
            context.request = request
            return try self.timing.handle(request) { try handler(context) }
        }
        guard let idempotency = self.idempotency else { return try timed(request) }
        return try idempotency.handle(request, accountID: context.caller.accountID, next: timed)
    }

    /// Runs the stages and `handler`, which answers through its `DeferredAnswer` (a long-poll); only
    /// the handler's own work, not the wait, is timed.
    func answer(_ request: RequestContext, _ handler: (CallerContext<Kind>) throws -> Void) throws(APIError) {
        let context = try self.caller(request)
        try self.timing.handle(request) { try handler(context) }
    }
}
