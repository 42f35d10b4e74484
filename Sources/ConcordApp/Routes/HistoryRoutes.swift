import ConcordDomain
import ConcordHTTP
import ConcordJSON

/// A device's change history (device token).
func historyRoutes(_ app: AppContext) -> [Route] {
    [
        app.deviceRoute("GET", "/v1/library/token", operation: "currentChangeToken") { request, device in
            let token = try app.service.history.currentChangeToken(device: device)
            // The token as a strong entity tag, for `If-Match` on the library writes. Tokens are
            // base64url (A–Z a–z 0–9 - _), all `etagc`: quoted as they are, nothing to escape.
            var response = Codec.changeTokenResponse(token)
            response.headers.add(name: "ETag", value: Codec.entityTag(token))
            return response
        },
        // With `wait=S`, a poll with nothing new is held until the device's library changes.
        app.deviceDeferredRoute("GET", "/v1/library/changes", operation: "changes") { request, device, answer in
            guard let since = request.query("since") else { throw APIError.missingField("since") }
            let limit = try Codec.intQuery(request, "limit")
            let wait = try app.waitQuery(request)
            try app.longPolls.serve(topic: .library(device), wait: wait, request: request, answer: answer) {
                try app.requireStillAuthorized(request, device)
                let page = try app.revokedIsUnauthorized(request, device) { try app.service.history.changes(since: since, limit: limit, device: device) }
                let response = Codec.changePageResponse(page.changes, changeToken: page.changeToken, hasMore: page.hasMore) { change, w in
                    Codec.write(change, into: &w)
                }
                return (response, !page.changes.isEmpty)
            }
        },
    ]
}

extension AppContext {
    /// Runs a feed read of `device`; when it finds the device gone (`notFound`: deleted, with its
    /// token, between the token check and the read — a held poll's re-query races the deletion),
    /// answers as a revoked token does, `401`, rather than `404` (RevokedPollTests).
    func revokedIsUnauthorized<T>(_ request: RequestContext, _ device: DeviceRef, _ read: () throws -> T) throws -> T {
        do {
            return try read()
        } catch let error as DomainError {
            if case .notFound = error { try self.requireStillAuthorized(request, device) }
            throw error
        }
    }
}
