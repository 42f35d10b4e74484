/// A UUID as its 128 bits (`high`: the first 8 bytes, big-endian), parsed from and written as its
/// 36-character 8-4-4-4-12 text: the one UUID codec of the server. The mapping index keys records
/// by it (two words hashed and compared instead of a 36-byte string on every lookup), identifiers
/// are normalized with it (`Identifiers.normalizedUUID`), new IDs are spelt by it and SQLite stores
/// GUIDs as its 16 bytes (`bigEndianBytes`).
///
/// Only the canonical form (upper-case 8-4-4-4-12, what the service writes and the cloud
/// identifier parser produces) parses unless `anyCase`: storage compares GUIDs as bytes, so any
/// other spelling is a different GUID.
@frozen public struct UUIDBits: Hashable, Sendable {
    public let high: UInt64
    public let low: UInt64

    @inlinable
    public init?(_ guid: String) {
        var s = guid
        guard let key = s.withUTF8({ UUIDBits(bytes: $0) }) else { return nil }
        self = key
    }

    /// `anyCase`: lower-case hex digits read as their upper-case selves (a cloud identifier's GUID
    /// may be spelled either way); otherwise only the canonical form has a key.
    @inlinable
    public init?(bytes b: UnsafeBufferPointer<UInt8>, anyCase: Bool = false) {
        guard b.count == 36, let p = b.baseAddress,
              p[8] == UInt8(ascii: "-"), p[13] == UInt8(ascii: "-"), p[18] == UInt8(ascii: "-"), p[23] == UInt8(ascii: "-") else { return nil }
        // 32 digits in runs of 8, 4, 4, 4, 4+8, read 8 at a time: the runs of 4 in pairs.
        let raw = UnsafeRawPointer(p)
        @inline(__always) func word(_ at: Int) -> UInt64 { raw.loadUnaligned(fromByteOffset: at, as: UInt64.self) }
        @inline(__always) func pair(_ a: Int, _ b: Int) -> UInt64 {
            UInt64(raw.loadUnaligned(fromByteOffset: a, as: UInt32.self)) | UInt64(raw.loadUnaligned(fromByteOffset: b, as: UInt32.self)) << 32
        }
        let w0 = Self.hexDigits(word(0), anyCase: anyCase), w1 = Self.hexDigits(pair(9, 14), anyCase: anyCase)
        let w2 = Self.hexDigits(pair(19, 24), anyCase: anyCase), w3 = Self.hexDigits(word(28), anyCase: anyCase)
        guard w0.bad | w1.bad | w2.bad | w3.bad == 0 else { return nil }
        self.high = w0.value << 32 | w1.value
        self.low = w2.value << 32 | w3.value
    }

    /// The value of the 8 hex digits in `w` (in memory order, the first the most significant), and
    /// non-zero `bad` when a byte is not one (lower case only with `anyCase`). All 8 at once, without
    /// branches (digits and letters come in random order: a branch per digit mispredicts often).
    @inlinable @inline(__always)
    public static func hexDigits(_ w: UInt64, anyCase: Bool) -> (value: UInt64, bad: UInt64) {
        let ones = ByteLanes.ones
        // The tests share one raise and one mask (`ByteLanes.atLeast(raised:_:)`).
        let raised = w | ByteLanes.high
        let digit = ByteLanes.within(raised: raised, 0x30, 0x39)
        // 'A'–'F', or with anyCase also 'a'–'f' (folded to lower case first: 0x20 set).
        let letter = anyCase ? ByteLanes.within(raised: raised | 0x20 &* ones, 0x61, 0x66) : ByteLanes.within(raised: raised, 0x41, 0x46)
        let bad = (w | ~(digit | letter)) & ByteLanes.high
        // A digit's value is its low nibble; a letter's (bit 6 set) its low nibble + 9.
        var v = (w & (0x0F &* ones)) &+ ((w >> 6) & ones) &* 9
        // Byte 0 (the first digit) is the least significant: reverse, then pack nibbles pairwise.
        v = v.byteSwapped
        v = (v >> 4 | v) & 0x00FF_00FF_00FF_00FF
        v = (v >> 8 | v) & 0x0000_FFFF_0000_FFFF
        v = (v >> 16 | v) & 0xFFFF_FFFF
        return (v, bad)
    }

    @inlinable
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Writes the canonical 36 bytes: upper-case hex 8-4-4-4-12.
    @inlinable
    public func write(into out: UnsafeMutablePointer<UInt8>) {
        let a = Self.hex(UInt32(truncatingIfNeeded: self.high >> 32)), b = Self.hex(UInt32(truncatingIfNeeded: self.high))
        let c = Self.hex(UInt32(truncatingIfNeeded: self.low >> 32)), d = Self.hex(UInt32(truncatingIfNeeded: self.low))
        let raw = UnsafeMutableRawPointer(out)
        let dash = UInt8(ascii: "-")
        raw.storeBytes(of: a, toByteOffset: 0, as: UInt64.self)
        out[8] = dash
        raw.storeBytes(of: UInt32(truncatingIfNeeded: b), toByteOffset: 9, as: UInt32.self)
        out[13] = dash
        raw.storeBytes(of: UInt32(truncatingIfNeeded: b >> 32), toByteOffset: 14, as: UInt32.self)
        out[18] = dash
        raw.storeBytes(of: UInt32(truncatingIfNeeded: c), toByteOffset: 19, as: UInt32.self)
        out[23] = dash
        raw.storeBytes(of: UInt32(truncatingIfNeeded: c >> 32), toByteOffset: 24, as: UInt32.self)
        raw.storeBytes(of: d, toByteOffset: 28, as: UInt64.self)
    }

    /// The 8 upper-case hex digits of `v` as 8 bytes in memory order (little-endian word), all
    /// digits at once: each nibble is spread into its own byte, then mapped to `0`–`9` or `A`–`F`.
    @inlinable @inline(__always)
    public static func hex(_ v: UInt32) -> UInt64 {
        var x = UInt64(v)
        x = (x | x << 16) & 0x0000_FFFF_0000_FFFF
        x = (x | x << 8) & 0x00FF_00FF_00FF_00FF
        x = (x | x << 4) & 0x0F0F_0F0F_0F0F_0F0F
        // Byte i now holds nibble i counted from the least significant; the first digit written
        // is the most significant, so reverse the bytes.
        x = x.byteSwapped
        let aboveNine = ((x &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        return x &+ 0x3030_3030_3030_3030 &+ aboveNine &* 7
    }

    @inlinable
    public var string: String { String(unsafeUninitializedCapacity: 36) { self.write(into: $0.baseAddress!); return 36 } }

    @inlinable
    public static func == (a: UUIDBits, b: UUIDBits) -> Bool { a.high == b.high && a.low == b.low }

    @inlinable
    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.high ^ (self.low &* 0x9E37_79B9_7F4A_7C15))
    }

    /// The filler of an unused slot.
    @inlinable public static var zero: UUIDBits { UUIDBits(high: 0, low: 0) }

    /// The 16 bytes, most significant first (SQLite's stored form of a GUID).
    @inlinable
    public var bigEndianBytes: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 16) { out, n in
            UnsafeMutableRawPointer(out.baseAddress!).storeBytes(of: self.high.bigEndian, as: UInt64.self)
            UnsafeMutableRawPointer(out.baseAddress! + 8).storeBytes(of: self.low.bigEndian, as: UInt64.self)
            n = 16
        }
    }

    /// The UUID whose 16 bytes, most significant first, are `bytes` (16 of them).
    @inlinable
    public init(bigEndianBytes bytes: UnsafeRawBufferPointer) {
        self.init(high: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                  low: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
    }
}
