#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CConcordSystem
import ConcordHTTP
import ConcordObservability
import ConcordTransport
import Synchronization

/// The app's `HTTPResponder`: routes each request, runs its first stage (`AddressRateStage`),
/// then the route — on the loop, the compute pool or the blocking pool, as the route is declared —
/// and counts and logs the answer in one place (`finish`).
public final class Dispatcher: HTTPResponder {
    let router: Router
    /// The blocking pool: routes declared `.blockingPool` (storage), the head checks (`admit`),
    /// deferred answers (long-polls).
    let workers: WorkerPool
    /// The compute pool, a thread per core: routes declared `.perCoreLookup`.
    let compute: WorkerPool
    let metrics: HTTPMetrics
    let logger: Logger
    /// Stage 1 of every request: the client address's rate.
    let addressRate: AddressRateStage
    let clock: AppClock
    /// Reverse proxies whose `Forwarded` / `X-Forwarded-For` names the client (`clientAddress`).
    let trustedProxies: [IPAddressRange]
    private let nextRequestID = Atomic<Int>(1)

    /// - Parameters:
    ///   - workerCount: threads of the blocking pool.
    ///   - maxPendingJobs: requests queued on a pool beyond which the answer is `503 unavailable`.
    ///   - cores: threads of the compute pool (routes scheduled `perCoreLookup`), at most `workerCount`.
    ///   - rates: rate limits per address and caller (nil: none, as in the transport's own tests).
    ///   - bodyLimits: each body class's limit (`Route.body`).
    ///   - batchScheduling: the compute pool's threads run under the batch scheduling policy, as the loops do
    ///     (`ServerConfiguration.batchScheduling`).
    init(routes: [Route], logger: Logger, metrics: MetricsRegistry, workerCount: Int, maxPendingJobs: Int = 10_000,
         cores: Int = .max, rates: RequestRates? = nil, bodyLimits: BodyLimits = .serverOnly, clock: AppClock = .monotonic,
         trustedProxies: [IPAddressRange] = [], batchScheduling: Bool = false) {
        self.addressRate = AddressRateStage(rates: rates)
        self.clock = clock
        self.trustedProxies = trustedProxies
        let table = HTTPMetrics(registry: metrics, patterns: routes.map(\.pattern))
        // The per-route tables, derived from each declaration: its metrics slot (a request records
        // without a lookup) and its body limit.
        self.router = Router(routes: routes.map { route in
            var route = route
            route.metricsIndex = table.index[route.pattern] ?? -1
            route.maxBodyBytes = bodyLimits.limit(route.body)
            return route
        })
        self.workers = WorkerPool(name: "concord-work", threadCount: workerCount, maxPending: maxPendingJobs, clock: clock)
        self.compute = WorkerPool(name: "concord-compute", threadCount: min(max(1, cores), max(1, workerCount)),
                                  maxPending: maxPendingJobs, clock: clock, batchScheduling: batchScheduling)
        self.metrics = table
        self.logger = logger
        let workers = self.workers, compute = self.compute
        metrics.gauge("concord_worker_queue_depth", help: "Blocking requests queued or running on the worker pool.") {
            Double(workers.depth + compute.depth)
        }
    }

    /// Before a body is read (see `HTTPResponder.admit`): a request no route takes is answered as
    /// `handle` would; the address's rate is checked, then the route's `admit` stages (the token: a
    /// storage read) on the worker pool, and a `Content-Length` over the route's limit is refused
    /// — all without reading the body.
    public func admit(_ head: HTTPRequestHead, context peer: ConnectionContext, decide: @escaping @Sendable (HTTPAdmission) -> Void) {
        let probe = HTTPRequest(method: head.method, target: head.target, version: head.version, headers: head.headers)
        let connection = self.client(of: peer, probe.headers)
        guard case .found(let route, let parameters) = self.router.match(method: head.method, path: probe.path) else {
            self.handle(probe, context: connection) { response in decide(.reject(response)) }
            return
        }
        guard let check = route.admit else {
            decide(.proceed(maxBodyBytes: route.maxBodyBytes, handler: nil))
            return
        }
        let start = self.clock.nanoseconds()
        let requestID = self.nextRequestID.wrappingAdd(1, ordering: .relaxed).oldValue
        let slot = self.metrics.slot(route.metricsIndex)
        let refuse: @Sendable (HTTPResponse) -> Void = { [self] response in
            self.finish(probe, route: slot, start: start, requestID: requestID, response: response) { decide(.reject($0)) }
        }
        let context = RequestContext(request: probe, connection: connection, pathParameters: parameters, routePattern: route.pattern,
                                     logger: self.logger(requestID))
        let token = context.bearerToken
        if let refusal = self.addressRate.refusal(route, connection, token: token) { return refuse(refusal.response) }
        // A body over the route's limit, once the caller is known: refused here rather than by the
        // transport's `limitBody`, so that the answer names the setting.
        // The whole request goes to `handle` with the caller found here.
        let proceed: @Sendable (AuthenticatedCaller) -> Void = { [self] who in
            if let limit = route.maxBodyBytes, let length = head.contentLength, length > limit {
                return refuse(APIError.payloadTooLarge(limit: limit, body: route.body).response)
            }
            decide(.proceed(maxBodyBytes: route.maxBodyBytes, handler: { [self] request, peer, respond in
                self.handle(request, context: peer, admitted: who, deviceCheck: context.deviceCheck, respond: respond)
            }))
        }
        if token == nil, route.caller != .anyone {
            // No token on a route that needs one: its pipeline refuses it without storage
            // (`AuthenticateStage`), so here on the loop — a client without one holds no body and
            // no worker's turn.
            do throws(APIError) {
                proceed(try check(context))
            } catch {
                refuse(error.response)
            }
            return
        }
        let accepted = self.workers.submit {
            do throws(APIError) {
                proceed(try check(context))
            } catch {
                refuse(error.response)
            }
        }
        if !accepted { refuse(Self.overloaded.response) }
    }

    public func handle(_ request: HTTPRequest, context peer: ConnectionContext, respond: @escaping @Sendable (HTTPResponse) -> Void) {
        self.handle(request, context: peer, admitted: nil, respond: respond)
    }

    /// `handle`, for a request whose head `admit` let through with its caller (`admitted`) and
    /// what its authentication read of its device (`deviceCheck`).
    func handle(_ request: HTTPRequest, context peer: ConnectionContext, admitted: AuthenticatedCaller?, deviceCheck: DeviceCheckNote? = nil,
                respond: @escaping @Sendable (HTTPResponse) -> Void) {
        let connection = self.client(of: peer, request.headers)
        let start = self.clock.nanoseconds()
        let requestID = self.nextRequestID.wrappingAdd(1, ordering: .relaxed).oldValue
        let (slot, next) = self.prepare(request, connection, admitted: admitted, deviceCheck: deviceCheck, requestID: requestID)
        let answer: @Sendable (HTTPResponse) -> Void = { [self] response in
            self.finish(request, route: slot, start: start, requestID: requestID, response: response, respond: respond)
        }
        switch next {
        case .answer(let response): answer(response)
        case .run(let route, let context): self.run(route, context, answer)
        }
    }

    /// What happens to a request once routed: answered now, or its route runs.
    private enum Next {
        case answer(HTTPResponse)
        case run(Route, RequestContext)
    }

    /// Routes `request` and runs what comes before its route: the address's rate, the route's
    /// body limit, the query's decoding. Also the metrics slot it is counted in.
    private func prepare(_ request: HTTPRequest, _ connection: ConnectionContext, admitted: AuthenticatedCaller?, deviceCheck: DeviceCheckNote?,
                         requestID: Int) -> (HTTPMetrics.PerRoute, Next) {
        let unmatched = self.metrics.unmatchedSlot
        switch self.router.match(method: request.method, path: request.path) {
        case .found(let route, let parameters):
            let slot = self.metrics.slot(route.metricsIndex)
            if let refusal = self.addressRate.refusal(route, connection, admitted: admitted != nil,
                                                      token: RequestContext(request: request, logger: self.logger).bearerToken) {
                return (slot, .answer(refusal.response))
            }
            if let limit = route.maxBodyBytes, request.body.count > limit {
                // A body small enough to be read before the head was checked: the route's limit still holds.
                return (slot, .answer(APIError.payloadTooLarge(limit: limit, body: route.body).response))
            }
            var queryItems: [(name: String, value: String)] = []
            if let query = request.query {
                guard let items = PercentDecoding.parseQuery(query) else {
                    return (slot, .answer(APIError.badRequest("The query string has invalid percent-encoding.").response))
                }
                queryItems = items
            }
            let context = RequestContext(request: request, connection: connection, admitted: admitted, deviceCheck: deviceCheck, pathParameters: parameters,
                                         routePattern: route.pattern, queryItems: queryItems, logger: self.logger(requestID))
            return (slot, .run(route, context))
        case .notFound:
            return (unmatched, .answer(APIError.notFound.response))
        case .methodNotAllowed(let allow):
            return (unmatched, .answer(APIError.methodNotAllowed(allow: allow).response))
        case .badRequest(let error):
            return (unmatched, .answer(error.response))
        case .notImplemented:
            return (unmatched, .answer(APIError.notImplemented.response))
        case .options(let allow):
            // 200 with an empty body: RFC 9110 §9.3.7 wants `Content-Length: 0`, which a 204 cannot carry.
            var response = HTTPResponse(status: 200)
            response.headers.add(name: "Allow", value: allow.joined(separator: ", "))
            return (unmatched, .answer(response))
        }
    }

    /// The connection as the app sees it: from a trusted proxy, the client its `Forwarded` or
    /// `X-Forwarded-For` names (`clientAddress`); from anyone else, as the transport saw it.
    private func client(of peer: ConnectionContext, _ headers: HTTPHeaders) -> ConnectionContext {
        guard !self.trustedProxies.isEmpty else { return peer }
        var connection = peer
        connection.remoteAddress = Self.clientAddress(peer: peer.remoteAddress, headers: headers, trusted: self.trustedProxies)
        return connection
    }

    /// The client's address: the peer's, unless the peer is a trusted proxy; then, walking the
    /// proxies' record from the nearest hop back, the first address that is not a trusted proxy
    /// (RFC 7239 §7.4: only the hops one trusts can be believed). A node that is no address
    /// (`unknown`, obfuscated) ends the walk at the last trusted hop; so does a record of only
    /// trusted proxies, which names its first.
    static func clientAddress(peer: String?, headers: HTTPHeaders, trusted: [IPAddressRange]) -> String? {
        guard IPAddressRange.any(trusted, contains: peer), let chain = ForwardedFor.chain(headers) else { return peer }
        var client = peer
        for node in chain.reversed() {
            guard let address = IPAddress(node) else { return client }
            client = node
            if !trusted.contains(where: { $0.contains(address) }) { return node }
        }
        return client
    }

    /// Runs the route where it is declared to run; `answer` is called once.
    private func run(_ route: Route, _ context: RequestContext, _ answer: @escaping @Sendable (HTTPResponse) -> Void) {
        switch (route.answering, route.scheduling) {
        case (.deferred(let handler), _):
            let workers = self.workers
            let deferred = DeferredAnswer(respond: answer, onWorker: { job in workers.submit(job) })
            let accepted = self.workers.submit {
                do throws(APIError) {
                    try handler(context, deferred)
                } catch {
                    answer(error.response)
                }
            }
            if !accepted { answer(Self.overloaded.response) }
        case (.immediately, .eventLoop):
            answer(Self.run(route, context))
        case (.immediately, .perCoreLookup), (.immediately, .blockingPool):
            let pool = route.onCore ? self.compute : self.workers
            let accepted = pool.submit {
                let response = Self.run(route, context)
                let large = context.request.body.count >= Self.trimAfterBodyBytes || response.body.count >= Self.trimAfterBodyBytes
                answer(response)
                if large { Self.returnFreedMemory() }
            }
            if !accepted { answer(Self.overloaded.response) }
        }
    }

    /// The logger of request `requestID` (its id in every line).
    private func logger(_ requestID: Int) -> Logger {
        var logger = self.logger
        logger[metadataKey: "request"] = .int(requestID)
        return logger
    }

    /// A request or answer body at least this large (a library manifest, a change of a whole
    /// library) was parsed from or built out of many small allocations; once it is answered they
    /// are free, but malloc keeps them in its arenas.
    static let trimAfterBodyBytes = 1 << 20

    /// Hands free heap pages back to the kernel, so that the resident size after a manifest
    /// upload is what the server still uses, not the peak of the parse. malloc_trim walks every
    /// arena, so it runs only after such large requests, never on the mapping hot path (1000
    /// identifiers are about 50 KB in and 120 KB out).
    static func returnFreedMemory() {
        _ = concord_malloc_trim()
    }

    /// The answer when the worker queue is full.
    static let overloaded = APIError.unavailable(retryAfterSeconds: 1, message: "The server is overloaded; retry later.")

    /// Runs the handler; its `APIError` becomes the answer.
    static func run(_ route: Route, _ context: RequestContext) -> HTTPResponse {
        guard case .immediately(let handler) = route.answering else { preconditionFailure("a deferred route is answered through respond") }
        do {
            return try handler(context)
        } catch {
            if error.status >= 500 {
                context.logger.error("request failed", metadata: ["route": .string(route.pattern), "status": .int(error.status), "error": .string(error.name)])
            }
            return error.response
        }
    }

    private func finish(
        _ request: HTTPRequest, route: HTTPMetrics.PerRoute, start: Int64, requestID: Int, response: HTTPResponse,
        respond: @Sendable (HTTPResponse) -> Void
    ) {
        let elapsed = self.clock.nanoseconds() - start
        route.record(status: response.status, nanoseconds: elapsed)
        self.logger.info("request", metadata: LogMetadata(uniquePairs: [
            ("request", .int(requestID)),
            ("method", .string(request.method)),
            ("route", .string(route.pattern)),
            ("status", .int(response.status)),
            ("durationMicros", .int(Int(elapsed / 1000))),
            ("bytes", .int(response.body.count)),
        ]))
        respond(response)
    }

    /// Lets queued requests finish (up to `deadline` seconds in all) and stops both pools; returns
    /// how many were still unfinished then.
    @discardableResult
    public func shutdown(deadline: Double) -> Int {
        let end = self.clock.seconds + deadline
        // Lookups first: they are short, and nothing they run queues blocking work.
        let lookups = self.compute.shutdown(deadline: deadline)
        return lookups + self.workers.shutdown(deadline: max(0, end - self.clock.seconds))
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
            self.fast = (0..<12).map { _ in CounterSlot() }
        }

        /// Lock-free slots for the statuses the API answers most (see `fastSlot`); other
        /// statuses go through `byStatus`. A slot is filled on first use, so a series
        /// appears in the exposition only once it has counted something, as before.
        let fast: [CounterSlot]

        /// The slot of `status` in `fast`, if it has one.
        @inline(__always)
        static func fastSlot(_ status: Int) -> Int? {
            switch status {
            case 200: 0
            case 201: 1
            case 204: 2
            case 400: 3
            case 401: 4
            case 403: 5
            case 404: 6
            case 405: 7
            case 409: 8
            case 413: 9
            case 500: 10
            case 503: 11
            default: nil
            }
        }

        func record(status: Int, nanoseconds: Int64) {
            self.counter(status: status).increment()
            self.latency.observe(Double(nanoseconds) / 1e9)
        }

        func counter(status: Int) -> Counter {
            if let slot = Self.fastSlot(status) {
                if let counter = self.fast[slot].reference.load() { return counter }
                // The registry hands back the same series for the same labels, so a race
                // between two threads here stores the same counter either way.
                return self.fast[slot].reference.storeIfNil(self.slowCounter(status: status))
            }
            return self.slowCounter(status: status)
        }

        private func slowCounter(status: Int) -> Counter {
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

    /// A counter filled in once, then read without a lock.
    final class CounterSlot: Sendable {
        let reference = AtomicLazyReference<Counter>()
    }

    /// One entry per distinct pattern, in first-seen order, then `unmatched`.
    let routes: [PerRoute]
    /// Pattern → position in `routes`.
    let index: [String: Int]
    /// The entry of requests no route matched.
    let unmatchedSlot: PerRoute

    init(registry: MetricsRegistry, patterns: [String]) {
        var routes: [PerRoute] = []
        var index: [String: Int] = [:]
        for pattern in patterns + [HTTPMetrics.unmatched] where index[pattern] == nil {
            index[pattern] = routes.count
            routes.append(PerRoute(pattern: pattern, registry: registry))
        }
        self.routes = routes
        self.index = index
        self.unmatchedSlot = routes[index[HTTPMetrics.unmatched] ?? routes.count - 1]
    }

    /// The entry at `index`, or `unmatched` for a route the table does not know.
    @inline(__always)
    func slot(_ index: Int) -> PerRoute {
        index >= 0 && index < self.routes.count ? self.routes[index] : self.unmatchedSlot
    }
}
