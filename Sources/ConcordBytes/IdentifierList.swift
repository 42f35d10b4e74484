/// Many strings in one byte buffer: their UTF-8 bytes, and a span of the buffer per string — the
/// one such type of the server. A change's lists of identifiers (`ChangeLists`: a first upload's
/// list a million; as `[String]` each was a 16-byte slot and a heap string of ~80 bytes, here it is
/// its bytes and 8 bytes of span) and a mapping request's batch (`IdentifierBatch`, whose buffer
/// can be the request body itself, the spans pointing between the JSON's quotes).
///
/// Equal when they hold the same strings byte for byte, in the same order (whatever lies between
/// the spans).
public struct IdentifierList: RandomAccessCollection, ExpressibleByArrayLiteral, Hashable, Sendable {
    /// Where one string lies in `bytes`.
    public struct Span: Sendable, Hashable {
        public var start: UInt32
        public var length: UInt32
        @inlinable public init(start: UInt32, length: UInt32) {
            self.start = start
            self.length = length
        }
    }

    /// The buffer the strings lie in.
    public private(set) var bytes: [UInt8] = []
    /// String `i` is `bytes[spans[i].start ..< spans[i].start + spans[i].length]`.
    public private(set) var spans: [Span] = []

    public init() {}

    /// Strings at `spans` of `bytes`; nil unless every span lies in `bytes`.
    public init?(bytes: [UInt8], spans: [Span]) {
        for span in spans where UInt64(span.start) + UInt64(span.length) > UInt64(bytes.count) { return nil }
        self.bytes = bytes
        self.spans = spans
    }

    public init(arrayLiteral elements: String...) {
        self.init(elements)
    }

    public init<S: Sequence>(_ elements: S) where S.Element == String {
        for element in elements { self.append(element) }
    }

    @inlinable public var startIndex: Int { 0 }
    @inlinable public var endIndex: Int { self.spans.count }
    @inlinable public var count: Int { self.spans.count }

    public subscript(i: Int) -> String {
        self.withUTF8(at: i) { String(decoding: $0, as: UTF8.self) }
    }

    /// `body` with string `i`'s UTF-8 bytes, without making a string of them.
    @inlinable
    public func withUTF8<T>(at i: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T {
        let span = self.spans[i]
        return try self.bytes.withUnsafeBufferPointer { b in
            try body(UnsafeBufferPointer(rebasing: b[Int(span.start)..<Int(span.start) + Int(span.length)]))
        }
    }

    /// The UTF-8 length of string `i`.
    @inlinable
    public func utf8Count(at i: Int) -> Int { Int(self.spans[i].length) }

    public mutating func append(_ s: String) {
        var s = s
        s.withUTF8 { self.append(utf8: $0) }
    }

    /// Appends a string given as its UTF-8 bytes (a decoder's, without a string in between).
    public mutating func append(utf8: UnsafeBufferPointer<UInt8>) {
        let start = self.bytes.count
        self.bytes.append(contentsOf: utf8)
        self.spans.append(Span(start: UInt32(start), length: UInt32(utf8.count)))
    }

    public mutating func append<S: Sequence>(contentsOf elements: S) where S.Element == String {
        for element in elements { self.append(element) }
    }

    /// Reserves room for `count` strings of `bytes` bytes in all.
    public mutating func reserveCapacity(count: Int, bytes: Int) {
        self.bytes.reserveCapacity(bytes)
        self.spans.reserveCapacity(count)
    }

    public static func == (a: IdentifierList, b: IdentifierList) -> Bool {
        guard a.count == b.count else { return false }
        return a.bytes.withUnsafeBufferPointer { x in
            b.bytes.withUnsafeBufferPointer { y in
                zip(a.spans, b.spans).allSatisfy { s, t in
                    s.length == t.length
                        && UnsafeBufferPointer(rebasing: x[Int(s.start)..<Int(s.start) + Int(s.length)])
                            .elementsEqual(UnsafeBufferPointer(rebasing: y[Int(t.start)..<Int(t.start) + Int(t.length)]))
                }
            }
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.count)
        for i in self.indices {
            self.withUTF8(at: i) { b in
                hasher.combine(b.count)
                hasher.combine(bytes: UnsafeRawBufferPointer(b))
            }
        }
    }
}
