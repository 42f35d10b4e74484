import ConcordHTTP
import ConcordObservability

/// `GET /health`, `GET /ready`, `GET /metrics` (API.md §8).
func serviceRoutes(_ app: AppContext) -> [Route] {
    // Built once: /health answers with a copy of this (reference-counted buffers, no work).
    let ok = HTTPResponse.text("ok")
    let ready = HTTPResponse.text("ready")
    let metrics = app.metrics
    let storage = app.storage
    return [
        Route("GET", "/health", caller: .anyone, scheduling: .eventLoop) { _ throws(APIError) in ok },
        // Not on the loop: asking storage may block.
        Route("GET", "/ready", caller: .anyone) { _ throws(APIError) in
            guard storage.store.ping() else { throw APIError.unavailable(retryAfterSeconds: 1) }
            return ready
        },
        Route("GET", "/metrics", caller: .anyone, scheduling: .eventLoop) { _ throws(APIError) in
            .text(metrics.exposition(), contentType: MetricsRegistry.contentType)
        },
    ]
}
