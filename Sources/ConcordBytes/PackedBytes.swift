/// Values written one after another into one byte buffer, read back in the same order: how a large
/// batch (a manifest, the mapping rows a write hands to the index) is held without a heap string
/// per field. A string is its UTF-8 length (4 bytes, little-endian) and its bytes.
public struct PackedWriter: Sendable {
    public var bytes: [UInt8] = []

    public init() {}

    @inlinable public var count: Int { self.bytes.count }

    @inlinable public mutating func byte(_ b: UInt8) { self.bytes.append(b) }

    @inlinable public mutating func length(_ n: Int) {
        let v = UInt32(truncatingIfNeeded: n)
        self.bytes.append(UInt8(truncatingIfNeeded: v))
        self.bytes.append(UInt8(truncatingIfNeeded: v >> 8))
        self.bytes.append(UInt8(truncatingIfNeeded: v >> 16))
        self.bytes.append(UInt8(truncatingIfNeeded: v >> 24))
    }

    @inlinable public mutating func int64(_ v: Int64) {
        for shift in stride(from: 0, to: 64, by: 8) { self.bytes.append(UInt8(truncatingIfNeeded: v >> Int64(shift))) }
    }

    @inlinable public mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            self.length(utf8.count)
            self.bytes.append(contentsOf: utf8)
        }
    }
}

/// Reads what a `PackedWriter` wrote, from `at` on.
public struct PackedReader {
    public let bytes: UnsafeBufferPointer<UInt8>
    public var at: Int

    @inlinable public init(bytes: UnsafeBufferPointer<UInt8>, at: Int) {
        self.bytes = bytes
        self.at = at
    }

    @inlinable public mutating func byte() -> UInt8 {
        defer { self.at += 1 }
        return self.bytes[self.at]
    }

    @inlinable public mutating func length() -> Int {
        let b = self.bytes, i = self.at
        self.at += 4
        return Int(b[i]) | Int(b[i + 1]) << 8 | Int(b[i + 2]) << 16 | Int(b[i + 3]) << 24
    }

    @inlinable public mutating func int64() -> Int64 {
        var v: UInt64 = 0
        for k in 0..<8 { v |= UInt64(self.bytes[self.at + k]) << UInt64(8 * k) }
        self.at += 8
        return Int64(bitPattern: v)
    }

    /// The next string's bytes, without copying them.
    @inlinable public mutating func utf8() -> UnsafeBufferPointer<UInt8> {
        let n = self.length()
        defer { self.at += n }
        return UnsafeBufferPointer(rebasing: self.bytes[self.at..<self.at + n])
    }

    @inlinable public mutating func string() -> String { String(decoding: self.utf8(), as: UTF8.self) }
}
