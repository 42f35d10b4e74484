import ConcordHTTP

/// What the router decided for one request.
public enum RouteMatch: Sendable {
    /// A route answers; `parameters` are percent-decoded.
    case found(Route, parameters: [String: String])
    /// No pattern matches the path: `404 notFound`.
    case notFound
    /// A pattern matches but not with this method: `405 methodNotAllowed` with `Allow`.
    case methodNotAllowed(allow: [String])
    /// The path is not decodable (bad percent-encoding, not UTF-8): `400 badRequest`.
    case badRequest(APIError)
    /// A method no route implements (unknown, or `get` in lower case: methods are
    /// case-sensitive): `501 notImplemented` (RFC 9110 §9.1).
    case notImplemented
    /// `OPTIONS` on a path some pattern matches, or `OPTIONS *` (server-wide): answered
    /// by the router with `Allow` (RFC 9110 §9.3.7).
    case options(allow: [String])
}

/// Matches a request's method and path against the routes.
///
/// - The raw path is split on `/` first, then each segment is percent-decoded, so
///   `%2F` inside a segment is data, never a separator. A `{rest...}` capture is the
///   raw remainder decoded as a whole.
/// - When several patterns match a path, the most specific wins: at the first segment
///   where they differ, a literal beats `{param}`, which beats `{rest...}`.
/// - `HEAD` is served by the `GET` route of a pattern (the writer drops the body).
/// - A path matched only by patterns without the method is `405`, with `Allow`
///   listing the methods of the most specific matching pattern.
/// - A method no route has (nor `HEAD`/`OPTIONS`) is `501`, whatever the path.
/// - `OPTIONS` is answered for every matching pattern (and `*`) with its `Allow`.
public struct Router: Sendable {
    /// Routes of one pattern, grouped so 404/405 and `Allow` are decided per pattern.
    struct PatternGroup: Sendable {
        var pattern: String
        var segments: [PatternSegment]
        var routes: [String: Route]      // method → route
        var allow: [String]
        /// The pattern ends in `{rest...}`.
        var hasRest: Bool
    }

    let groups: [PatternGroup]
    /// Every method some route answers, plus `HEAD` (with `GET`) and `OPTIONS`, sorted.
    let implementedMethods: [String]

    /// Builds the table. Two routes with the same method and pattern are a programming error.
    public init(routes: [Route]) {
        var groups: [PatternGroup] = []
        var byPattern: [String: Int] = [:]
        for route in routes {
            if let i = byPattern[route.pattern] {
                precondition(groups[i].routes[route.method] == nil, "duplicate route \(route.method) \(route.pattern)")
                groups[i].routes[route.method] = route
            } else {
                byPattern[route.pattern] = groups.count
                groups.append(PatternGroup(pattern: route.pattern, segments: route.segments, routes: [route.method: route], allow: [],
                                          hasRest: route.segments.last?.rank == 2))
            }
        }
        for i in groups.indices {
            var allow = Set(groups[i].routes.keys)
            if allow.contains("GET") { allow.insert("HEAD") }
            allow.insert("OPTIONS")
            groups[i].allow = allow.sorted()
        }
        self.implementedMethods = Set(groups.flatMap(\.allow)).union(["OPTIONS"]).sorted()
        // Most specific first, so the first match is the winner.
        groups.sort { a, b in
            for (x, y) in zip(a.segments, b.segments) where x.rank != y.rank { return x.rank < y.rank }
            return a.segments.count > b.segments.count
        }
        self.groups = groups
    }

    /// Every registered route, for listings and metrics.
    public var routes: [Route] { self.groups.flatMap { $0.routes.values } }

    /// Matches `method` and the still-encoded `path` (no query).
    public func match(method: String, path: Substring) -> RouteMatch {
        guard self.implementedMethods.contains(method) else { return .notImplemented }
        if path == "*" {
            // RFC 9112 §3.2.4: the parser admits "*" only with OPTIONS.
            return method == "OPTIONS" ? .options(allow: self.implementedMethods) : .notFound
        }
        guard path.first == "/" else { return .notFound }
        let raw = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        // Decode every segment up front: a malformed escape anywhere is a 400, whatever
        // the routes are.
        var decoded: [String] = []
        decoded.reserveCapacity(raw.count)
        for segment in raw {
            guard let value = PercentDecoding.decode(segment) else { return .badRequest(Self.badPath) }
            decoded.append(value)
        }
        var firstPatternMatch: PatternGroup?
        for group in self.groups {
            // Cheap reject before any string work: without a `{rest...}` the segment
            // counts must be equal; with one, the path needs at least as many segments.
            if group.hasRest ? raw.count < group.segments.count : raw.count != group.segments.count { continue }
            guard let parameters = Self.match(group.segments, raw: raw, decoded: decoded) else { continue }
            if let route = group.routes[method] ?? (method == "HEAD" ? group.routes["GET"] : nil) {
                return .found(route, parameters: parameters)
            }
            if method == "OPTIONS" { return .options(allow: group.allow) }
            if firstPatternMatch == nil { firstPatternMatch = group }
        }
        if let group = firstPatternMatch { return .methodNotAllowed(allow: group.allow) }
        return .notFound
    }

    /// The parameters when `segments` matches the path, else nil.
    private static func match(_ segments: [PatternSegment], raw: [Substring], decoded: [String]) -> [String: String]? {
        var parameters: [String: String] = [:]
        for (i, segment) in segments.enumerated() {
            switch segment {
            case .rest(let name):
                guard i < raw.count else { return nil }
                // The raw remainder after the i-th separator, decoded as one string:
                // each segment already decoded cleanly, so this cannot fail.
                let remainder = raw[i...].joined(separator: "/")
                guard !remainder.isEmpty, let value = PercentDecoding.decode(remainder[...]) else { return nil }
                parameters[name] = value
                return parameters
            case .literal(let literal):
                // Lengths first: a mismatch is then rejected without a string comparison.
                guard i < decoded.count, decoded[i].utf8.count == literal.utf8.count, decoded[i] == literal else { return nil }
            case .parameter(let name):
                guard i < decoded.count, !decoded[i].isEmpty else { return nil }
                parameters[name] = decoded[i]
            }
        }
        return segments.count == decoded.count ? parameters : nil
    }

    static let badPath = APIError.badRequest("The request path has invalid percent-encoding.")
}
