/// Finds the strings of a body shaped exactly `{"<member>": ["…", "…", …]}` in place, without
/// building a value tree: the fast path of the mapping batches, whose bodies are a thousand
/// identifiers and nothing else.
///
/// Only the simplest form is taken: one member with that name, an array of strings whose bytes are
/// all printable ASCII other than `"` and `\` (so each string's value is its bytes as they stand,
/// with no escapes to decode and no UTF-8 to validate), JSON whitespace anywhere between tokens.
/// Anything else, well-formed or not, gives nil: the caller then parses the body with `JSONValue`,
/// which decides what it means and words any error exactly as for every other body.
public enum PlainStringArrayScanner {
    /// Each string's position (`start`, `length` in bytes, quotes excluded) through `span`, in order;
    /// nil when the body is not of the simple form above, or holds more than `maxCount` strings.
    ///
    /// Inlinable so that it is specialized for the caller's `Span`: unspecialized, every span was
    /// appended through the generic array's witnesses (a tenth of the scan's cost).
    @inlinable
    public static func scan<Span>(
        _ body: [UInt8], member: StaticString, maxCount: Int, span: (_ start: Int, _ length: Int) -> Span
    ) -> [Span]? {
        body.withUnsafeBufferPointer { b -> [Span]? in
            var s = ByteScanner(b)
            let n = b.count
            /// A plain string at the scanner's position (after its opening quote): its start and length.
            @inline(__always) func plainString() -> (Int, Int)? {
                let start = s.index
                var i = start
                defer { s.index = i }
                // 16 bytes at a time (two words, one branch), then 8, while none is a quote, a
                // backslash, a control character or outside printable ASCII. `stop` may flag a byte
                // after the first real stop (a borrow or carry from it), never before it nor miss
                // one: the lowest flagged byte is the first stop. A quote there ends the string;
                // anything else makes it not plain. Bytes one by one only in the body's last 8.
                let raw = UnsafeRawPointer(b.baseAddress!)
                @inline(__always) func end(at at: Int) -> (Int, Int)? {
                    guard b[at] == UInt8(ascii: "\"") else { return nil }
                    i = at + 1
                    return (start, at - start)
                }
                while n - i >= 16 {
                    let first = Self.stop(raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) & Self.high
                    let second = Self.stop(raw.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self)) & Self.high
                    if first | second != 0 {
                        return first != 0 ? end(at: i + first.trailingZeroBitCount >> 3) : end(at: i + 8 + second.trailingZeroBitCount >> 3)
                    }
                    i += 16
                }
                while n - i >= 8 {
                    let stops = Self.stop(raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) & Self.high
                    if stops != 0 { return end(at: i + stops.trailingZeroBitCount >> 3) }
                    i += 8
                }
                while i < n {
                    let c = b[i]
                    if c == UInt8(ascii: "\"") {
                        i += 1
                        return (start, i - 1 - start)
                    }
                    if c < 0x20 || c > 0x7E || c == UInt8(ascii: "\\") { return nil }
                    i += 1
                }
                return nil
            }
            guard s.take(UInt8(ascii: "{")), s.take(UInt8(ascii: "\"")), let (keyStart, keyLength) = plainString(),
                  keyLength == member.utf8CodeUnitCount,
                  keyLength == 0 || memcmpEqual(b.baseAddress! + keyStart, member.utf8Start, keyLength),
                  s.take(UInt8(ascii: ":")), s.take(UInt8(ascii: "["))
            else { return nil }
            var spans: [Span] = []
            spans.reserveCapacity(min(maxCount, n / 3))
            if !s.take(UInt8(ascii: "]")) {
                repeat {
                    guard spans.count < maxCount, s.take(UInt8(ascii: "\"")), let (start, length) = plainString() else { return nil }
                    spans.append(span(start, length))
                } while s.take(UInt8(ascii: ","))
                guard s.take(UInt8(ascii: "]")) else { return nil }
            }
            guard s.take(UInt8(ascii: "}")) else { return nil }
            s.skipSpace()
            return s.atEnd ? spans : nil
        }
    }

    /// The high bit set in each byte of `w` that ends a plain string's fast scan: below 0x20
    /// (`w - 0x20` borrows), 0x7F and above (`w + 1` reaches 0x80, or the byte has it already),
    /// a quote or a backslash (`x - 1` borrows where `x`, the byte xor the character, is zero).
    /// Borrows and carries run only out of a byte flagged already.
    @inlinable @inline(__always)
    static func stop(_ w: UInt64) -> UInt64 {
        let quote = w ^ (Self.ones &* 0x22), backslash = w ^ (Self.ones &* 0x5C)
        return (w &- Self.ones &* 0x20) | (w &+ Self.ones) | w | (quote &- Self.ones) | (backslash &- Self.ones)
    }

    @inlinable static var ones: UInt64 { 0x0101_0101_0101_0101 }
    @inlinable static var high: UInt64 { 0x8080_8080_8080_8080 }

    @inlinable
    static func memcmpEqual(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        for k in 0..<count where a[k] != b[k] { return false }
        return true
    }
}
