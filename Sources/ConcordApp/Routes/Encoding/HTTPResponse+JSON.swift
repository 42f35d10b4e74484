import ConcordHTTP
import ConcordJSON

extension HTTPResponse {
    /// A JSON response built with a `JSONWriter` (the fast path: no intermediate values).
    public static func json(status: Int = 200, headers: [(name: String, value: String)] = [], capacity: Int = 256, _ build: (inout JSONWriter) -> Void) -> HTTPResponse {
        var writer = JSONWriter(capacity: capacity)
        build(&writer)
        var h = HTTPHeaders([("Content-Type", "application/json")])
        for field in headers { h.add(name: field.name, value: field.value) }
        return HTTPResponse(status: status, headers: h, body: writer.bytes)
    }

    /// A JSON response of one value.
    public static func json(status: Int = 200, headers: [(name: String, value: String)] = [], _ value: JSONValue) -> HTTPResponse {
        .json(status: status, headers: headers) { $0.value(value) }
    }

    /// A plain-text response.
    public static func text(_ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: HTTPHeaders([("Content-Type", contentType)]), body: Array(text.utf8))
    }

    /// `204 No Content`.
    public static var noContent: HTTPResponse { HTTPResponse(status: 204) }
}
