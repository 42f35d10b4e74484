import ConcordHTTP
import Testing

/// `HTTPRequest.path` / `query` for every request-target form the parser accepts
/// (RFC 9112 §3.2): an absolute-form target routes like its origin-form.
private let targetCases: [(target: String, path: String, query: String?)] = [
    ("/health", "/health", nil),
    ("/v1/library/objects?type=assets&limit=2", "/v1/library/objects", "type=assets&limit=2"),
    ("/a?", "/a", ""),
    ("*", "*", nil),
    ("http://localhost/health", "/health", nil),
    ("http://localhost:8080/v1/devices?x=1", "/v1/devices", "x=1"),
    ("HTTP://example.com/a/b%2Fc", "/a/b%2Fc", nil),
    ("https://[::1]:8443/health", "/health", nil),
    ("http://localhost", "/", nil),
    ("http://localhost?x=1", "/", "x=1"),
    ("http://user@host/p", "/p", nil),
]

@Test(arguments: targetCases.indices)
func absoluteFormTargetRoutesLikeOriginForm(_ index: Int) {
    let c = targetCases[index]
    let request = HTTPRequest(method: "GET", target: c.target)
    #expect(request.path == c.path[...], "\(c.target)")
    #expect(request.query.map(String.init) == c.query, "\(c.target)")
}
