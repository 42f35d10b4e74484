import ConcordDomain

/// Bearer-token checks of API.md §1: missing or unknown token `401 unauthorized`; a valid
/// token of the wrong kind for the endpoint `403 forbidden`.
extension AppContext {
    /// Who presented the request's token.
    enum Caller {
        case admin
        case account(accountID: String)
        case device(DeviceRef)
    }

    /// The caller, or `401` when the token is missing or unknown.
    func caller(_ request: RequestContext) throws(APIError) -> Caller {
        guard let token = request.bearerToken else { throw APIError.unauthorized }
        // The admin token comes from configuration; compared in constant time.
        if self.isAdminToken(token) { return .admin }
        let principal = try self.call(.authenticate, request) { () throws(DomainError) in try self.service.authenticate(token: token) }
        switch principal {
        case .account(let accountID)?: return .account(accountID: accountID)
        case .device(let device)?: return .device(device)
        case nil: throw APIError.unauthorized
        }
    }

    /// The admin token, else `401`/`403`.
    func requireAdmin(_ request: RequestContext) throws(APIError) {
        guard case .admin = try self.caller(request) else { throw APIError.forbidden }
    }

    /// An account token: its account ID, else `401`/`403`.
    func requireAccount(_ request: RequestContext) throws(APIError) -> String {
        guard case .account(let accountID) = try self.caller(request) else { throw APIError.forbidden }
        return accountID
    }

    /// A device token: its device, else `401`/`403`.
    func requireDevice(_ request: RequestContext) throws(APIError) -> DeviceRef {
        guard case .device(let device) = try self.caller(request) else { throw APIError.forbidden }
        return device
    }
}
