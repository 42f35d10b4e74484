import ConcordDomain
import ConcordHTTP
import ConcordJSON
import ConcordObservability
import ConcordTransport
import Synchronization

/// Everything a handler gets for one request.
public struct RequestContext: Sendable {
    public let request: HTTPRequest
    /// What the transport knows of the connection: peer address, the client going.
    public let connection: ConnectionContext
    /// The caller the head's check found when the transport asked before reading the body
    /// (`Dispatcher.admit`): it is neither authenticated nor counted again.
    public let admitted: AuthenticatedCaller?
    /// The request's `Idempotency-Key`, once `IdempotencyStage` claimed it: handed to the
    /// service's writes (their `idempotency` argument), which mark it applied.
    public internal(set) var idempotency: IdempotencyScope?
    /// Path captures of the matched pattern, percent-decoded.
    public let pathParameters: [String: String]
    /// The matched route's pattern, e.g. `/v1/devices/{deviceID}`.
    public let routePattern: String
    /// The query's name/value pairs in order, percent-decoded (`+` is a space).
    public let queryItems: [(name: String, value: String)]
    /// The request's logger (carries the request id).
    public let logger: Logger
    /// The device and mapping version the request's authentication read with its token, for the
    /// request's own mapping read (shared by this context's copies).
    public let deviceCheck: DeviceCheckNote

    public init(
        request: HTTPRequest, connection: ConnectionContext = ConnectionContext(), admitted: AuthenticatedCaller? = nil,
        deviceCheck: DeviceCheckNote? = nil,
        pathParameters: [String: String] = [:], routePattern: String = "", queryItems: [(name: String, value: String)] = [], logger: Logger
    ) {
        self.request = request
        self.connection = connection
        self.admitted = admitted
        self.deviceCheck = deviceCheck ?? DeviceCheckNote()
        self.pathParameters = pathParameters
        self.routePattern = routePattern
        self.queryItems = queryItems
        self.logger = logger
    }

    /// The first value of query parameter `name`, percent-decoded.
    public func query(_ name: String) -> String? {
        self.queryItems.first(where: { $0.name == name })?.value
    }

    /// The path parameter `name`; a route asking for a capture its pattern lacks is a
    /// programming error, answered as 500 rather than a crash.
    public func pathParameter(_ name: String) throws(APIError) -> String {
        guard let value = self.pathParameters[name] else { throw APIError.internalError() }
        return value
    }

    /// The token of `Authorization: Bearer <token>` (scheme case-insensitive, RFC 9110
    /// §11.1); nil when the header is missing, of another scheme, or empty.
    public var bearerToken: String? {
        guard let header = self.request.headers[first: "Authorization"] else { return nil }
        let trimmed = header.drop(while: { $0 == " " || $0 == "\t" })
        guard trimmed.utf8.count > 7 else { return nil }
        let scheme = trimmed.prefix(6)
        guard scheme.lowercased() == "bearer" else { return nil }
        let rest = trimmed.dropFirst(6)
        guard let first = rest.first, first == " " || first == "\t" else { return nil }
        let token = rest.trimmingSpaces()
        return token.isEmpty ? nil : String(token)
    }

    /// The body parsed as a JSON object; `400 badRequest` when it is malformed JSON or
    /// another JSON type.
    /// The body as a JSON object; `maxElements` bounds its elements (array items and object
    /// members at any depth) while it is parsed: beyond it `413 payloadTooLarge`.
    public func jsonBody(maxElements: Int = .max) throws(APIError) -> JSONObject {
        let value: JSONValue
        do {
            value = try JSONValue.parse(self.request.body, maxElements: maxElements)
        } catch {
            if error.tooManyElements {
                throw APIError.payloadTooLarge("The body has more than \(maxElements) JSON elements.")
            }
            throw APIError.badRequest("The body is malformed JSON at byte \(error.offset): \(error.message)")
        }
        guard case .object(let object) = value else {
            throw APIError.badRequest("The body must be a JSON object.")
        }
        return object
    }
}

/// The `DeviceCheck` a request's authentication read (`AccountService.authenticateWithDeviceCheck`),
/// kept for its handler: it belongs to this request only, whose arrival preceded its read.
public final class DeviceCheckNote: Sendable {
    private let value = Mutex<DeviceCheck?>(nil)
    public init() {}
    public var check: DeviceCheck? {
        get { self.value.withLock { $0 } }
        set { self.value.withLock { $0 = newValue } }
    }
}
