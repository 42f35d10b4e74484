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
                // 8 bytes at a time while none is a quote, a backslash, a control character or
                // outside ASCII (see `JSONWriter.needsEscape` for the trick); bytes one by one after.
                let ones: UInt64 = 0x0101_0101_0101_0101
                let raw = UnsafeRawPointer(b.baseAddress!)
                while n - i >= 8 {
                    let w = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                    let quote = w ^ (ones &* 0x22), backslash = w ^ (ones &* 0x5C), del = w ^ (ones &* 0x7F)
                    let stop = (w &- ones &* 0x20) & ~w | w | (quote &- ones) & ~quote | (backslash &- ones) & ~backslash | (del &- ones) & ~del
                    if stop & 0x8080_8080_8080_8080 != 0 { break }
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

    private static func memcmpEqual(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        for k in 0..<count where a[k] != b[k] { return false }
        return true
    }
}
