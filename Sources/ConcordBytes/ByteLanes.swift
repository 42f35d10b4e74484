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

    /// `atLeast` for several bounds of one word, without the mask: `raised` is `x | high` (bytes of
    /// `x` below 0x80), and the high bit of each byte of the result is set where `x`'s byte is ≥ `k`
    /// (the other bits are noise). Tests combined with `&`, `|` and `~` keep that meaning in the
    /// high bits, so a chain of them masks with `high` once, at the end.
    @inlinable @inline(__always)
    public static func atLeast(raised: UInt64, _ k: UInt64) -> UInt64 { raised &- k &* ones }

    /// `within` for `atLeast(raised:_:)`'s chains: the high bit set in each byte in `first...last`,
    /// the other bits noise.
    @inlinable @inline(__always)
    public static func within(raised: UInt64, _ first: UInt64, _ last: UInt64) -> UInt64 {
        atLeast(raised: raised, first) & ~atLeast(raised: raised, last + 1)
    }

    /// The high bit set in each byte of `w` that is not plain ASCII: below 0x20 (`w - 0x20`
    /// borrows), 0x7F or above (`w + 1` reaches 0x80, or the byte has it), a quote or a backslash
    /// (`x - 1` borrows where `x`, the byte xor the character, is zero). A borrow or carry runs only
    /// out of a byte flagged already, so some byte is flagged exactly when one is not plain; the
    /// other bits are noise (mask with `high`).
    @inlinable @inline(__always)
    public static func notPlainASCII(_ w: UInt64) -> UInt64 {
        (w &- ones &* 0x20) | (w &+ ones) | w | ((w ^ (ones &* 0x22)) &- ones) | ((w ^ (ones &* 0x5C)) &- ones)
    }

    /// `notPlainASCII` over the bytes `start..<end` at `p`, masked: zero when all are plain. The
    /// bytes before `start` must be plain ASCII, and are read again when the last word reaches back
    /// over them (a short tail after a known-plain prefix is one word, not a byte at a time).
    @inlinable @inline(__always)
    public static func notPlainASCII(_ p: UnsafePointer<UInt8>, from start: Int, to end: Int) -> UInt64 {
        guard start < end else { return 0 }
        let raw = UnsafeRawPointer(p)
        if end >= 8 {
            var flags: UInt64 = 0
            var at = start
            while at + 8 < end {
                flags |= notPlainASCII(raw.loadUnaligned(fromByteOffset: at, as: UInt64.self))
                at += 8
            }
            flags |= notPlainASCII(raw.loadUnaligned(fromByteOffset: end - 8, as: UInt64.self))
            return flags & high
        }
        var flags: UInt64 = 0
        for i in start..<end {
            let c = p[i]
            if c < 0x20 || c > 0x7E || c == 0x22 || c == 0x5C { flags = high }
        }
        return flags
    }
}
