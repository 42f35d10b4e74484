/// The three object types of a library, with PhotoKit's type codes (API.md §2).
public enum ObjectType: Int, Sendable, Hashable, CaseIterable, Comparable {
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
        switch code {
        case "001": self = .asset
        case "040": self = .assetCollection
        case "020": self = .collectionList
        default: return nil
        }
    }

    /// Parses a part name (`assets`, `assetCollections`, `collectionLists`).
    public init?(partName: some StringProtocol) {
        switch partName {
        case "assets": self = .asset
        case "assetCollections": self = .assetCollection
        case "collectionLists": self = .collectionList
        default: return nil
        }
    }

    /// Order of the parts in answers: assets, assetCollections, collectionLists.
    public var partOrder: Int {
        switch self {
        case .asset: return 0
        case .assetCollection: return 1
        case .collectionList: return 2
        }
    }

    public static func < (lhs: ObjectType, rhs: ObjectType) -> Bool { lhs.partOrder < rhs.partOrder }
}

/// Validation of the identifiers of API.md §2.
public enum Identifiers {
    /// A local identifier is 1–255 bytes of UTF-8 with no control characters.
    public static func isValidLocalIdentifier(_ s: String) -> Bool {
        let utf8 = s.utf8
        guard !utf8.isEmpty, utf8.count <= 255 else { return false }
        // Swift strings are valid Unicode already; control characters are C0, DEL and C1.
        for scalar in s.unicodeScalars {
            let v = scalar.value
            if v < 0x20 || (v >= 0x7F && v <= 0x9F) { return false }
        }
        return true
    }

    /// A fingerprint is base64url without padding of 16–64 bytes, in canonical form
    /// (the unused low bits of the last character are zero, so one content has one spelling).
    public static func isValidFingerprint(_ s: String) -> Bool {
        let utf8 = s.utf8
        let n = utf8.count
        guard n >= 22, n <= 86, n % 4 != 1 else { return false }   // 16 bytes → 22 chars, 64 → 86
        var last: UInt8 = 0
        for c in utf8 {
            guard base64urlValue(c) != nil else { return false }
            last = c
        }
        guard let lastValue = base64urlValue(last) else { return false }
        switch n % 4 {
        case 2: return lastValue & 0x0F == 0   // 1 byte in the last group: 4 unused bits
        case 3: return lastValue & 0x03 == 0   // 2 bytes: 2 unused bits
        default: return true
        }
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
        let utf8 = Array(s.utf8)
        guard utf8.count == 36 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(36)
        for (i, c) in utf8.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard c == UInt8(ascii: "-") else { return nil }
                out.append(c)
                continue
            }
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "F"): out.append(c)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): out.append(c - 32)
            default: return nil
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// A parsed cloud identifier `<GUID>:<type>:<fingerprint>` (API.md §2).
public struct CloudIdentifier: Sendable, Hashable, CustomStringConvertible {
    /// The record's GUID, upper case.
    public var guid: String
    public var type: ObjectType
    /// The fingerprint part; empty when the identifier resolves through its record only.
    public var fingerprint: String

    public init(guid: String, type: ObjectType, fingerprint: String) {
        self.guid = guid
        self.type = type
        self.fingerprint = fingerprint
    }

    /// Parses `s`; nil when it is not a well-formed cloud identifier.
    public init?(parsing s: String) {
        let parts = s.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3,
              let guid = Identifiers.normalizedUUID(parts[0]),
              let type = ObjectType(code: parts[1]) else { return nil }
        let fingerprint = String(parts[2])
        guard fingerprint.isEmpty || Identifiers.isValidFingerprint(fingerprint) else { return nil }
        self.init(guid: guid, type: type, fingerprint: fingerprint)
    }

    /// The canonical string form (GUID upper case).
    public var stringValue: String { self.guid + ":" + self.type.code + ":" + self.fingerprint }
    public var description: String { self.stringValue }
}
