/// One metadata value of a log line, rendered as the matching JSON type.
public enum LogValue: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByFloatLiteral, CustomStringConvertible
{
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }

    public var description: String {
        switch self {
        case .string(let s): s
        case .int(let i): String(i)
        case .double(let d): String(d)
        case .bool(let b): String(b)
        }
    }
}

/// Key/value pairs attached to a log line. Unlike a dictionary it keeps the order the
/// pairs were written in, so lines read the same way every time; a later pair with
/// the same key replaces the earlier one.
public struct LogMetadata: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    public private(set) var pairs: [(key: String, value: LogValue)]

    public init() { self.pairs = [] }
    public init(dictionaryLiteral elements: (String, LogValue)...) {
        self.pairs = []
        for (key, value) in elements { self[key] = value }
    }

    /// Pairs whose keys the caller knows to be distinct (hot paths such as the access
    /// log), taken as they are without the per-key replacement search.
    public init(uniquePairs: [(key: String, value: LogValue)]) {
        self.pairs = uniquePairs
    }

    public var isEmpty: Bool { self.pairs.isEmpty }

    public subscript(key: String) -> LogValue? {
        // Lengths first: unequal keys are then rejected without a string comparison.
        get { self.pairs.first(where: { $0.key.utf8.count == key.utf8.count && $0.key == key })?.value }
        set {
            if let index = self.pairs.firstIndex(where: { $0.key.utf8.count == key.utf8.count && $0.key == key }) {
                if let newValue { self.pairs[index].value = newValue } else { self.pairs.remove(at: index) }
            } else if let newValue {
                self.pairs.append((key, newValue))
            }
        }
    }

    /// `self` with `other`'s pairs laid over it.
    public func merging(_ other: LogMetadata) -> LogMetadata {
        var result = self
        for (key, value) in other.pairs { result[key] = value }
        return result
    }

    public static func == (lhs: LogMetadata, rhs: LogMetadata) -> Bool {
        lhs.pairs.count == rhs.pairs.count && zip(lhs.pairs, rhs.pairs).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}
