/// The value of an `If-Match` header field (RFC 9110 §13.1.1).
public enum IfMatchField: Sendable, Equatable {
    /// `*`: matches whatever exists.
    case any
    /// The strong entity tags' opaque values, in order. Weak tags (`W/"..."`) never match a
    /// strong comparison, so they are dropped: a list of only weak tags is an empty list (fails).
    case strong([String])
}

extension HTTPHeaders {
    /// The request's `If-Match` (every field line joined as one list): nil when absent; throws
    /// `InvalidIfMatch` when it is neither `*` nor a list of quoted entity tags.
    public func ifMatch() throws(InvalidIfMatch) -> IfMatchField? {
        let fields = self[all: "If-Match"]
        guard !fields.isEmpty else { return nil }
        let bytes = Array(fields.joined(separator: ",").utf8)
        func isOWS(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }
        var i = 0
        var versions: [String] = []
        var tags = 0
        var star = false
        // #entity-tag (RFC 9110 §5.6.1): elements separated by commas and optional whitespace, empty ones ignored.
        while i < bytes.count {
            if isOWS(bytes[i]) || bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "*") {
                star = true
                i += 1
            } else {
                var weak = false
                if bytes[i] == UInt8(ascii: "W"), i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "/") {
                    weak = true
                    i += 2
                }
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw InvalidIfMatch() }
                i += 1
                let start = i
                // etagc = %x21 / %x23-7E / obs-text: no quote, space or control inside.
                while i < bytes.count, bytes[i] != UInt8(ascii: "\"") {
                    guard bytes[i] == 0x21 || (bytes[i] >= 0x23 && bytes[i] != 0x7F) else { throw InvalidIfMatch() }
                    i += 1
                }
                guard i < bytes.count else { throw InvalidIfMatch() }
                if !weak { versions.append(String(decoding: bytes[start..<i], as: UTF8.self)) }
                i += 1
                tags += 1
            }
            // After an element: only whitespace, then a comma or the end.
            while i < bytes.count, isOWS(bytes[i]) { i += 1 }
            guard i == bytes.count || bytes[i] == UInt8(ascii: ",") else { throw InvalidIfMatch() }
        }
        if star {
            guard tags == 0 else { throw InvalidIfMatch() }   // "*" stands alone
            return .any
        }
        guard tags > 0 else { throw InvalidIfMatch() }
        return .strong(versions)
    }
}

/// An `If-Match` that is neither `*` nor a list of quoted entity tags.
public struct InvalidIfMatch: Error, Sendable, Equatable {
    public init() {}
}
