/// Unsigned LEB128 varints: 7 bits a byte, least significant first, the high bit set on every
/// byte but the last. The lengths inside SQLite's binary history details (docs/formats.md).
public enum Varint {
    @inlinable
    public static func append(_ value: UInt64, to out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    /// The varint at `i` (moved past it); nil when it runs past the end or past 63 bits.
    @inlinable
    public static func read(_ bytes: UnsafeRawBufferPointer, _ i: inout Int) -> Int? {
        var value = 0, shift = 0
        while true {
            guard i < bytes.count, shift < 63 else { return nil }
            let b = bytes[i]
            i += 1
            value |= Int(b & 0x7F) << shift
            if b < 0x80 { return value }
            shift += 7
        }
    }
}
