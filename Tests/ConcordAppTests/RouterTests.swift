import ConcordHTTP
import Testing

@testable import ConcordApp

/// Routes shaped like the real API, each answering with its own pattern.
private let router = Router(routes: [
    Route("GET", "/health", caller: .anyone, onLoop: true) { _ throws(APIError) in .text("health") },
    Route("GET", "/v1/devices/{deviceID}", caller: .anyone) { _ throws(APIError) in .text("device") },
    Route("DELETE", "/v1/devices/{deviceID}", caller: .anyone) { _ throws(APIError) in .text("delete") },
    Route("GET", "/v1/devices/me", caller: .anyone) { _ throws(APIError) in .text("me") },
    Route("POST", "/v1/library/objects", caller: .anyone) { _ throws(APIError) in .text("objects") },
    Route("GET", "/v1/library/objects/{localIdentifier...}", caller: .anyone) { _ throws(APIError) in .text("object") },
    Route("PUT", "/v1/library/objects/{localIdentifier...}", caller: .anyone) { _ throws(APIError) in .text("put") },
    Route("GET", "/v1/accounts/{accountID}/devices/{deviceID}", caller: .anyone) { _ throws(APIError) in .text("nested") },
    Route("PATCH", "/v1/hooks/{hookID}", caller: .anyone) { _ throws(APIError) in .text("patch") },
])

private enum Expected: Equatable {
    case found(String, [String: String])
    case notFound
    case methodNotAllowed([String])
    case badRequest
    case notImplemented
    case options([String])
}

private func outcome(_ method: String, _ path: String) -> Expected {
    switch router.match(method: method, path: path[...]) {
    case .found(let route, let parameters): .found(route.method + " " + route.pattern, parameters)
    case .notFound: .notFound
    case .methodNotAllowed(let allow): .methodNotAllowed(allow)
    case .badRequest: .badRequest
    case .notImplemented: .notImplemented
    case .options(let allow): .options(allow)
    }
}

private let cases: [(method: String, path: String, expected: Expected)] = [
    ("GET", "/health", .found("GET /health", [:])),
    ("HEAD", "/health", .found("GET /health", [:])),
    ("POST", "/health", .methodNotAllowed(["GET", "HEAD", "OPTIONS"])),
    ("GET", "/health/", .notFound),
    ("GET", "/healthz", .notFound),
    ("GET", "/", .notFound),
    ("GET", "//health", .notFound),
    ("GET", "/v1/devices/abc", .found("GET /v1/devices/{deviceID}", ["deviceID": "abc"])),
    ("DELETE", "/v1/devices/abc", .found("DELETE /v1/devices/{deviceID}", ["deviceID": "abc"])),
    ("POST", "/v1/devices/abc", .methodNotAllowed(["DELETE", "GET", "HEAD", "OPTIONS"])),
    // A literal beats a parameter at the same position.
    ("GET", "/v1/devices/me", .found("GET /v1/devices/me", [:])),
    // ...but the parameter pattern still serves methods the literal lacks.
    ("DELETE", "/v1/devices/me", .found("DELETE /v1/devices/{deviceID}", ["deviceID": "me"])),
    ("GET", "/v1/devices/", .notFound),
    ("GET", "/v1/devices/a/b", .notFound),
    // Percent-decoding happens after splitting: %2F is data inside one segment.
    ("GET", "/v1/devices/a%2Fb", .found("GET /v1/devices/{deviceID}", ["deviceID": "a/b"])),
    ("GET", "/v1/devices/caf%C3%A9", .found("GET /v1/devices/{deviceID}", ["deviceID": "café"])),
    ("GET", "/v1/devices/a+b", .found("GET /v1/devices/{deviceID}", ["deviceID": "a+b"])),
    ("GET", "/v1/devices/%zz", .badRequest),
    ("GET", "/v1/devices/%4", .badRequest),
    ("GET", "/v1/devices/%FF", .badRequest),
    ("GET", "/nothing/%zz", .badRequest),
    ("GET", "/v1/%64evices/x", .found("GET /v1/devices/{deviceID}", ["deviceID": "x"])),
    // A rest capture takes the remainder, '/' included.
    ("GET", "/v1/library/objects/ABC-123/L0/001",
     .found("GET /v1/library/objects/{localIdentifier...}", ["localIdentifier": "ABC-123/L0/001"])),
    ("GET", "/v1/library/objects/ABC-123%2FL0%2F001",
     .found("GET /v1/library/objects/{localIdentifier...}", ["localIdentifier": "ABC-123/L0/001"])),
    ("PUT", "/v1/library/objects/x", .found("PUT /v1/library/objects/{localIdentifier...}", ["localIdentifier": "x"])),
    ("DELETE", "/v1/library/objects/x", .methodNotAllowed(["GET", "HEAD", "OPTIONS", "PUT"])),
    ("POST", "/v1/library/objects", .found("POST /v1/library/objects", [:])),
    ("GET", "/v1/library/objects", .methodNotAllowed(["OPTIONS", "POST"])),
    ("GET", "/v1/library/objects/", .notFound),
    ("GET", "/v1/library/objects/a/%zz", .badRequest),
    ("GET", "/v1/accounts/a1/devices/d1", .found("GET /v1/accounts/{accountID}/devices/{deviceID}", ["accountID": "a1", "deviceID": "d1"])),
    ("GET", "*", .notFound),
    // Methods are case-sensitive (RFC 9110 §9.1): "get" is a method no route implements.
    ("get", "/health", .notImplemented),
    ("FOO", "/health", .notImplemented),
    ("FOO", "/nothing", .notImplemented),
    // PATCH is served on some paths: elsewhere it is a method the path lacks.
    ("PATCH", "/v1/hooks/h1", .found("PATCH /v1/hooks/{hookID}", ["hookID": "h1"])),
    ("PATCH", "/v1/library/objects", .methodNotAllowed(["OPTIONS", "POST"])),
    ("GET", "/v1/hooks/h1", .methodNotAllowed(["OPTIONS", "PATCH"])),
    ("TRACE", "/health", .notImplemented),
    // OPTIONS: the matching pattern's methods; "*" lists every method the server implements.
    ("OPTIONS", "/health", .options(["GET", "HEAD", "OPTIONS"])),
    ("OPTIONS", "/v1/devices/abc", .options(["DELETE", "GET", "HEAD", "OPTIONS"])),
    ("OPTIONS", "/nothing", .notFound),
    ("OPTIONS", "*", .options(["DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"])),
]

@Test(arguments: cases.indices)
func routerMatchesMethodAndPath(_ index: Int) {
    let c = cases[index]
    #expect(outcome(c.method, c.path) == c.expected, "\(c.method) \(c.path)")
}

private let queryCases: [(query: String, expected: [(String, String)]?)] = [
    ("a=1&b=2", [("a", "1"), ("b", "2")]),
    ("a=hello+world", [("a", "hello world")]),
    ("a=x%2By%26z", [("a", "x+y&z")]),
    ("flag&a=", [("flag", ""), ("a", "")]),
    ("a=1&&b=2", [("a", "1"), ("b", "2")]),
    ("a=1=2", [("a", "1=2")]),
    ("caf%C3%A9=%E2%9C%93", [("café", "✓")]),
    ("a=%zz", nil),
    ("a=%", nil),
]

@Test(arguments: queryCases.indices)
func queryStringsArePercentDecoded(_ index: Int) {
    let c = queryCases[index]
    let parsed = PercentDecoding.parseQuery(c.query[...])
    if let expected = c.expected {
        #expect(parsed?.map { "\($0.name)=\($0.value)" } == expected.map { "\($0.0)=\($0.1)" }, "\(c.query)")
    } else {
        #expect(parsed == nil, "\(c.query)")
    }
}
