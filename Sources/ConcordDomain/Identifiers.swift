import ConcordBytes
import Foundation
import Synchronization

/// Milliseconds and a counter for `Identifiers.newUUID`: a new millisecond starts the counter at
/// 0; 4096 IDs in one millisecond (or a clock set back) borrow the next millisecond, so the pair
/// always increases.
final class UUIDClock: Sendable {
    static let shared = UUIDClock()
    private let state = Mutex<(milliseconds: UInt64, counter: UInt64)>((0, 0))
    /// Unix milliseconds: the wall clock, or a test's.
    private let milliseconds: @Sendable () -> UInt64

    init(milliseconds: @escaping @Sendable () -> UInt64 = { UInt64(max(0, WallClock.system.now().timeIntervalSince1970 * 1000)) }) {
        self.milliseconds = milliseconds
    }

    func next() -> (milliseconds: UInt64, counter: UInt64) { self.next(now: self.milliseconds()) }

    func next(now: UInt64) -> (milliseconds: UInt64, counter: UInt64) {
        self.state.withLock { s in
            if now > s.milliseconds {
                s = (now & 0xFFFF_FFFF_FFFF, 0)
            } else if s.counter < 0xFFF {
                s.counter += 1
            } else {
                s = ((s.milliseconds + 1) & 0xFFFF_FFFF_FFFF, 0)
            }
            return s
        }
    }
}

/// Random 64-bit words for new identifiers' random bits, drawn from the OS's secure generator 64
/// at a time: one draw per identifier was a system call per new record, 3 % of a first mapping's
/// CPU.
final class RandomWords: Sendable {
    static let shared = RandomWords()
    private static let refill = 64
    private let state = Mutex<(words: [UInt64], used: Int)>(([], 0))

    func next() -> UInt64 {
        self.state.withLock { s in
            if s.used == s.words.count {
                let bytes = Secrets.randomBytes(Self.refill * 8)
                s.words = (0..<Self.refill).map { i in bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self) } }
                s.used = 0
            }
            s.used += 1
            return s.words[s.used - 1]
        }
    }
}

/// The three object types of a library, with PhotoKit's type codes.
public enum ObjectType: Int, Sendable, Hashable, CaseIterable, Comparable, BitwiseCopyable {
    /// `PHAsset`, code `001`.
    case asset = 1
    /// `PHAssetCollection` (album), code `040`.
    case assetCollection = 40
    /// `PHCollectionList` (folder), code `020`.
    case collectionList = 20

    /// The three-digit code used inside a cloud identifier.
    public var code: String {
        switch self {
        case .asset: return "001"
        case .assetCollection: return "040"
        case .collectionList: return "020"
        }
    }

    /// The plural name used in JSON bodies and change entries: `assets`, `assetCollections`, `collectionLists`.
    public var partName: String {
        switch self {
        case .asset: return "assets"
        case .assetCollection: return "assetCollections"
        case .collectionList: return "collectionLists"
        }
    }

    /// Parses a three-digit type code (`001`, `040`, `020`).
    public init?(code: some StringProtocol) {
        guard let type = Self.allCases.first(where: { $0.code == code }) else { return nil }
        self = type
    }

    /// Parses a part name (`assets`, `assetCollections`, `collectionLists`).
    public init?(partName: some StringProtocol) {
        guard let type = Self.allCases.first(where: { $0.partName == partName }) else { return nil }
        self = type
    }

    /// Order of the parts in answers: assets, assetCollections, collectionLists.
    @inlinable public var partOrder: Int {
        switch self {
        case .asset: return 0
        case .assetCollection: return 1
        case .collectionList: return 2
        }
    }

    public static func < (lhs: ObjectType, rhs: ObjectType) -> Bool { lhs.partOrder < rhs.partOrder }
}

/// Validation of the identifiers of the API.
public enum Identifiers {
    /// A local identifier is 1–255 bytes of UTF-8 with no control characters.
    public static func isValidLocalIdentifier(_ s: String) -> Bool {
        var copy = s
        return copy.withUTF8 { b in
            guard !b.isEmpty, b.count <= 255 else { return false }
            // Fast path, 8 bytes at a time: no byte below 0x20, no 0x7F and no 0xC2 means no
            // control character (the batch validates thousands per request).
            if !Self.mayHoldControl(b) { return true }
            // Swift strings are valid UTF-8 already; control characters are C0 (bytes below 0x20),
            // DEL (0x7F) and C1 (U+0080–U+009F: 0xC2 followed by 0x80–0x9F).
            var previous: UInt8 = 0
            for c in b {
                if c < 0x20 || c == 0x7F || (previous == 0xC2 && c <= 0x9F && c >= 0x80) { return false }
                previous = c
            }
            return true
        }
    }

    /// Whether some byte is below 0x20, 0x7F or 0xC2 (SWAR: for n ≤ 0x80, `(x - n·0x01…) & ~x & 0x80…`
    /// is non-zero exactly when some byte of x is below n; equality is "x ^ byte·0x01… has a zero").
    static func mayHoldControl(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        var i = 0
        let raw = UnsafeRawPointer(b.baseAddress!)
        while i + 8 <= b.count {
            let w = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            let del = w ^ (ones &* 0x7F)
            let c2 = w ^ (ones &* 0xC2)
            if ((w &- ones &* 0x20) & ~w | (del &- ones) & ~del | (c2 &- ones) & ~c2) & high != 0 { return true }
            i += 8
        }
        while i < b.count {
            if b[i] < 0x20 || b[i] == 0x7F || b[i] == 0xC2 { return true }
            i += 1
        }
        return false
    }

    /// A fingerprint is base64url without padding of 16–64 bytes. The unused low bits of the last
    /// character are not checked (lenient, as most decoders are): the fingerprint is compared as the
    /// string the device sent, and standard encoders always write those bits as zero.
    public static func isValidFingerprint(_ s: String) -> Bool {
        var copy = s
        return copy.withUTF8 { self.isValidFingerprint(bytes: $0) }
    }

    /// `isValidFingerprint` on UTF-8 bytes (the hot path of cloud → local parses thousands).
    @inlinable
    package static func isValidFingerprint(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = bytes.count
        guard n >= 22, n <= 86, n % 4 != 1, let p = bytes.baseAddress else { return false }   // 16 bytes → 22 chars, 64 → 86
        // 8 bytes at a time, the last 8 overlapping the word before them.
        let raw = UnsafeRawPointer(p)
        var bad: UInt64 = 0
        var at = 0
        while at + 8 <= n {
            bad |= Self.notBase64url(raw.loadUnaligned(fromByteOffset: at, as: UInt64.self))
            at += 8
        }
        if at < n { bad |= Self.notBase64url(raw.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)) }
        return bad == 0
    }

    /// Non-zero when a byte of `w` is not in base64url's alphabet: '-', '0'–'9', 'A'–'Z', '_',
    /// 'a'–'z'. All 8 bytes at once, without branches, the tests sharing one raise and one mask
    /// (`ByteLanes.atLeast(raised:_:)`).
    @inlinable @inline(__always)
    package static func notBase64url(_ w: UInt64) -> UInt64 {
        let raised = w | ByteLanes.high
        // Letters of either case in one range: a byte below 0x80 with 0x20 set is in 'a'–'z' exactly
        // when it was a letter ('A'–'Z' or 'a'–'z').
        let folded = raised | 0x20 &* ByteLanes.ones
        let good = ByteLanes.within(raised: raised, 0x2D, 0x2D) | ByteLanes.within(raised: raised, 0x30, 0x39)
            | ByteLanes.within(raised: folded, 0x61, 0x7A) | ByteLanes.within(raised: raised, 0x5F, 0x5F)
        return (w | ~good) & ByteLanes.high
    }

    @inline(__always)
    static func base64urlValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): return 62
        case UInt8(ascii: "_"): return 63
        default: return nil
        }
    }

    /// Parses a UUID in 8-4-4-4-12 form, either case; returns it upper-cased.
    public static func normalizedUUID(_ s: some StringProtocol) -> String? {
        var copy = String(s)
        return copy.withUTF8 { self.normalizedUUID(bytes: $0) }
    }

    /// A new ID: a version 7 UUID (RFC 9562 §5.7), upper case — 48 bits of Unix milliseconds, a
    /// 12-bit counter (the IDs this process makes always increase), then 62 bits
    /// from the system's secure generator.
    ///
    /// Increasing because storage keys records and links by GUID: random GUIDs put
    /// each new record and each new link on a page of its own in those B-trees, and every such
    /// page is written again at commit; increasing ones fill the end of the account's range a page
    /// at a time. (`UUID().uuidString`, random, also cost 5–11 µs each.)
    public static func newUUID() -> String { self.newUUID(clock: .shared) }

    /// `newUUID` on `clock` (tests give it a clock of their own).
    static func newUUID(clock: UUIDClock) -> String {
        let (milliseconds, counter) = clock.next()
        let high = milliseconds << 16 | 0x7000 | counter                                               // version 7
        let low = RandomWords.shared.next() & ~(0xC000_0000_0000_0000 as UInt64) | 0x8000_0000_0000_0000   // variant 10
        return UUIDBits(high: high, low: low).string
    }

    /// `normalizedUUID` on UTF-8 bytes.
    static func normalizedUUID(bytes b: UnsafeBufferPointer<UInt8>) -> String? {
        UUIDBits(bytes: b, anyCase: true)?.string
    }
}

/// A cloud identifier `<GUID>:<type>:<fingerprint>`, parsed, or a record's own (`CloudRecord`).
public struct CloudIdentifier: Sendable, Hashable, CustomStringConvertible {
    /// The record's GUID, upper case.
    public var guid: String
    public var type: ObjectType
    /// The fingerprint part; empty: the record's own fingerprint stands for it (both spellings name the record).
    public var fingerprint: String

    public init(guid: String, type: ObjectType, fingerprint: String) {
        self.guid = guid
        self.type = type
        self.fingerprint = fingerprint
    }

    /// Parses `s`; nil when it is not a well-formed cloud identifier. Works on the UTF-8 bytes
    /// (this runs for every item of a 10 000-item batch).
    public init?(parsing s: String) {
        var copy = s
        guard let parsed = copy.withUTF8({ CloudIdentifier(parsing: $0) }) else { return nil }
        self = parsed
    }

    /// Parses UTF-8 bytes (a span of a request's batch, say); nil when they are not a well-formed
    /// cloud identifier.
    public init?(parsing b: UnsafeBufferPointer<UInt8>) {
        guard let type = Self.wellFormedType(b), let guid = Identifiers.normalizedUUID(bytes: UnsafeBufferPointer(rebasing: b[0..<36])) else { return nil }
        self.init(guid: guid, type: type, fingerprint: String(decoding: UnsafeBufferPointer(rebasing: b[41...]), as: UTF8.self))
    }

    /// The type of a cloud identifier's bytes when everything but the GUID's 36 bytes is well
    /// formed (their digits are the caller's to read), nil otherwise.
    @inlinable
    package static func wellFormedType(_ b: UnsafeBufferPointer<UInt8>) -> ObjectType? {
        // GUID (36) + ":" + type (3) + ":" + fingerprint (0 or 22...86).
        let n = b.count
        guard n == 41 || (n >= 63 && n <= 127), b[36] == UInt8(ascii: ":"), b[40] == UInt8(ascii: ":") else { return nil }
        let type: ObjectType
        switch (b[37], b[38], b[39]) {
        case (0x30, 0x30, 0x31): type = .asset
        case (0x30, 0x34, 0x30): type = .assetCollection
        case (0x30, 0x32, 0x30): type = .collectionList
        default: return nil
        }
        let fingerprint = UnsafeBufferPointer(rebasing: b[41...])
        guard fingerprint.isEmpty || Identifiers.isValidFingerprint(bytes: fingerprint) else { return nil }
        return type
    }

    /// The canonical string form (GUID upper case).
    public var stringValue: String {
        var s = String()
        s.reserveCapacity(41 + self.fingerprint.utf8.count)
        s += self.guid; s += ":"; s += self.type.code; s += ":"; s += self.fingerprint
        return s
    }
    public var description: String { self.stringValue }
}
