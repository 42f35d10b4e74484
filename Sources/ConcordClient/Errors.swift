import Foundation

/// An error PhotoKit defines (`PHPhotosErrorDomain`), with its raw `code`: per item in mapping
/// answers, journal photos and changes, or thrown when it is the whole answer
/// (`persistentChangeTokenExpired`, `accessUserDenied`).
///
/// Bridges to `NSError` with domain `PHPhotosErrorDomain` and the same code, so code that
/// switches on `PHPhotosError.Code` raw values keeps working.
public struct ConcordPhotosError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A `PHPhotosError.Code` raw value.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// 3201: no object with that identifier on this device.
        public static let identifierNotFound = Code(rawValue: 3201)
        /// 3202: several objects match; `localIdentifiers` lists them.
        public static let multipleIdentifiersFound = Code(rawValue: 3202)
        /// 3105: the change token is older than the history kept; refetch everything.
        public static let persistentChangeTokenExpired = Code(rawValue: 3105)
        /// 3210: a change's details are unavailable (the library was reset); refetch.
        public static let persistentChangeDetailsUnavailable = Code(rawValue: 3210)
        /// 3311: the person denied this device access to the library.
        public static let accessUserDenied = Code(rawValue: 3311)
        /// -1 (`PHPhotosErrorInvalid`): errors PhotoKit has no code for, such as the
        /// server's per-item `invalidIdentifier`; `name` tells which.
        public static let invalid = Code(rawValue: -1)

        public var description: String { String(self.rawValue) }
    }

    /// PhotoKit's error domain.
    public static let domain = "PHPhotosErrorDomain"
    /// The `NSError` userInfo key of `multipleIdentifiersFound`'s candidates, PhotoKit's
    /// `PHLocalIdentifiersErrorKey` (its value, so no Photos import is needed).
    public static let localIdentifiersErrorKey = "PHLocalIdentifiersErrorKey"
    /// The key the client used for the candidates before it used PhotoKit's; still set, for
    /// code that reads it.
    @available(*, deprecated, renamed: "localIdentifiersErrorKey")
    public static let legacyLocalIdentifiersKey = "localIdentifiers"

    /// The PhotoKit code (`invalid` for errors PhotoKit does not define).
    public var code: Code
    /// The server's name for it (`identifierNotFound`, `invalidIdentifier`, ...).
    public var name: String
    /// The server's explanation, for logs.
    public var message: String
    /// For `multipleIdentifiersFound`: every matching local identifier, in byte order.
    public var localIdentifiers: [String]?
    /// For `identifierNotFound` on a device with limited library access.
    public var limitedLibrary: Bool
    /// The HTTP status when the error was the whole answer (410, 403); nil per item.
    public var status: Int?

    public init(code: Code, name: String, message: String = "", localIdentifiers: [String]? = nil, limitedLibrary: Bool = false, status: Int? = nil) {
        self.code = code
        self.name = name
        self.message = message
        self.localIdentifiers = localIdentifiers
        self.limitedLibrary = limitedLibrary
        self.status = status
    }

    public var description: String { "\(self.name) (\(Self.domain) \(self.code.rawValue)): \(self.message)" }
}

extension ConcordPhotosError: CustomNSError {
    public static var errorDomain: String { Self.domain }
    public var errorCode: Int { self.code.rawValue }
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [NSLocalizedDescriptionKey: self.message]
        if let ids = self.localIdentifiers {
            info[Self.localIdentifiersErrorKey] = ids
            info["localIdentifiers"] = ids   // the earlier key (legacyLocalIdentifiersKey)
        }
        if self.limitedLibrary { info["limitedLibrary"] = true }
        return info
    }
}

/// An HTTP-level error answered by the server (the API's `{"error": {...}}` shape), or a
/// response the client could not understand (`name` `invalidResponse`).
public struct ConcordError: Error, Sendable, CustomStringConvertible {
    /// The HTTP status (401, 403, 404, 412, 413, 503, ...).
    public var status: Int
    /// The contract name (`unauthorized`, `forbidden`, `batchTooLarge`, `versionMismatch`, ...).
    public var name: String
    /// The server's explanation, for logs.
    public var message: String
    /// `batchTooLarge`: the most items the server takes per request.
    public var maxBatch: Int?
    /// `versionMismatch`: the current version of the thing addressed.
    public var version: String?
    /// `badRequest`: the offending field, a dotted path from the body's root.
    public var field: String?
    /// `Retry-After` of a `503`, in seconds, when present.
    public var retryAfter: Double?
    /// Every member of the error object besides `name` and `message` (422 details and the
    /// like), as JSON values.
    public var details: [String: JSONDetail]

    public init(status: Int, name: String, message: String, maxBatch: Int? = nil, version: String? = nil, field: String? = nil, retryAfter: Double? = nil, details: [String: JSONDetail] = [:]) {
        self.status = status
        self.name = name
        self.message = message
        self.maxBatch = maxBatch
        self.version = version
        self.field = field
        self.retryAfter = retryAfter
        self.details = details
    }

    public var description: String {
        var text = "\(self.status) \(self.name): \(self.message)"
        if let field = self.field { text += " (field \(field))" }
        return text
    }
}

/// `412 versionMismatch` on a library write (the write precondition, `If-Match`): the device's
/// library changed since the token the write carried, so nothing was stored. The client sends the
/// token of its own last library write (`LibrarySyncState`), so this means another installation
/// holds this device's token and wrote since: this one is a copy (restored from a backup, moved to
/// a new phone). It should stop writing as this device, register as its successor and adopt its
/// links (docs/client.md, "A copied installation").
public struct LibraryChangedElsewhereError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The library's change token now (what the other installation's last write left).
    public var currentChangeToken: ChangeToken
    /// The server's explanation, for logs.
    public var message: String
    /// Always 412.
    public var status: Int { 412 }

    public init(currentChangeToken: ChangeToken, message: String = "") {
        self.currentChangeToken = currentChangeToken
        self.message = message
    }

    public var description: String { "412 versionMismatch: the library changed elsewhere (now at \(self.currentChangeToken)): \(self.message)" }
}

/// A JSON value, for the free-form details of an error.
public enum JSONDetail: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONDetail])
    case object([String: JSONDetail])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let b = try? container.decode(Bool.self) {
            self = .bool(b)
        } else if let d = try? container.decode(Double.self) {
            self = .number(d)
        } else if let s = try? container.decode(String.self) {
            self = .string(s)
        } else if let a = try? container.decode([JSONDetail].self) {
            self = .array(a)
        } else {
            self = .object(try container.decode([String: JSONDetail].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let b): try container.encode(b)
        case .number(let d): try container.encode(d)
        case .string(let s): try container.encode(s)
        case .array(let a): try container.encode(a)
        case .object(let o): try container.encode(o)
        }
    }

    /// The string, when this is one.
    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    /// The number as an `Int`, when this is an integral number.
    public var intValue: Int? {
        if case .number(let d) = self, let i = Int(exactly: d) { i } else { nil }
    }
    /// The elements, when this is an array.
    public var arrayValue: [JSONDetail]? { if case .array(let a) = self { a } else { nil } }
}

/// The API's error object as it travels, per item or as a whole answer.
struct WireError: Decodable, Sendable {
    var name: String
    var message: String?
    var domain: String?
    var code: Int?
    var localIdentifiers: [String]?
    var limitedLibrary: Bool?

    /// Per-item errors are PhotoKit's where the server says so; others (`invalidIdentifier`)
    /// keep their name with code `invalid`.
    func photosError(status: Int? = nil) -> ConcordPhotosError {
        let code = self.domain == ConcordPhotosError.domain ? self.code.map(ConcordPhotosError.Code.init(rawValue:)) : nil
        return ConcordPhotosError(
            code: code ?? .invalid, name: self.name, message: self.message ?? "",
            localIdentifiers: self.localIdentifiers, limitedLibrary: self.limitedLibrary ?? false, status: status)
    }
}

/// Turns a non-2xx answer into the error to throw: `ConcordPhotosError` when the server
/// marks it as PhotoKit's, else `ConcordError`.
func errorFromResponse(status: Int, body: Data, retryAfter: Double?) -> any Error {
    struct Envelope: Decodable { var error: [String: JSONDetail] }
    guard let envelope = try? JSONDecoder().decode(Envelope.self, from: body),
        let name = envelope.error["name"]?.stringValue
    else {
        let text = String(decoding: body.prefix(200), as: UTF8.self)
        return ConcordError(status: status, name: "invalidResponse", message: "HTTP \(status) without a JSON error: \(text)", retryAfter: retryAfter)
    }
    let e = envelope.error
    if e["domain"]?.stringValue == ConcordPhotosError.domain, let code = e["code"]?.intValue {
        return ConcordPhotosError(
            code: ConcordPhotosError.Code(rawValue: code), name: name, message: e["message"]?.stringValue ?? "",
            localIdentifiers: e["localIdentifiers"]?.arrayValue?.compactMap(\.stringValue),
            limitedLibrary: e["limitedLibrary"] == .bool(true), status: status)
    }
    var details = e
    details["name"] = nil
    details["message"] = nil
    return ConcordError(
        status: status, name: name, message: e["message"]?.stringValue ?? "",
        maxBatch: e["maxBatch"]?.intValue, version: e["version"]?.stringValue, field: e["field"]?.stringValue,
        retryAfter: retryAfter, details: details)
}
