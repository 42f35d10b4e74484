extension JSONValue {
    /// Parses one JSON text (RFC 8259, strict) from UTF-8 bytes.
    ///
    /// Rejects invalid UTF-8, lone surrogate escapes, non-RFC numbers, whitespace other than
    /// space/tab/CR/LF, trailing bytes, numbers that overflow a `Double`, and nesting deeper
    /// than `maxDepth` arrays/objects. Runs in linear time without recursion, so no input can
    /// exhaust the stack. Keep `maxDepth` modest all the same: releasing, comparing and writing
    /// a `JSONValue` recurse once per nesting level.
    @inlinable
    public static func parse(_ bytes: some Collection<UInt8>, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        let result = bytes.withContiguousStorageIfAvailable { buffer in
            JSONValue.parseResult(UnsafeRawBufferPointer(buffer), maxDepth: maxDepth)
        }
        if let result {
            return try result.get()
        }
        let copy = Array(bytes)
        return try copy.withUnsafeBytes { buffer in
            JSONValue.parseResult(buffer, maxDepth: maxDepth)
        }.get()
    }

    /// Parses one JSON text from a contiguous byte array.
    @inlinable
    /// Parses `bytes`, refusing more than `maxElements` elements (array items and object
    /// members at any depth) with `JSONParseError.tooManyElements`.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 64, maxElements: Int) throws(JSONParseError) -> JSONValue {
        try bytes.withUnsafeBytes { buffer in
            JSONValue.parseResult(buffer, maxDepth: maxDepth, maxElements: maxElements)
        }.get()
    }

    public static func parse(_ bytes: [UInt8], maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        try bytes.withUnsafeBytes { buffer in
            JSONValue.parseResult(buffer, maxDepth: maxDepth)
        }.get()
    }

    /// Bytes of the text a document needs per element for `elementBound` (array items and object
    /// members). Parsed, an element costs ~50 bytes at the peak (measured on 64-bit Linux: a
    /// 24-byte `JSONValue` on the parser's stack and again in its finished array, a container's
    /// own buffer), while its text may be 2 bytes (`0,`) or 3 (`[],`): unbounded, a body of tiny
    /// values grows 25× in memory. One element per 12 bytes keeps the tree within
    /// about 4× the text, and admits the sparest object a library sends (`{"localIdentifier":"a1"},`,
    /// 12 bytes an element); real identifiers and fingerprints are 30 bytes an element and more.
    public static let bytesPerElementBound = 12

    /// The `maxElements` that keeps a document of `byteCount` bytes within a small multiple of its
    /// size while it is parsed: one element per `bytesPerElementBound` bytes, never fewer than
    /// `floor` (a small body of short strings), never more than `ceiling`.
    public static func elementBound(forBytes byteCount: Int, floor: Int, ceiling: Int = .max) -> Int {
        min(ceiling, max(floor, byteCount / Self.bytesPerElementBound))
    }

    /// Parses one JSON text from raw memory (e.g. a slice of a socket buffer).
    @inlinable
    public static func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        try JSONValue.parseResult(bytes, maxDepth: maxDepth).get()
    }

    /// The non-generic core; returns a `Result` because the `withUnsafe…` closures do not
    /// forward typed throws.
    @usableFromInline
    static func parseResult(_ bytes: UnsafeRawBufferPointer, maxDepth: Int, maxElements: Int = .max) -> Result<JSONValue, JSONParseError> {
        // Rebinding temporarily (rather than `bindMemory`) leaves the caller's memory binding alone.
        bytes.withMemoryRebound(to: UInt8.self) { input -> Result<JSONValue, JSONParseError> in
            var parser = JSONParser(input: input, maxDepth: maxDepth)
            parser.maxElements = maxElements
            do throws(JSONParseError) {
                return .success(try parser.parseDocument())
            } catch {
                return .failure(error)
            }
        }
    }
}

// ASCII bytes the grammar mentions.
private let quote = UInt8(ascii: "\"")
private let backslash = UInt8(ascii: "\\")
private let slash = UInt8(ascii: "/")
private let comma = UInt8(ascii: ",")
private let colon = UInt8(ascii: ":")
private let openBrace = UInt8(ascii: "{")
private let closeBrace = UInt8(ascii: "}")
private let openBracket = UInt8(ascii: "[")
private let closeBracket = UInt8(ascii: "]")
private let minus = UInt8(ascii: "-")
private let plus = UInt8(ascii: "+")
private let dot = UInt8(ascii: ".")
private let zero = UInt8(ascii: "0")
private let nine = UInt8(ascii: "9")

/// Exact powers of ten for the fast number path (10^22 is the largest exactly representable).
private let exactPowersOfTen: [Double] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
]

/// One open array or object. Object members are appended in place and the finished array is
/// moved out on close, so no member is copied or retained twice; array elements go to the
/// `ValueStack`.
private struct OpenContainer {
    var isObject: Bool
    /// Arrays only: where this array's elements start on the parser's `ValueStack`.
    var stackStart = 0
    var members: [(key: String, value: JSONValue)] = []
    /// The name read before the value now being parsed (objects only).
    var pendingKey: String = ""

    init(isObject: Bool) {
        self.isObject = isObject
    }
}

/// The elements of all open arrays, innermost last, in fixed-size segments.
///
/// Why not a growing `[JSONValue]` per array: its geometric growth makes malloc requests above
/// glibc's small-bin limit (~1 KB), and each such request first consolidates every freed small
/// chunk (such as the strings of the previous request), after which every string allocation takes
/// malloc's slow path — that cost more than the parsing itself. Segments stay below the limit; a
/// finished array is allocated once, at its exact size, and its elements are moved (not copied)
/// into it.
private struct ValueStack: ~Copyable {
    /// Values per segment: a segment's allocation stays at about 768 bytes.
    static var segmentCapacity: Int { max(1, 768 / MemoryLayout<JSONValue>.stride) }

    /// Each holds `segmentCapacity` values; only the first `count` values overall are initialised.
    private var segments: [UnsafeMutablePointer<JSONValue>] = []
    /// Values on the stack.
    private(set) var count = 0

    init() {}

    mutating func push(_ value: consuming JSONValue) {
        let segment = self.count / Self.segmentCapacity
        if segment == self.segments.count {
            self.segments.append(.allocate(capacity: Self.segmentCapacity))
        }
        (self.segments[segment] + self.count % Self.segmentCapacity).initialize(to: value)
        self.count += 1
    }

    /// Moves the values from `start` to the top into a new array of exactly that size.
    mutating func popArray(from start: Int) -> [JSONValue] {
        let total = self.count - start
        guard total > 0 else { return [] }
        let result = [JSONValue](unsafeUninitializedCapacity: total) { buffer, initializedCount in
            guard let destination = buffer.baseAddress else { return }
            var index = start
            while index < self.count {
                let offset = index % Self.segmentCapacity
                let run = min(Self.segmentCapacity - offset, self.count - index)
                (destination + (index - start)).moveInitialize(from: self.segments[index / Self.segmentCapacity] + offset, count: run)
                index += run
            }
            initializedCount = total
        }
        self.count = start
        return result
    }

    deinit {
        // Values left on the stack (a parse error) are released; the segments are freed either way.
        var index = 0
        while index < self.count {
            let offset = index % Self.segmentCapacity
            let run = min(Self.segmentCapacity - offset, self.count - index)
            (self.segments[index / Self.segmentCapacity] + offset).deinitialize(count: run)
            index += run
        }
        for segment in self.segments {
            segment.deallocate()
        }
    }
}

/// A strict, iterative RFC 8259 parser over a byte buffer.
private struct JSONParser {
    let input: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    /// Elements (array items and object members, at any depth) allowed; `elements` so far.
    var maxElements = Int.max
    var elements = 0
    var index = 0
    /// Reused for strings that contain escapes.
    var scratch: [UInt8] = []

    init(input: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.input = input
        self.maxDepth = maxDepth
    }

    func error(_ message: String, at offset: Int? = nil) -> JSONParseError {
        JSONParseError(message: message, offset: offset ?? self.index)
    }

    /// RFC 8259 §2: ws = *( %x20 / %x09 / %x0A / %x0D ).
    @inline(__always)
    mutating func skipWhitespace() {
        while self.index < self.input.count {
            switch self.input[self.index] {
            case 0x20, 0x09, 0x0A, 0x0D:
                self.index += 1
            default:
                return
            }
        }
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        // The innermost open container lives in a local (`current`), the ones around it in
        // `enclosing`: appending an element then touches one array, not an array inside an array.
        var enclosing: [OpenContainer] = []
        var current = OpenContainer(isObject: false)
        var depth = 0
        var values = ValueStack()

        parsing: while true {
            // Expecting the start of a value.
            self.skipWhitespace()
            guard self.index < self.input.count else {
                throw self.error(depth == 0 && self.index == 0 ? "empty input" : "unexpected end of input, expected a value")
            }
            var value: JSONValue
            switch self.input[self.index] {
            case openBrace, openBracket:
                let isObject = self.input[self.index] == openBrace
                guard depth < self.maxDepth else {
                    throw self.error("nesting deeper than \(self.maxDepth) levels")
                }
                self.index += 1
                self.skipWhitespace()
                if self.index < self.input.count, self.input[self.index] == (isObject ? closeBrace : closeBracket) {
                    self.index += 1
                    value = isObject ? .object(JSONObject()) : .array([])
                } else {
                    var container = OpenContainer(isObject: isObject)
                    if isObject {
                        container.pendingKey = try self.parseMemberName()
                    } else {
                        container.stackStart = values.count
                    }
                    if depth > 0 {
                        enclosing.append(current)
                    }
                    current = container
                    depth += 1
                    continue parsing
                }
            case quote:
                self.index += 1
                value = .string(try self.parseString())
            case UInt8(ascii: "t"):
                try self.expectLiteral("true")
                value = .bool(true)
            case UInt8(ascii: "f"):
                try self.expectLiteral("false")
                value = .bool(false)
            case UInt8(ascii: "n"):
                try self.expectLiteral("null")
                value = .null
            case minus, zero...nine:
                value = .number(try self.parseNumber())
            default:
                throw self.error("unexpected byte 0x\(String(self.input[self.index], radix: 16)), expected a value")
            }

            // A value is complete: attach it, closing as many containers as end here.
            while true {
                guard depth > 0 else {
                    self.skipWhitespace()
                    guard self.index == self.input.count else {
                        throw self.error("unexpected data after the JSON value")
                    }
                    return value
                }
                let isObject = current.isObject
                // Every element is counted before it is kept: a document of many tiny values is
                // refused before its tree outgrows what its byte count suggests.
                self.elements += 1
                guard self.elements <= self.maxElements else {
                    throw JSONParseError(message: "more than \(self.maxElements) elements", offset: self.index, tooManyElements: true)
                }
                // Move (not copy) the key and value in: saves a retain/release pair per element.
                if isObject {
                    var key = ""
                    swap(&key, &current.pendingKey)
                    current.members.append((key: consume key, value: consume value))
                } else {
                    values.push(consume value)
                }
                self.skipWhitespace()
                guard self.index < self.input.count else {
                    throw self.error(isObject ? "unterminated object" : "unterminated array")
                }
                let byte = self.input[self.index]
                self.index += 1
                if byte == comma {
                    if isObject {
                        self.skipWhitespace()
                        current.pendingKey = try self.parseMemberName()
                    } else if self.index < self.input.count, self.input[self.index] == quote {
                        // Arrays of strings are the bulk of our payloads: attach the next string
                        // without going through the general value dispatch.
                        self.index += 1
                        value = .string(try self.parseString())
                        continue
                    }
                    continue parsing
                }
                if isObject {
                    guard byte == closeBrace else {
                        throw self.error("expected ',' or '}' in object", at: self.index - 1)
                    }
                    var members: [(key: String, value: JSONValue)] = []
                    swap(&members, &current.members)
                    value = .object(JSONObject(consume members))
                } else {
                    guard byte == closeBracket else {
                        throw self.error("expected ',' or ']' in array", at: self.index - 1)
                    }
                    value = .array(values.popArray(from: current.stackStart))
                }
                depth -= 1
                if depth > 0 {
                    current = enclosing.removeLast()
                }
            }
        }
    }

    /// Parses `"name" ws ":"` with the index at the opening quote.
    mutating func parseMemberName() throws(JSONParseError) -> String {
        guard self.index < self.input.count, self.input[self.index] == quote else {
            throw self.error("expected a member name string")
        }
        self.index += 1
        let name = try self.parseString()
        self.skipWhitespace()
        guard self.index < self.input.count, self.input[self.index] == colon else {
            throw self.error("expected ':' after member name")
        }
        self.index += 1
        return name
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard self.input.count - self.index >= count else {
            throw self.error("invalid literal")
        }
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: count)
        for offset in 0..<count where self.input[self.index + offset] != expected[offset] {
            throw self.error("invalid literal", at: self.index + offset)
        }
        self.index += count
    }

    // MARK: Strings

    /// Parses string contents after the opening quote, through the closing quote.
    mutating func parseString() throws(JSONParseError) -> String {
        let start = self.index
        let count = self.input.count
        // Fast path: no escapes, so the String is built straight from the validated slice.
        guard let base = UnsafeRawPointer(self.input.baseAddress) else {
            throw self.error("unterminated string", at: start - 1)
        }
        // A local index (not `self.index`) lets the loop keep it in a register.
        var index = start
        while true {
            // Skip 8 plain ASCII bytes at a time; on a word holding a quote, backslash, control or
            // non-ASCII byte, jump straight to the first such byte (the mask's lowest set bit).
            var found = false
            while count - index >= 8 {
                let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                let mask = Self.attentionMask(word)
                if mask != 0 {
                    index += mask.trailingZeroBitCount >> 3
                    found = true
                    break
                }
                index += 8
            }
            if !found {
                // Fewer than 8 bytes left: find the next byte needing attention one at a time.
                while index < count {
                    let byte = self.input[index]
                    if byte == quote || byte == backslash || byte < 0x20 || byte >= 0x80 {
                        break
                    }
                    index += 1
                }
                guard index < count else {
                    self.index = index
                    throw self.error("unterminated string", at: start - 1)
                }
            }
            let byte = self.input[index]
            if byte == quote {
                self.index = index + 1
                return String(decoding: UnsafeBufferPointer(rebasing: self.input[start..<index]), as: UTF8.self)
            }
            self.index = index
            if byte == backslash {
                return try self.parseEscapedString(start: start)
            }
            if byte < 0x20 {
                throw self.error("unescaped control character in string")
            }
            // Non-ASCII: validate the whole sequence, then carry on scanning after it.
            try self.skipUTF8Sequence()
            index = self.index
        }
    }

    /// The bytes of `word` that are a quote, a backslash, below 0x20 or at least 0x80 have their
    /// high bit set in the result — exactly for the lowest such byte (SWAR tests:
    /// `(x - 0x01…) & ~x & 0x80…` flags bytes that are zero; a borrow can only add false flags
    /// above a true one, so on little-endian loads the lowest flag is the first byte in memory).
    @inline(__always)
    static func attentionMask(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let quotes = word ^ (ones &* UInt64(quote))
        let backslashes = word ^ (ones &* UInt64(backslash))
        let hasQuote = (quotes &- ones) & ~quotes
        let hasBackslash = (backslashes &- ones) & ~backslashes
        // Below 0x20 wraps to a set high bit; bytes ≥ 0x80 (set already) need attention anyway.
        let hasControlOrHigh = (word &- ones &* 0x20) | word
        return (hasQuote | hasBackslash | hasControlOrHigh) & highs
    }

    /// Slow path: the run before `self.index` is validated; decode escapes into `scratch`.
    mutating func parseEscapedString(start: Int) throws(JSONParseError) -> String {
        self.scratch.removeAll(keepingCapacity: true)
        self.scratch.append(contentsOf: UnsafeBufferPointer(rebasing: self.input[start..<self.index]))
        var runStart = self.index
        while self.index < self.input.count {
            let byte = self.input[self.index]
            if byte == quote {
                self.scratch.append(contentsOf: UnsafeBufferPointer(rebasing: self.input[runStart..<self.index]))
                self.index += 1
                return String(decoding: self.scratch, as: UTF8.self)
            }
            if byte == backslash {
                self.scratch.append(contentsOf: UnsafeBufferPointer(rebasing: self.input[runStart..<self.index]))
                try self.decodeEscape()
                runStart = self.index
                continue
            }
            if byte < 0x20 {
                throw self.error("unescaped control character in string")
            }
            if byte < 0x80 {
                self.index += 1
            } else {
                try self.skipUTF8Sequence()
            }
        }
        throw self.error("unterminated string", at: start - 1)
    }

    /// Decodes one escape at the backslash (RFC 8259 §7) and appends its UTF-8 to `scratch`.
    mutating func decodeEscape() throws(JSONParseError) {
        let escapeStart = self.index
        guard self.index + 1 < self.input.count else {
            throw self.error("unterminated string")
        }
        let code = self.input[self.index + 1]
        self.index += 2
        switch code {
        case quote: self.scratch.append(quote)
        case backslash: self.scratch.append(backslash)
        case slash: self.scratch.append(slash)
        case UInt8(ascii: "b"): self.scratch.append(0x08)
        case UInt8(ascii: "f"): self.scratch.append(0x0C)
        case UInt8(ascii: "n"): self.scratch.append(0x0A)
        case UInt8(ascii: "r"): self.scratch.append(0x0D)
        case UInt8(ascii: "t"): self.scratch.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try self.readHex4()
            if scalar >= 0xD800 && scalar <= 0xDBFF {
                // A high surrogate must be followed by an escaped low surrogate.
                guard self.index + 1 < self.input.count,
                      self.input[self.index] == backslash,
                      self.input[self.index + 1] == UInt8(ascii: "u")
                else {
                    throw self.error("unpaired surrogate escape", at: escapeStart)
                }
                self.index += 2
                let low = try self.readHex4()
                guard low >= 0xDC00 && low <= 0xDFFF else {
                    throw self.error("unpaired surrogate escape", at: escapeStart)
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
                throw self.error("unpaired surrogate escape", at: escapeStart)
            }
            self.appendUTF8(scalar)
        default:
            throw self.error("invalid escape", at: escapeStart)
        }
    }

    mutating func readHex4() throws(JSONParseError) -> UInt32 {
        guard self.input.count - self.index >= 4 else {
            throw self.error("incomplete \\u escape")
        }
        var result: UInt32 = 0
        for _ in 0..<4 {
            let byte = self.input[self.index]
            let digit: UInt8
            switch byte {
            case zero...nine: digit = byte - zero
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw self.error("invalid hex digit in \\u escape")
            }
            result = result << 4 | UInt32(digit)
            self.index += 1
        }
        return result
    }

    mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case 0..<0x80:
            self.scratch.append(UInt8(scalar))
        case 0x80..<0x800:
            self.scratch.append(UInt8(0xC0 | (scalar >> 6)))
            self.scratch.append(UInt8(0x80 | (scalar & 0x3F)))
        case 0x800..<0x10000:
            self.scratch.append(UInt8(0xE0 | (scalar >> 12)))
            self.scratch.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            self.scratch.append(UInt8(0x80 | (scalar & 0x3F)))
        default:
            self.scratch.append(UInt8(0xF0 | (scalar >> 18)))
            self.scratch.append(UInt8(0x80 | ((scalar >> 12) & 0x3F)))
            self.scratch.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            self.scratch.append(UInt8(0x80 | (scalar & 0x3F)))
        }
    }

    /// Validates one multi-byte UTF-8 sequence at `index` (lead byte ≥ 0x80) per Unicode
    /// Table 3-7, which rules out overlong forms, surrogates and code points above U+10FFFF.
    @inline(__always)
    mutating func skipUTF8Sequence() throws(JSONParseError) {
        let lead = self.input[self.index]
        let length: Int
        var secondLow: UInt8 = 0x80
        var secondHigh: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF:
            length = 2
        case 0xE0:
            length = 3; secondLow = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF:
            length = 3
        case 0xED:
            length = 3; secondHigh = 0x9F
        case 0xF0:
            length = 4; secondLow = 0x90
        case 0xF1...0xF3:
            length = 4
        case 0xF4:
            length = 4; secondHigh = 0x8F
        default:
            throw self.error("invalid UTF-8 in string")
        }
        guard self.input.count - self.index >= length else {
            throw self.error("truncated UTF-8 sequence in string")
        }
        let second = self.input[self.index + 1]
        guard second >= secondLow && second <= secondHigh else {
            throw self.error("invalid UTF-8 in string")
        }
        var offset = 2
        while offset < length {
            guard self.input[self.index + offset] & 0xC0 == 0x80 else {
                throw self.error("invalid UTF-8 in string")
            }
            offset += 1
        }
        self.index += length
    }

    // MARK: Numbers

    /// RFC 8259 §6: number = [ minus ] int [ frac ] [ exp ]; int = zero / ( digit1-9 *DIGIT ).
    mutating func parseNumber() throws(JSONParseError) -> Double {
        let start = self.index
        let negative = self.input[self.index] == minus
        if negative {
            self.index += 1
        }
        var mantissa: UInt64 = 0
        var significantDigits = 0
        var fractionDigits = 0

        guard self.index < self.input.count, self.isDigit(self.input[self.index]) else {
            throw self.error("expected a digit in number")
        }
        if self.input[self.index] == zero {
            self.index += 1
            if self.index < self.input.count, self.isDigit(self.input[self.index]) {
                throw self.error("leading zero in number")
            }
        } else {
            while self.index < self.input.count, self.isDigit(self.input[self.index]) {
                self.accumulate(self.input[self.index], into: &mantissa, significantDigits: &significantDigits)
                self.index += 1
            }
        }
        if self.index < self.input.count, self.input[self.index] == dot {
            self.index += 1
            guard self.index < self.input.count, self.isDigit(self.input[self.index]) else {
                throw self.error("expected a digit after the decimal point")
            }
            while self.index < self.input.count, self.isDigit(self.input[self.index]) {
                self.accumulate(self.input[self.index], into: &mantissa, significantDigits: &significantDigits)
                fractionDigits += 1
                self.index += 1
            }
        }
        var exponent = 0
        if self.index < self.input.count, self.input[self.index] | 0x20 == UInt8(ascii: "e") {
            self.index += 1
            var exponentNegative = false
            if self.index < self.input.count, self.input[self.index] == minus || self.input[self.index] == plus {
                exponentNegative = self.input[self.index] == minus
                self.index += 1
            }
            guard self.index < self.input.count, self.isDigit(self.input[self.index]) else {
                throw self.error("expected a digit in exponent")
            }
            while self.index < self.input.count, self.isDigit(self.input[self.index]) {
                // Saturate: anything this large is ±0 or out of range anyway, and the
                // slow path below decides which.
                if exponent < 1_000_000 {
                    exponent = exponent * 10 + Int(self.input[self.index] - zero)
                }
                self.index += 1
            }
            if exponentNegative {
                exponent = -exponent
            }
        }

        // Clinger's fast path: a mantissa of at most 15 digits and a power of ten up to 10^22
        // are both exact doubles, so one multiplication or division rounds correctly.
        if significantDigits <= 15 {
            let scale = exponent - fractionDigits
            var result = Double(mantissa)
            if scale >= 0 && scale <= 22 {
                result *= exactPowersOfTen[scale]
                return negative ? -result : result
            } else if scale < 0 && scale >= -22 {
                result /= exactPowersOfTen[-scale]
                return negative ? -result : result
            } else if mantissa == 0 {
                return negative ? -0.0 : 0.0
            }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: self.input[start..<self.index]), as: UTF8.self)
        guard let result = Double(text), result.isFinite else {
            throw self.error("number out of range", at: start)
        }
        return result
    }

    @inline(__always)
    func isDigit(_ byte: UInt8) -> Bool {
        byte &- zero < 10
    }

    /// Adds a digit to the mantissa, counting only digits after leading zeros; past 19 digits
    /// the mantissa stops being exact and only the count matters (it sends us to the slow path).
    @inline(__always)
    func accumulate(_ byte: UInt8, into mantissa: inout UInt64, significantDigits: inout Int) {
        if significantDigits < 19 {
            mantissa = mantissa &* 10 &+ UInt64(byte - zero)
            if mantissa != 0 {
                significantDigits += 1
            }
        } else {
            significantDigits += 1
        }
    }
}
