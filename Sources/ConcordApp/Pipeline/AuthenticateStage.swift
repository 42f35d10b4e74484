/// Stage 2: the bearer token → the route's typed caller. A missing or unknown token is
/// `401`; a valid token of another kind `403`. Every refusal goes through `refused` (audited; an
/// unknown token also costs its address more).
struct AuthenticateStage<Kind: CallerKind>: Sendable {
    /// Who a token belongs to, nil when nobody (the admin token is recognised without storage).
    let identify: @Sendable (_ token: String, RequestContext) throws(APIError) -> AuthenticatedCaller?
    /// Records a refusal and gives back the error to throw.
    let refused: @Sendable (RequestContext, APIError, _ reason: Refusal) -> APIError

    /// Why a token was refused (the audit line's `reason`).
    enum Refusal: String, Sendable {
        case noToken = "no token"
        case unknownToken = "unknown token"
        case adminToken = "admin token"
        case otherKind = "token of another kind"
    }

    func handle(_ request: RequestContext) throws(APIError) -> CallerContext<Kind> {
        guard let token = request.bearerToken else { throw self.refused(request, .unauthorized, .noToken) }
        guard let caller = try self.identify(token, request) else { throw self.refused(request, .unauthorized, .unknownToken) }
        guard let context = CallerContext<Kind>(request, caller) else {
            // The admin token is no account's or device's: a valid token of the wrong kind.
            if case .admin = caller { throw self.refused(request, .forbidden, .adminToken) }
            throw self.refused(request, .forbidden, .otherKind)
        }
        return context
    }
}
