#if canImport(Glibc)
// Floating-point rounding (used by `Int(exactly:)` and the writer) lives in libm, which
// only gets linked when a module imports the C library.
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A parsed JSON document (RFC 8259). Numbers are kept as `Double`, which is what
/// RFC 8259 §6 says interoperable implementations can rely on.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)
}

/// A JSON object that keeps its members in document order.
///
/// Duplicate names are kept as they appear (RFC 8259 §4 leaves them undefined);
/// lookup by name returns the last one, as most JavaScript engines do.
extension JSONValue {
    /// The elements the parser counts against its `maxElements`: array items and object members,
    /// at any depth below this value.
    public var elementCount: Int {
        switch self {
        case .array(let items): return items.reduce(items.count) { $0 + $1.elementCount }
        case .object(let o): return o.members.reduce(o.members.count) { $0 + $1.value.elementCount }
        default: return 0
        }
    }
}

public struct JSONObject: Sendable, Equatable {
    /// The members, in document order, duplicates included.
    public var members: [(key: String, value: JSONValue)]

    /// Creates an object from members in the order given.
    public init(_ members: [(key: String, value: JSONValue)] = []) {
        self.members = members
    }

    /// The value of the last member named `key`, or `nil` if there is none.
    public subscript(key: String) -> JSONValue? {
        // Scanning backwards makes "last wins" free; request objects are small,
        // so a linear scan beats building a dictionary.
        var index = self.members.count
        while index > 0 {
            index -= 1
            if self.members[index].key == key {
                return self.members[index].value
            }
        }
        return nil
    }

    /// The member names in document order (duplicates included).
    public var keys: [String] {
        self.members.map(\.key)
    }

    /// Equal when both have the same members in the same order.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.members.count == rhs.members.count else { return false }
        for index in lhs.members.indices {
            let left = lhs.members[index]
            let right = rhs.members[index]
            if left.key != right.key || left.value != right.value {
                return false
            }
        }
        return true
    }
}

/// Why a byte sequence is not a JSON text, and where the parser noticed.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A human-readable reason, e.g. "unterminated string".
    public var message: String
    /// Byte offset from the start of the input at which the problem was found.
    public var offset: Int
    /// The document has more elements than the parse allowed (not malformed: too large).
    public var tooManyElements = false

    /// Creates an error with a reason and a byte offset.
    public init(message: String, offset: Int, tooManyElements: Bool = false) {
        self.message = message
        self.offset = offset
        self.tooManyElements = tooManyElements
    }

    /// "message at byte N", suitable for an API error body.
    public var description: String {
        "\(self.message) at byte \(self.offset)"
    }
}

// Accessors used when decoding request bodies: each is `nil` unless the value has that type.
extension JSONValue {
    /// The string, if this is a JSON string.
    @inlinable
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The boolean, if this is `true` or `false`.
    @inlinable
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The number, if this is a JSON number.
    @inlinable
    public var doubleValue: Double? {
        if case .number(let value) = self { return value }
        return nil
    }

    /// The number as an `Int`, only if it is integral and fits (so `1.5` and `1e300` give `nil`).
    @inlinable
    public var intValue: Int? {
        if case .number(let value) = self { return Int(exactly: value) }
        return nil
    }

    /// The elements, if this is a JSON array.
    @inlinable
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The object, if this is a JSON object.
    @inlinable
    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// Whether this is JSON `null`.
    @inlinable
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}
