/// A position in a JSON text's bytes, for the scanners that read a body of a known shape in place
/// (`PlainStringArrayScanner`, `ObjectArraysScanner`): skipping JSON whitespace and taking one
/// expected byte.
/// Usable from inlinable code: `PlainStringArrayScanner.scan` is specialized in its callers.
@usableFromInline
struct ByteScanner {
    @usableFromInline let bytes: UnsafeBufferPointer<UInt8>
    @usableFromInline var index = 0

    @inlinable
    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    @inlinable var atEnd: Bool { self.index >= self.bytes.count }

    /// Past space, tab, CR and LF (JSON's whitespace, RFC 8259 §2).
    @inlinable @inline(__always)
    mutating func skipSpace() {
        while self.index < self.bytes.count {
            switch self.bytes[self.index] {
            case 0x20, 0x0A, 0x0D, 0x09: self.index += 1
            default: return
            }
        }
    }

    /// After whitespace, `c`: taken (true), or nothing taken (false).
    @inlinable @inline(__always)
    mutating func take(_ c: UInt8) -> Bool {
        self.skipSpace()
        guard self.index < self.bytes.count, self.bytes[self.index] == c else { return false }
        self.index += 1
        return true
    }
}
