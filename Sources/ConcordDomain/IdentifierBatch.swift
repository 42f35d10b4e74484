import ConcordBytes

/// A batch of identifiers as UTF-8 bytes in one buffer, each a span of it (an `IdentifierList`):
/// what a mapping request carries, without a `String` (an allocation, reference counting) per
/// identifier. Identifier `i` is `bytes[spans[i].start ..< spans[i].start + spans[i].length]`.
///
/// A request body can be the buffer itself (`init?(bytes:spans:)`): the identifiers' bytes are then
/// read where the request's JSON holds them.
public struct IdentifierBatch: Sendable {
    public typealias Span = IdentifierList.Span

    /// The identifiers: their buffer and spans.
    public let list: IdentifierList
    @inlinable public var bytes: [UInt8] { self.list.bytes }
    @inlinable public var spans: [Span] { self.list.spans }
    /// Every identifier is printable ASCII other than `"` and `\`: its JSON string is its bytes
    /// between quotes, and no byte of it is a control character.
    public let isPlainASCII: Bool

    public init(_ strings: [String]) {
        var list = IdentifierList()
        list.reserveCapacity(count: strings.count, bytes: strings.reduce(0) { $0 + $1.utf8.count })
        list.append(contentsOf: strings)
        self.list = list
        self.isPlainASCII = Self.allPlainASCII(list.bytes, list.spans)
    }

    /// Identifiers found in `bytes` (a request body, say); nil unless every span lies in `bytes`
    /// and is plain ASCII (see `isPlainASCII`), which makes the bytes valid UTF-8 as they are.
    public init?(bytes: [UInt8], spans: [Span]) {
        for span in spans where UInt64(span.start) + UInt64(span.length) > UInt64(bytes.count) { return nil }
        guard Self.allPlainASCII(bytes, spans) else { return nil }
        self.init(bytes: bytes, plainASCIISpans: spans)
    }

    /// Identifiers in `bytes` that the caller has already found plain ASCII (see `isPlainASCII`;
    /// `PlainStringArrayScanner`'s strings are, by its definition): only the bounds are checked.
    public init?(bytes: [UInt8], plainASCIISpans spans: [Span]) {
        guard let list = IdentifierList(bytes: bytes, spans: spans) else { return nil }
        assert(Self.allPlainASCII(bytes, spans), "spans that are not plain ASCII")
        self.list = list
        self.isPlainASCII = true
    }

    @inlinable public var count: Int { self.list.count }

    /// Identifier `i` as a string (for the paths that go to storage).
    public subscript(i: Int) -> String { self.list[i] }

    public var strings: [String] { (0..<self.count).map { self[$0] } }

    /// Identifier `i`'s bytes, valid inside `body`.
    @inlinable
    public func withIdentifier<T>(_ i: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T {
        try self.list.withUTF8(at: i, body)
    }

    /// The first identifier that is not a valid local identifier, nil when all are.
    public func firstInvalidLocalIdentifier() -> Int? {
        if self.isPlainASCII {
            // Printable ASCII holds no control character: only the length can be wrong.
            return self.spans.firstIndex { $0.length == 0 || $0.length > 255 }
        }
        return (0..<self.count).first { !Identifiers.isValidLocalIdentifier(self[$0]) }
    }

    private static func allPlainASCII(_ bytes: [UInt8], _ spans: [Span]) -> Bool {
        bytes.withUnsafeBufferPointer { b in
            spans.allSatisfy { span in
                Self.isPlainASCII(UnsafeBufferPointer(rebasing: b[Int(span.start)..<Int(span.start) + Int(span.length)]))
            }
        }
    }

    /// Whether every byte is in 0x20…0x7E and none is `"` or `\`: 16 bytes a step
    /// (`ByteLanes.notPlainASCII`), one test at the end.
    public static func isPlainASCII(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        let high = ByteLanes.high
        var i = 0
        var bad: UInt64 = 0
        if let base = b.baseAddress {
            let raw = UnsafeRawPointer(base)
            while i + 16 <= b.count {
                bad |= ByteLanes.notPlainASCII(raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) | ByteLanes.notPlainASCII(raw.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self))
                i += 16
            }
            if i + 8 <= b.count {
                bad |= ByteLanes.notPlainASCII(raw.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                i += 8
            }
        }
        if bad & high != 0 { return false }
        while i < b.count {
            let c = b[i]
            if c < 0x20 || c > 0x7E || c == 0x22 || c == 0x5C { return false }
            i += 1
        }
        return true
    }
}
