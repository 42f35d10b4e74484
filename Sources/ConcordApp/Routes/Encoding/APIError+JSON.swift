import ConcordHTTP
import ConcordJSON

extension APIError {
    /// The JSON response for this error: `{"error": {"name", "message", ...details}}`.
    public var response: HTTPResponse {
        var body = "{\"error\":{\"name\":" + jsonString(self.name) + ",\"message\":" + jsonString(self.message)
        for (key, value) in self.details { body += "," + jsonString(key) + ":" + value }
        body += "}}"
        var headers = HTTPHeaders([("Content-Type", "application/json")])
        for h in self.headers { headers.add(name: h.name, value: h.value) }
        return HTTPResponse(status: self.status, headers: headers, body: Array(body.utf8))
    }

    /// This error with one more detail field (e.g. `.with("maxBatch", .number(10000))`).
    public func with(_ key: String, _ value: JSONValue) -> APIError {
        var writer = JSONWriter(capacity: 32)
        writer.value(value)
        var copy = self
        copy.details.append((key, String(decoding: writer.bytes, as: UTF8.self)))
        return copy
    }
}

/// A JSON string literal for `s` (quotes and escapes included), escaped by ConcordJSON's writer.
@inline(__always)
func jsonString(_ s: String) -> String {
    var writer = JSONWriter(capacity: s.utf8.count + 2)
    writer.string(s)
    return String(decoding: writer.bytes, as: UTF8.self)
}
