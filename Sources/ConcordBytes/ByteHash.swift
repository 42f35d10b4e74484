/// The hash of the server's byte-keyed tables (the mapping index's device tables, a manifest's
/// identifier set).
public enum ByteHash {
    /// A fast multiply-mix hash of the bytes, 8 at a time. Not keyed: fit for tables whose keys
    /// come from one account's own devices (which can only slow their own account down).
    @inlinable
    public static func hash(_ b: UnsafeRawBufferPointer) -> UInt32 {
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(b.count)
        var i = 0
        while i + 8 <= b.count {
            let w = b.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            h = (h ^ w) &* 0xFF51_AFD7_ED55_8CCD
            h ^= h >> 32
            i += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while i < b.count {
            tail |= UInt64(b[i]) << shift
            shift += 8
            i += 1
        }
        h = (h ^ tail) &* 0xC4CE_B9FE_1A85_EC53
        h ^= h >> 29
        return UInt32(truncatingIfNeeded: h)
    }
}
