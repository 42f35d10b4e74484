/// Streams JSON as UTF-8 into `bytes`, inserting commas automatically.
///
/// The writer does not check structure (a key outside an object is the caller's bug);
/// it only guarantees that every string it writes is correctly escaped and every number
/// is valid JSON. Non-finite doubles are written as `null`, since JSON has no spelling for them.
public struct JSONWriter: Sendable {
    /// The UTF-8 written so far.
    public var bytes: [UInt8]
    /// Whether the next value or key must be preceded by a comma.
    @usableFromInline
    var needsComma = false

    /// Creates an empty writer with room for `capacity` bytes.
    public init(capacity: Int = 256) {
        self.bytes = []
        self.bytes.reserveCapacity(capacity)
    }

    @inlinable
    mutating func separate() {
        if self.needsComma {
            self.bytes.append(UInt8(ascii: ","))
        }
    }

    /// Writes `{`.
    @inlinable
    public mutating func beginObject() {
        self.separate()
        self.bytes.append(UInt8(ascii: "{"))
        self.needsComma = false
    }

    /// Writes `}`.
    @inlinable
    public mutating func endObject() {
        self.bytes.append(UInt8(ascii: "}"))
        self.needsComma = true
    }

    /// Starts a fragment of its own after what is written: the next key or value takes no comma.
    /// Several separate pieces of JSON (each error of an answer once) then share one buffer.
    @inlinable
    public mutating func beginFragment() {
        self.needsComma = false
    }

    /// Writes `prefix`, JSON that another writer wrote up to just inside an object or array it
    /// opened (the constant head of a value, rendered once): the next key or value takes no comma.
    @inlinable
    public mutating func appendOpened(_ prefix: [UInt8]) {
        self.separate()
        self.bytes.append(contentsOf: prefix)
        self.needsComma = false
    }

    /// Writes `[`.
    @inlinable
    public mutating func beginArray() {
        self.separate()
        self.bytes.append(UInt8(ascii: "["))
        self.needsComma = false
    }

    /// Writes `]`.
    @inlinable
    public mutating func endArray() {
        self.bytes.append(UInt8(ascii: "]"))
        self.needsComma = true
    }

    /// Writes a member name and `:`; the next call writes its value.
    @inlinable
    public mutating func key(_ k: String) {
        self.separate()
        self.appendQuoted(k)
        self.bytes.append(UInt8(ascii: ":"))
        self.needsComma = false
    }

    /// Writes a string value, escaped.
    @inlinable
    public mutating func string(_ s: String) {
        self.separate()
        self.appendQuoted(s)
        self.needsComma = true
    }

    /// Writes a string value given as UTF-8 bytes (valid UTF-8), escaped.
    @inlinable
    public mutating func string(utf8: UnsafeBufferPointer<UInt8>) {
        self.separate()
        self.appendQuoted(utf8: utf8)
        self.needsComma = true
    }

    /// Writes a member name that needs no escaping (the caller's literal, plain ASCII) and `:`,
    /// copied without the escape scan.
    @inlinable
    public mutating func key(plain k: StaticString) {
        self.separate()
        self.bytes.append(UInt8(ascii: "\""))
        self.appendASCII(k)
        self.bytes.append(UInt8(ascii: "\""))
        self.bytes.append(UInt8(ascii: ":"))
        self.needsComma = false
    }

    /// Writes a string value the caller knows needs no escaping — ASCII without `"`, `\` or
    /// control characters (a cloud identifier: hex, digits, `:`, base64url) — copied as is.
    @inlinable
    public mutating func string(plainASCII utf8: UnsafeBufferPointer<UInt8>) {
        self.separate()
        self.bytes.append(UInt8(ascii: "\""))
        self.bytes.append(contentsOf: utf8)
        self.bytes.append(UInt8(ascii: "\""))
        self.needsComma = true
    }

    /// Writes an integer, without exponent.
    @inlinable
    public mutating func int(_ i: Int) {
        self.separate()
        self.appendInteger(i)
        self.needsComma = true
    }

    /// Writes a number that parses back to the same `Double`; integral values within `Int`'s
    /// range are written as integers, NaN and infinities as `null`.
    public mutating func double(_ d: Double) {
        self.separate()
        self.appendDouble(d)
        self.needsComma = true
    }

    /// Writes `true` or `false`.
    @inlinable
    public mutating func bool(_ b: Bool) {
        self.separate()
        if b {
            self.appendASCII("true")
        } else {
            self.appendASCII("false")
        }
        self.needsComma = true
    }

    /// Writes `null`.
    @inlinable
    public mutating func null() {
        self.separate()
        self.appendASCII("null")
        self.needsComma = true
    }

    /// Writes a whole value tree, members in order.
    public mutating func value(_ v: JSONValue) {
        switch v {
        case .null:
            self.null()
        case .bool(let b):
            self.bool(b)
        case .number(let d):
            self.double(d)
        case .string(let s):
            self.string(s)
        case .array(let elements):
            self.beginArray()
            for element in elements {
                self.value(element)
            }
            self.endArray()
        case .object(let object):
            self.beginObject()
            for member in object.members {
                self.key(member.key)
                self.value(member.value)
            }
            self.endObject()
        }
    }

    // MARK: Encoding

    @usableFromInline
    mutating func appendASCII(_ text: StaticString) {
        self.bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    @usableFromInline
    mutating func appendQuoted(_ s: String) {
        // Native Swift strings are contiguous UTF-8, so this borrows them without copying or
        // retaining; bridged or non-contiguous strings are made native first.
        let done: Void? = s.utf8.withContiguousStorageIfAvailable { utf8 in
            self.appendQuoted(utf8: utf8)
        }
        if done == nil {
            var copy = s
            copy.withUTF8 { utf8 in
                self.appendQuoted(utf8: utf8)
            }
        }
    }

    @usableFromInline
    mutating func appendQuoted(utf8: UnsafeBufferPointer<UInt8>) {
        self.bytes.append(UInt8(ascii: "\""))
        guard let base = UnsafeRawPointer(utf8.baseAddress) else {
            self.bytes.append(UInt8(ascii: "\""))
            return
        }
        let count = utf8.count
        var runStart = 0
        var index = 0
        while index < count {
            // Skip 8 bytes at a time while none needs escaping; look at bytes only in the
            // word that holds one.
            while count - index >= 8 {
                if Self.needsEscape(base.loadUnaligned(fromByteOffset: index, as: UInt64.self)) {
                    break
                }
                index += 8
            }
            let end = min(index + 8, count)
            while index < end {
                let byte = utf8[index]
                // RFC 8259 §7: quotation mark, reverse solidus and U+0000…U+001F must be escaped;
                // everything else (non-ASCII included) passes through as UTF-8.
                if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                    if runStart < index {
                        self.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                    }
                    self.appendEscape(byte)
                    runStart = index + 1
                }
                index += 1
            }
        }
        if runStart < count {
            self.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<count]))
        }
        self.bytes.append(UInt8(ascii: "\""))
    }

    /// Whether any byte of `word` is a quote, a backslash or below 0x20 (SWAR: for n ≤ 0x80,
    /// `(x - n·0x01…) & ~x & 0x80…` is non-zero exactly when some byte of x is below n).
    @inline(__always)
    static func needsEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quotes = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
        let backslashes = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
        let hasQuote = (quotes &- ones) & ~quotes
        let hasBackslash = (backslashes &- ones) & ~backslashes
        let hasControl = (word &- ones &* 0x20) & ~word
        return (hasQuote | hasBackslash | hasControl) & 0x8080_8080_8080_8080 != 0
    }

    @usableFromInline
    mutating func appendEscape(_ byte: UInt8) {
        let short: UInt8
        switch byte {
        case UInt8(ascii: "\""): short = UInt8(ascii: "\"")
        case UInt8(ascii: "\\"): short = UInt8(ascii: "\\")
        case 0x08: short = UInt8(ascii: "b")
        case 0x0C: short = UInt8(ascii: "f")
        case 0x0A: short = UInt8(ascii: "n")
        case 0x0D: short = UInt8(ascii: "r")
        case 0x09: short = UInt8(ascii: "t")
        default:
            let hex: StaticString = "0123456789abcdef"
            let digits = hex.utf8Start
            self.bytes.append(UInt8(ascii: "\\"))
            self.bytes.append(UInt8(ascii: "u"))
            self.bytes.append(UInt8(ascii: "0"))
            self.bytes.append(UInt8(ascii: "0"))
            self.bytes.append(digits[Int(byte >> 4)])
            self.bytes.append(digits[Int(byte & 0x0F)])
            return
        }
        self.bytes.append(UInt8(ascii: "\\"))
        self.bytes.append(short)
    }

    @usableFromInline
    mutating func appendInteger(_ value: Int) {
        // Digits are produced backwards into a fixed buffer, then copied once.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            var magnitude = value.magnitude
            var position = 20
            repeat {
                position -= 1
                buffer[position] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude != 0
            if value < 0 {
                self.bytes.append(UInt8(ascii: "-"))
            }
            self.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[position..<20]))
        }
    }

    mutating func appendDouble(_ value: Double) {
        guard value.isFinite else {
            self.appendASCII("null")
            return
        }
        // Integral values that fit an Int are written as plain integers (exact, and the
        // reader maps them back to the same double); 2^63 itself does not fit.
        if value == value.rounded(.towardZero) && value.magnitude < 9_223_372_036_854_775_808.0 {
            if value == 0 && value.sign == .minus {
                self.appendASCII("-0")
            } else {
                self.appendInteger(Int(value))
            }
            return
        }
        // Swift's `description` is the shortest digit string that round-trips, and its forms
        // ("0.1", "1e-05", "1.5e+300") are all valid JSON numbers.
        var text = value.description
        text.withUTF8 { utf8 in
            self.bytes.append(contentsOf: utf8)
        }
    }
}
