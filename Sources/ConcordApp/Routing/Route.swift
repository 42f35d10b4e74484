import ConcordHTTP

/// One endpoint: a method, a path pattern, and the handler that answers it.
///
/// Patterns are `/`-separated segments; a segment `{name}` captures exactly one
/// segment, and a final `{name...}` captures the rest of the path (at least one
/// character, `/` included), e.g. `/v1/library/objects/{localIdentifier...}`.
/// The pattern string doubles as the route's metric label. Every route says who may call it
/// (`caller`); API routes are declared through `AppContext.deviceRoute`, `accountRoute` and
/// `adminRoute`, which check exactly that before the handler runs.
public struct Route: Sendable {
    /// The handler type: synchronous, may block when `onLoop` is false.
    public typealias Handler = @Sendable (RequestContext) throws(APIError) -> HTTPResponse
    /// A handler that answers through `DeferredAnswer`, now or later (a long-poll holds its request
    /// without a thread, issue 13). Runs on the worker pool; answers exactly once unless it throws.
    public typealias DeferredHandler = @Sendable (RequestContext, DeferredAnswer) throws(APIError) -> Void

    /// How the route answers.
    public enum Answering: Sendable {
        case immediately(Handler)
        case deferred(DeferredHandler)
    }

    public let method: String
    public let pattern: String
    /// Who may call it (API.md §1).
    public let caller: RouteCaller
    /// True only for handlers that never block: they run on the event loop.
    public let onLoop: Bool
    public let answering: Answering
    /// Its largest request body; nil: the server's (`server.limits.bodyBytes`).
    public var maxBodyBytes: Int?
    /// Its handler is mostly computation (a lookup served from memory): it waits its turn for a
    /// core on the worker pool, first come first served (`WorkerPool`).
    public var onCore = false
    /// The check a head must pass before its body is read (the caller's token); what it returns
    /// comes back as the request's `admission`, so the handler need not check again.
    public var admit: (@Sendable (RequestContext) throws(APIError) -> (any Sendable)?)?
    let segments: [PatternSegment]
    /// Index of this route's pattern in the dispatcher's metrics table (set by `Dispatcher`,
    /// so recording a request needs no lookup keyed by the pattern string).
    var metricsIndex = -1

    public init(_ method: String, _ pattern: String, caller: RouteCaller, onLoop: Bool = false, handler: @escaping Handler) {
        self.method = method
        self.pattern = pattern
        self.caller = caller
        self.onLoop = onLoop
        self.answering = .immediately(handler)
        self.segments = PatternSegment.parse(pattern)
    }

    /// A route whose handler may hold its request (on the worker pool, never on the loop).
    public init(_ method: String, _ pattern: String, caller: RouteCaller, deferred: @escaping DeferredHandler) {
        self.method = method
        self.pattern = pattern
        self.caller = caller
        self.onLoop = false
        self.answering = .deferred(deferred)
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

/// Who may call a route: the bearer token it needs (API.md §1). A missing or unknown token is
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
