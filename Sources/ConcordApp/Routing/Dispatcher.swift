#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ConcordHTTP
import ConcordObservability
import ConcordTransport
import Synchronization

/// The app's `HTTPResponder`: routes each request, runs the handler on the loop or on
/// the worker pool, turns errors into the contract's JSON, counts and logs it.
public final class Dispatcher: HTTPResponder {
    let router: Router
    let workers: WorkerPool
    let metrics: HTTPMetrics
    let logger: Logger
    private let nextRequestID = Atomic<Int>(1)

    /// - Parameters:
    ///   - workerCount: threads for blocking handlers.
    ///   - maxPendingJobs: queued blocking requests beyond which the answer is `503 unavailable`.
    public init(routes: [Route], logger: Logger, metrics: MetricsRegistry, workerCount: Int, maxPendingJobs: Int = 10_000) {
        self.router = Router(routes: routes)
        self.workers = WorkerPool(threadCount: workerCount, maxPending: maxPendingJobs)
        self.metrics = HTTPMetrics(registry: metrics, patterns: routes.map(\.pattern))
        self.logger = logger
        let workers = self.workers
        metrics.gauge("concord_worker_queue_depth", help: "Blocking requests queued or running on the worker pool.") {
            Double(workers.depth)
        }
    }

    public func handle(_ request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) {
        let start = MonotonicClock.nanoseconds()
        let requestID = self.nextRequestID.wrappingAdd(1, ordering: .relaxed).oldValue
        switch self.router.match(method: request.method, path: request.path) {
        case .found(let route, let parameters):
            var queryItems: [(name: String, value: String)] = []
            if let query = request.query {
                guard let items = PercentDecoding.parseQuery(query) else {
                    self.finish(request, pattern: route.pattern, start: start, requestID: requestID,
                                response: APIError.badRequest("The query string has invalid percent-encoding.").response, respond: respond)
                    return
                }
                queryItems = items
            }
            var logger = self.logger
            logger[metadataKey: "request"] = .int(requestID)
            let context = RequestContext(request: request, pathParameters: parameters, routePattern: route.pattern, queryItems: queryItems, logger: logger)
            if route.onLoop {
                self.finish(request, pattern: route.pattern, start: start, requestID: requestID, response: Self.run(route, context), respond: respond)
            } else {
                let accepted = self.workers.submit { [self] in
                    self.finish(request, pattern: route.pattern, start: start, requestID: requestID, response: Self.run(route, context), respond: respond)
                }
                if !accepted {
                    self.finish(request, pattern: route.pattern, start: start, requestID: requestID,
                                response: Self.overloaded.response, respond: respond)
                }
            }
        case .notFound:
            self.finish(request, pattern: HTTPMetrics.unmatched, start: start, requestID: requestID, response: APIError.notFound.response, respond: respond)
        case .methodNotAllowed(let allow):
            self.finish(request, pattern: HTTPMetrics.unmatched, start: start, requestID: requestID,
                        response: APIError.methodNotAllowed(allow: allow).response, respond: respond)
        case .badRequest(let error):
            self.finish(request, pattern: HTTPMetrics.unmatched, start: start, requestID: requestID, response: error.response, respond: respond)
        case .notImplemented:
            self.finish(request, pattern: HTTPMetrics.unmatched, start: start, requestID: requestID,
                        response: APIError.notImplemented.response, respond: respond)
        case .options(let allow):
            // 200 with an empty body: RFC 9110 §9.3.7 wants `Content-Length: 0`, which a 204 cannot carry.
            var response = HTTPResponse(status: 200)
            response.headers.add(name: "Allow", value: allow.joined(separator: ", "))
            self.finish(request, pattern: HTTPMetrics.unmatched, start: start, requestID: requestID, response: response, respond: respond)
        }
    }

    /// The answer when the worker queue is full.
    static let overloaded = APIError.unavailable(retryAfterSeconds: 1, message: "The server is overloaded; retry later.")

    /// Runs the handler; its `APIError` becomes the answer.
    static func run(_ route: Route, _ context: RequestContext) -> HTTPResponse {
        do {
            return try route.handler(context)
        } catch {
            if error.status >= 500 {
                context.logger.error("request failed", metadata: ["route": .string(route.pattern), "status": .int(error.status), "error": .string(error.name)])
            }
            return error.response
        }
    }

    private func finish(
        _ request: HTTPRequest, pattern: String, start: Int64, requestID: Int, response: HTTPResponse,
        respond: @Sendable (HTTPResponse) -> Void
    ) {
        let elapsed = MonotonicClock.nanoseconds() - start
        self.metrics.record(pattern: pattern, status: response.status, nanoseconds: elapsed)
        self.logger.info("request", metadata: [
            "request": .int(requestID),
            "method": .string(request.method),
            "route": .string(pattern),
            "status": .int(response.status),
            "durationMicros": .int(Int(elapsed / 1000)),
            "bytes": .int(response.body.count),
        ])
        respond(response)
    }

    /// Lets queued blocking requests finish (up to `deadline` seconds) and stops the workers.
    public func shutdown(deadline: Double) {
        self.workers.shutdown(deadline: deadline)
    }
}

/// Per-route request counters (by status) and latency histograms, created up front for
/// every pattern so the hot path is a dictionary read and an atomic add.
final class HTTPMetrics: Sendable {
    /// The route label of requests no route matched (404, 405, bad paths).
    static let unmatched = "unmatched"

    final class PerRoute: Sendable {
        let pattern: String
        let latency: Histogram
        let byStatus: Mutex<[Int: Counter]>
        let registry: MetricsRegistry

        init(pattern: String, registry: MetricsRegistry) {
            self.pattern = pattern
            self.registry = registry
            self.latency = registry.histogram(
                "concord_http_request_duration_seconds", help: "Time from a complete request to its response, by route.",
                labels: [("route", pattern)])
            self.byStatus = Mutex([:])
        }

        func counter(status: Int) -> Counter {
            self.byStatus.withLock { counters in
                if let counter = counters[status] { return counter }
                let counter = self.registry.counter(
                    "concord_http_requests_total", help: "HTTP requests answered, by route pattern and status.",
                    labels: [("route", self.pattern), ("status", String(status))])
                counters[status] = counter
                return counter
            }
        }
    }

    let routes: [String: PerRoute]

    init(registry: MetricsRegistry, patterns: [String]) {
        var routes: [String: PerRoute] = [:]
        for pattern in patterns + [HTTPMetrics.unmatched] where routes[pattern] == nil {
            routes[pattern] = PerRoute(pattern: pattern, registry: registry)
        }
        self.routes = routes
    }

    func record(pattern: String, status: Int, nanoseconds: Int64) {
        guard let route = self.routes[pattern] else { return }
        route.counter(status: status).increment()
        route.latency.observe(Double(nanoseconds) / 1e9)
    }
}

/// Monotonic time for durations (never jumps with the wall clock).
enum MonotonicClock {
    static func nanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
