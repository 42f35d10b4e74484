import ConcordDomain
import ConcordHTTP
import ConcordObservability

/// `GET /health`, `GET /ready`, `GET /metrics`.
func serviceRoutes(_ app: AppContext) -> [Route] {
    // Built once: /health answers with a copy of this (reference-counted buffers, no work).
    let ok = HTTPResponse.text("ok")
    let ready = HTTPResponse.text("ready")
    let metrics = app.metrics
    let storage = app.storage
    let metricsToken = app.configuration.metricsToken.map { Array($0.utf8) }
    return [
        Route("GET", "/health", caller: .anyone, scheduling: .eventLoop) { _ throws(APIError) in ok },
        // Not on the loop: asking storage may block.
        Route("GET", "/ready", caller: .anyone) { _ throws(APIError) in
            guard storage.store.ping() else { throw APIError.unavailable(retryAfterSeconds: 1) }
            return ready
        },
        // With `metricsToken` set, only its bearer reads them: 401 otherwise, compared
        // in constant time. Unset, anyone may (the API's default).
        Route("GET", "/metrics", caller: .anyone, scheduling: .eventLoop) { request throws(APIError) in
            if let expected = metricsToken {
                guard let token = request.bearerToken, Secrets.constantTimeEquals(Array(token.utf8), expected) else {
                    throw APIError.unauthorized
                }
            }
            return .text(metrics.exposition(), contentType: MetricsRegistry.contentType)
        },
    ]
}
