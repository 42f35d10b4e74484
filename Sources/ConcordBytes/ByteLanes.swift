/// The 8 bytes of a word tested at once (SWAR), for validating identifiers without a branch per byte.
public enum ByteLanes {
    @inlinable public static var ones: UInt64 { 0x0101_0101_0101_0101 }
    /// Each byte's high bit.
    @inlinable public static var high: UInt64 { 0x8080_8080_8080_8080 }

    /// For bytes of `x` below 0x80: the byte's high bit set where it is ≥ `k` (k below 0x80; no
    /// byte borrows from the next, each starting at 0x80 or more). Bytes of 0x80 or more are
    /// the caller's to refuse (`x & high`).
    @inlinable @inline(__always)
    public static func atLeast(_ x: UInt64, _ k: UInt64) -> UInt64 { ((x | high) &- k &* ones) & high }

    /// The high bit set in each byte of `x` (below 0x80) in `first...last`.
    @inlinable @inline(__always)
    public static func within(_ x: UInt64, _ first: UInt64, _ last: UInt64) -> UInt64 { atLeast(x, first) & ~atLeast(x, last + 1) }
}
