import ConcordHTTP
import ConcordJSON

/// The one error type of the HTTP API: every failure becomes one of these, and
/// `response` (Routes/Encoding/APIError+JSON.swift) is the single place that turns it into
/// the contract's JSON shape: `{"error": {"name", "message", ...details}}`.
public struct APIError: Error, Sendable {
    public var status: Int
    public var name: String
    public var message: String
    /// Extra fields of the error object (`"maxBatch"`, `"version"`, `"field"`, ...),
    /// already encoded as JSON values, in order.
    public var details: [(key: String, jsonValue: String)]
    /// Extra response headers (`Retry-After`, `ETag`, `Allow`).
    public var headers: [(name: String, value: String)]

    public init(status: Int, name: String, message: String, details: [(key: String, jsonValue: String)] = [], headers: [(name: String, value: String)] = []) {
        self.status = status
        self.name = name
        self.message = message
        self.details = details
        self.headers = headers
    }

    public static func badRequest(_ message: String, field: String? = nil) -> APIError {
        var e = APIError(.badRequest, message)
        if let field { e.details.append(("field", jsonString(field))) }
        return e
    }
    /// The body is over the route's limit, naming the setting it comes from. The
    /// server's own limit (manifests) is the transport's to answer (`HTTPLimits.bodyLimitAdvice`).
    static func payloadTooLarge(limit: Int, body: Route.BodyClass) -> APIError {
        let setting = switch body {
        case .small: "server.limits.smallBodyBytes"
        case .batch: "server.limits.maxBatch (room for that many identifiers, within server.limits.bodyBytes)"
        case .manifest: "server.limits.bodyBytes; a whole library goes as an upload in parts: POST /v1/library/uploads"
        }
        return .payloadTooLarge("The body is larger than this route's limit of \(limit) bytes (\(setting)).")
    }
    /// The body holds more than the route takes (elements, objects).
    public static func payloadTooLarge(_ message: String) -> APIError {
        APIError(.payloadTooLarge, message)
    }
    public static let unauthorized = APIError(.unauthorized, "A valid bearer token is required.")
    public static let forbidden = APIError(.forbidden, "This token may not use this endpoint.")
    public static let notFound = APIError(.notFound, "Not found.")
    public static func methodNotAllowed(allow: [String]) -> APIError {
        APIError(.methodNotAllowed, "Method not allowed.", headers: [("Allow", allow.joined(separator: ", "))])
    }
    /// `501`: a method the server does not implement on any resource (RFC 9110 §15.6.2).
    public static let notImplemented = APIError(.notImplemented, "This method is not implemented.")
    public static func internalError() -> APIError {
        APIError(.internalError, "Internal server error.")
    }
    public static func unavailable(retryAfterSeconds: Int = 1, message: String = "Storage is unavailable; retry later.") -> APIError {
        APIError(.unavailable, message, headers: [("Retry-After", String(retryAfterSeconds))])
    }

    /// `429`: over a rate limit; `Retry-After` in whole seconds, at least 1.
    public static func tooManyRequests(retryAfter seconds: Double) -> APIError {
        let wait = max(1, Int(seconds.rounded(.up)))
        return APIError(.tooManyRequests, "Too many requests; retry after \(wait) s.", headers: [("Retry-After", String(wait))])
    }
}

extension APIError {
    /// This error with one more response header (e.g. `ETag`).
    public func with(header name: String, _ value: String) -> APIError {
        var copy = self
        copy.headers.append((name, value))
        return copy
    }
}

extension APIError {
    /// `400 badRequest`: a required field is absent.
    public static func missingField(_ name: String) -> APIError {
        .badRequest("The field \"\(name)\" is required.", field: name)
    }

    /// `400 badRequest`: a field has the wrong JSON type; `expected` reads "a string", "an integer"...
    public static func wrongType(_ name: String, _ expected: String) -> APIError {
        .badRequest("The field \"\(name)\" must be \(expected).", field: name)
    }
}
