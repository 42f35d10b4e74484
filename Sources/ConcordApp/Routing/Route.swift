import ConcordHTTP

/// One endpoint, declared with its whole policy: method, path pattern, who may call it, how large
/// a body it takes, whether it honours `Idempotency-Key`, where its handler runs, and the handler.
/// Every per-route table — body limit, idempotency, the per-core turn, the metrics slot — is
/// derived from these fields (`Dispatcher`), nowhere else.
///
/// Patterns are `/`-separated segments; a segment `{name}` captures exactly one
/// segment, and a final `{name...}` captures the rest of the path (at least one
/// character, `/` included), e.g. `/v1/library/objects/{localIdentifier...}`.
/// The pattern string doubles as the route's metric label. API routes are declared through
/// `AppContext.deviceRoute`, `accountRoute` and `adminRoute`, whose pipeline (`RoutePipeline`)
/// checks the caller before the handler runs.
public struct Route: Sendable {
    /// The handler type: synchronous, may block unless it runs on the event loop.
    public typealias Handler = @Sendable (RequestContext) throws(APIError) -> HTTPResponse
    /// A handler that answers through `DeferredAnswer`, now or later (a long-poll holds its request
    /// without a thread). Runs on the worker pool; answers exactly once unless it throws.
    public typealias DeferredHandler = @Sendable (RequestContext, DeferredAnswer) throws(APIError) -> Void
    /// The check of a head before its body is read (`RoutePipeline.admit`): the caller it finds
    /// comes back with the whole request (`RequestContext.admitted`), so the handler need not look again.
    public typealias Admit = @Sendable (RequestContext) throws(APIError) -> AuthenticatedCaller

    /// How the route answers.
    public enum Answering: Sendable {
        case immediately(Handler)
        case deferred(DeferredHandler)
    }

    /// How large a request body the route takes (the byte limits: `BodyLimits`).
    public enum BodyClass: String, Sendable, CaseIterable {
        /// A few fields (`smallBodyBytes`).
        case small
        /// Up to `maxBatch` identifiers or photos.
        case batch
        /// A whole library manifest or change batch: the server's own limit (`bodyBytes`).
        case manifest
    }

    /// Where the handler runs.
    public enum Scheduling: String, Sendable, CaseIterable {
        /// Inline on the event loop: only handlers that never block.
        case eventLoop
        /// On the compute pool, a thread per core, first come first served: a lookup that is
        /// computation once the account's index is loaded.
        case perCoreLookup
        /// On the blocking pool, more threads than cores (storage may block them).
        case blockingPool
    }

    public let method: String
    public let pattern: String
    /// Who may call it.
    public let caller: RouteCaller
    /// How large a body it takes.
    public let body: BodyClass
    /// It honours `Idempotency-Key`.
    public let idempotent: Bool
    public let scheduling: Scheduling
    public let answering: Answering
    /// The head's check before its body is read; nil: every body is read.
    public let admit: Admit?
    let segments: [PatternSegment]
    /// Derived by `Dispatcher` from `body` and the server's limits: its largest request body
    /// (nil: the server's, `server.limits.bodyBytes`).
    var maxBodyBytes: Int?
    /// Derived by `Dispatcher`: the index of this route's pattern in the metrics table, so
    /// recording a request needs no lookup keyed by the pattern string.
    var metricsIndex = -1

    /// True only for handlers that never block: they run on the event loop.
    public var onLoop: Bool { self.scheduling == .eventLoop }
    /// It runs on the compute pool, a thread per core, first come first served (`Dispatcher.compute`).
    public var onCore: Bool { self.scheduling == .perCoreLookup }

    public init(_ method: String, _ pattern: String, caller: RouteCaller, body: BodyClass = .small, idempotent: Bool = false,
                scheduling: Scheduling = .blockingPool, admit: Admit? = nil, handler: @escaping Handler) {
        self.init(method, pattern, caller, body, idempotent, scheduling, admit, .immediately(handler))
    }

    /// A route answered on the event loop (`onLoop`) or the worker pool.
    public init(_ method: String, _ pattern: String, caller: RouteCaller, onLoop: Bool, handler: @escaping Handler) {
        self.init(method, pattern, caller, .small, false, onLoop ? .eventLoop : .blockingPool, nil, .immediately(handler))
    }

    /// A route whose handler may hold its request (on the worker pool, never on the loop).
    public init(_ method: String, _ pattern: String, caller: RouteCaller, body: BodyClass = .small, admit: Admit? = nil,
                deferred: @escaping DeferredHandler) {
        self.init(method, pattern, caller, body, false, .blockingPool, admit, .deferred(deferred))
    }

    private init(_ method: String, _ pattern: String, _ caller: RouteCaller, _ body: BodyClass, _ idempotent: Bool,
                 _ scheduling: Scheduling, _ admit: Admit?, _ answering: Answering) {
        self.method = method
        self.pattern = pattern
        self.caller = caller
        self.body = body
        self.idempotent = idempotent
        self.scheduling = scheduling
        self.admit = admit
        self.answering = answering
        self.segments = PatternSegment.parse(pattern)
    }
}

/// How a deferred handler answers its request, and how it gets back onto the worker pool later.
public struct DeferredAnswer: Sendable {
    /// Sends the answer (once).
    public let respond: @Sendable (HTTPResponse) -> Void
    /// Runs `job` on the worker pool; false when the pool refuses it (full, or shutting down).
    public let onWorker: @Sendable (@escaping @Sendable () -> Void) -> Bool
}

/// Who may call a route: the bearer token it needs. A missing or unknown token is
/// `401`; a valid token of another kind `403`.
public enum RouteCaller: String, Sendable, CaseIterable {
    /// No token (health, readiness, metrics).
    case anyone
    /// The server's admin token.
    case admin
    /// An account token.
    case account
    /// A device token.
    case device
    /// An account token, or a device token for its own device (a device's successor).
    case accountOrDevice
}

/// A compiled pattern segment.
enum PatternSegment: Equatable {
    case literal(String)
    case parameter(String)
    case rest(String)

    /// Parses `/a/{b}/{c...}`. Routes are written by us, not received, so a malformed
    /// pattern is a programming error caught by the router tests, not an input error.
    static func parse(_ pattern: String) -> [PatternSegment] {
        precondition(pattern.hasPrefix("/"), "route pattern must start with '/': \(pattern)")
        let parts = pattern.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        var result: [PatternSegment] = []
        for (i, part) in parts.enumerated() {
            if part.hasPrefix("{") && part.hasSuffix("}") {
                let inner = part.dropFirst().dropLast()
                if inner.hasSuffix("...") {
                    precondition(i == parts.count - 1, "'{name...}' must be the last segment: \(pattern)")
                    result.append(.rest(String(inner.dropLast(3))))
                } else {
                    result.append(.parameter(String(inner)))
                }
            } else {
                result.append(.literal(String(part)))
            }
        }
        return result
    }

    /// Sort rank for "most specific first": literal < parameter < rest.
    var rank: Int {
        switch self {
        case .literal: 0
        case .parameter: 1
        case .rest: 2
        }
    }
}
