/// A batch's answers in one byte buffer: per item either a run of `bytes` (an identifier found,
/// its UTF-8 bytes) or an `Other` (why there is none: an error, a state) — the one such type of
/// the server. Both mapping directions answer with it, from storage or the mapping index, and the
/// routes copy the runs straight into the response: one buffer for the batch, no string or
/// allocation per answer.
///
/// Bytes appended for an answer later replaced stay in the buffer, unreferenced.
public struct AnswerBuffer<Other>: RandomAccessCollection {
    /// One item's answer.
    public enum Answer {
        /// Its bytes are `bytes[range]` of the buffer.
        case bytes(Range<Int>)
        case other(Other)
    }

    @usableFromInline var answers: [Answer]
    @usableFromInline var buffer: [UInt8]
    /// The bytes the `.bytes` answers point into.
    @inlinable public var bytes: [UInt8] { self.buffer }
    /// Whether the writer of every answer's bytes vouched that they are plain ASCII
    /// (`vouchPlainASCII`): bytes set or appended since make it false.
    @usableFromInline var plainASCIIVouched = false
    @inlinable public var bytesArePlainASCII: Bool { self.plainASCIIVouched }

    /// The answers' bytes are plain ASCII (0x20–0x7E, no `"` nor `\`): the writer of the last
    /// `write(capacity:_:)`, having tested what it wrote, says so.
    @inlinable public mutating func vouchPlainASCII() { self.plainASCIIVouched = true }

    @inlinable public init() {
        self.answers = []
        self.buffer = []
    }

    /// `count` answers, each `other` (to be replaced by `set`).
    @inlinable public init(repeating other: Other, count: Int) {
        self.answers = [Answer](repeating: .other(other), count: count)
        self.buffer = []
    }

    /// One answer per element, each an `.other`.
    @inlinable public init(others: [Other]) {
        self.answers = others.map { .other($0) }
        self.buffer = []
    }

    @inlinable public var startIndex: Int { 0 }
    @inlinable public var endIndex: Int { self.answers.count }
    @inlinable public var count: Int { self.answers.count }

    @inlinable public subscript(i: Int) -> Answer { self.answers[i] }

    /// Answer `i`'s bytes (nil for an `.other`), without copying them.
    @inlinable
    public func withBytes<T>(at i: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T? {
        guard case .bytes(let range) = self.answers[i] else { return nil }
        return try self.buffer.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[range])) }
    }

    /// The answers as a plain buffer, valid inside `body` (a pass over a batch without an array
    /// access per item).
    @inlinable
    public func withAnswers<T>(_ body: (UnsafeBufferPointer<Answer>) throws -> T) rethrows -> T {
        try self.answers.withUnsafeBufferPointer(body)
    }

    /// Reserves room for `count` answers of `bytes` bytes in all.
    @inlinable
    public mutating func reserveCapacity(_ count: Int, bytes: Int = 0) {
        self.answers.reserveCapacity(count)
        self.buffer.reserveCapacity(bytes)
    }

    /// Appends an answer of these bytes (a string's `utf8`, a buffer).
    @inlinable
    public mutating func append<C: Collection>(bytes: C) where C.Element == UInt8 {
        self.answers.append(.bytes(self.appended(bytes)))
    }

    @inlinable
    public mutating func append(_ other: Other) {
        self.answers.append(.other(other))
    }

    /// Answer `i` becomes these bytes.
    @inlinable
    public mutating func set<C: Collection>(_ i: Int, bytes: C) where C.Element == UInt8 {
        self.answers[i] = .bytes(self.appended(bytes))
    }

    /// Answer `i` becomes `other`.
    @inlinable
    public mutating func set(_ i: Int, _ other: Other) {
        self.answers[i] = .other(other)
    }

    @inlinable
    mutating func appended<C: Collection>(_ bytes: C) -> Range<Int> where C.Element == UInt8 {
        self.plainASCIIVouched = false
        let start = self.buffer.count
        self.buffer.append(contentsOf: bytes)
        return start..<self.buffer.count
    }

    /// The same answers with each `Other` transformed; the bytes are shared, not copied.
    @inlinable
    public func mapOthers<T>(_ transform: (Other) throws -> T) rethrows -> AnswerBuffer<T> {
        var result = AnswerBuffer<T>()
        result.buffer = self.buffer
        result.plainASCIIVouched = self.plainASCIIVouched
        result.answers = try self.answers.map { answer in
            switch answer {
            case .bytes(let range): .bytes(range)
            case .other(let other): .other(try transform(other))
            }
        }
        return result
    }

    /// Writes many answers' bytes straight into the buffer, whose room grows by `capacity` bytes
    /// once (counted beforehand: a batch's answers in one allocation, no copy through a string).
    /// `body` sets answers through the writer; what it leaves of the room is not kept.
    @inlinable
    public mutating func write(capacity: Int, _ body: (inout Writer) throws -> Void) rethrows {
        self.plainASCIIVouched = false
        let start = self.buffer.count
        // The answers move into the writer and back: no copy of the array on the way.
        var answers: [Answer] = []
        swap(&answers, &self.answers)
        defer { swap(&answers, &self.answers) }
        // At least a byte, so that the writer always has an address to give (an empty answer's).
        self.buffer = try [UInt8](unsafeUninitializedCapacity: start + Swift.max(capacity, 1)) { out, written in
            if start > 0 {
                self.buffer.withUnsafeBufferPointer { old in _ = out.initialize(fromContentsOf: old) }
            }
            var writer = Writer(out: out.baseAddress!, at: start, end: start + capacity, answers: answers)
            answers = []
            defer {
                written = writer.at
                answers = writer.answers
            }
            try body(&writer)
        }
    }

    /// Sets answers to bytes written in place: good only inside the `body` of `write(capacity:_:)`
    /// (it points into the buffer being written).
    public struct Writer {
        @usableFromInline let out: UnsafeMutablePointer<UInt8>
        /// Where the next answer's bytes go.
        @usableFromInline var at: Int
        /// The end of the room.
        @usableFromInline let end: Int
        @usableFromInline var answers: [Answer]

        @inlinable init(out: UnsafeMutablePointer<UInt8>, at: Int, end: Int, answers: [Answer]) {
            self.out = out
            self.at = at
            self.end = end
            self.answers = answers
        }

        /// The bytes of the room not written yet.
        @inlinable public var room: Int { self.end - self.at }

        /// Answer `i` becomes the bytes `write` puts at the pointer it is given (at most `room`
        /// bytes), their count its result.
        @inlinable
        public mutating func set(_ i: Int, _ write: (UnsafeMutablePointer<UInt8>) throws -> Int) rethrows {
            let count = try write(self.out + self.at)
            precondition(count >= 0 && count <= self.end - self.at, "an answer wrote past the room counted for it")
            self.answers[i] = .bytes(self.at..<self.at + count)
            self.at += count
        }

        /// Answer `i` becomes `other`.
        @inlinable
        public mutating func set(_ i: Int, _ other: Other) {
            self.answers[i] = .other(other)
        }
    }
}

extension AnswerBuffer.Answer: Equatable where Other: Equatable {
    // Written out and inlinable: the derived one is not, and callers compare every item of a batch
    // (through an unspecialized generic call per item, measured slower on the mapping routes).
    @inlinable
    public static func == (a: Self, b: Self) -> Bool {
        switch (a, b) {
        case (.bytes(let x), .bytes(let y)): x == y
        case (.other(let x), .other(let y)): x == y
        default: false
        }
    }
}
extension AnswerBuffer.Answer: Sendable where Other: Sendable {}
extension AnswerBuffer: Sendable where Other: Sendable {}
