/// A request the parser refuses. Every parse failure closes the connection after the answer:
/// once framing is in doubt, no later byte on that connection can be trusted.
public struct HTTPParseError: Error, Sendable, Equatable {
    /// 400, 413, 414, 431, 501 or 505.
    public var status: Int
    /// The contract name: badRequest, payloadTooLarge, uriTooLong, headersTooLarge,
    /// notImplemented, httpVersionNotSupported.
    public var name: String
    /// A human-readable reason, safe to send (never echoes request bytes).
    public var message: String

    /// Creates an error; `response` is derived from these three values.
    public init(status: Int, name: String, message: String) {
        self.status = status
        self.name = name
        self.message = message
    }

    /// The answer to send before closing: `{"error":{"name":..,"message":..}}` as
    /// `application/json` (the service's error shape, docs/api-notes.md).
    public var response: HTTPResponse {
        // Written by hand so this layer does not depend on the JSON writer's API.
        var body: [UInt8] = []
        body.reserveCapacity(40 + self.name.utf8.count + self.message.utf8.count)
        body.append(contentsOf: #"{"error":{"name":"#.utf8)
        HTTPParseError.appendJSONString(self.name, to: &body)
        body.append(contentsOf: #","message":"#.utf8)
        HTTPParseError.appendJSONString(self.message, to: &body)
        body.append(contentsOf: "}}".utf8)
        return HTTPResponse(
            status: self.status,
            headers: HTTPHeaders([(name: "Content-Type", value: "application/json")]),
            body: body
        )
    }

    /// Appends `s` as a JSON string literal (RFC 8259 §7): quotes, backslash and control
    /// characters escaped, everything else as UTF-8.
    static func appendJSONString(_ s: String, to out: inout [UInt8]) {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x00..<0x20:
                out.append(contentsOf: Array(#"\u00"#.utf8))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// The statuses the parser refuses with; each case's name is the contract's name.
    enum Refusal: Int {
        case badRequest = 400, payloadTooLarge = 413, uriTooLong = 414, headersTooLarge = 431
        case notImplemented = 501, httpVersionNotSupported = 505
    }

    init(_ refusal: Refusal, _ message: String) {
        self.init(status: refusal.rawValue, name: String(describing: refusal), message: message)
    }

    static func badRequest(_ message: String) -> HTTPParseError { HTTPParseError(.badRequest, message) }
    static func payloadTooLarge(_ message: String) -> HTTPParseError { HTTPParseError(.payloadTooLarge, message) }
    static func uriTooLong(_ message: String) -> HTTPParseError { HTTPParseError(.uriTooLong, message) }
    static func headersTooLarge(_ message: String) -> HTTPParseError { HTTPParseError(.headersTooLarge, message) }
    static func notImplemented(_ message: String) -> HTTPParseError { HTTPParseError(.notImplemented, message) }
    static func versionNotSupported(_ message: String) -> HTTPParseError { HTTPParseError(.httpVersionNotSupported, message) }
}
