/// An object's key: the (A, C) of the `photoKitCloudIdentifier` `A:C:H` PhotoKit gives
/// the device. Devices on one iCloud Photos library see the same key for the same photo, so keys
/// match objects with no content hashing; C is the object's own type code, so the type stands for it.
public struct ObjectKey: Sendable, Hashable {
    public var type: ObjectType
    /// A, compared byte for byte (printable ASCII: `String ==` and byte equality agree on it).
    public var a: String
    public init(type: ObjectType, a: String) {
        self.type = type
        self.a = a
    }
}

/// `photoKitCloudIdentifier`: `A:C:H`, exactly three parts, A of 1–128 bytes, H of 0–128,
/// both printable ASCII (0x21–0x7E) without `:`, and C the object's own type code.
public enum PhotoKitCloudIdentifier {
    /// A, when `s` is well formed for an object of `type`; nil otherwise.
    public static func keyPart(_ s: String, type: ObjectType) -> String? {
        let b = Array(s.utf8)
        guard let first = b.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let rest = b[(first + 1)...]
        guard let second = rest.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let a = b[..<first], c = b[(first + 1)..<second], h = b[(second + 1)...]
        guard (1...128).contains(a.count), h.count <= 128 else { return nil }
        for byte in a where byte < 0x21 || byte > 0x7E { return nil }
        for byte in h where byte < 0x21 || byte > 0x7E || byte == UInt8(ascii: ":") { return nil }
        guard ObjectType(code: String(decoding: c, as: UTF8.self)) == type else { return nil }
        return String(decoding: a, as: UTF8.self)
    }

    /// What a device must send instead, for the error message.
    public static let rule = "must be A:C:H (PhotoKit's PHCloudIdentifier string): A of 1 to 128 and H of 0 to 128 printable ASCII characters without ':', C the object's type code"
}

extension LibraryObject {
    /// The object's key, nil when it has no (valid) `photoKitCloudIdentifier`.
    public var key: ObjectKey? {
        guard let s = self.photoKitCloudIdentifier, let a = PhotoKitCloudIdentifier.keyPart(s, type: self.type) else { return nil }
        return ObjectKey(type: self.type, a: a)
    }

    /// True when the object has a fingerprint (an object without one has unknown content).
    public var hasFingerprint: Bool { !self.fingerprint.isEmpty }

    /// The creation date as whole seconds since 1970 (fractions cut, time zones as instants), for
    /// the wanted rule's "same creationDate to the second".
    public var creationSecond: Int64? { self.creationDate.flatMap(RFC3339.epochSecond) }
}

extension RFC3339 {
    /// Seconds since 1970 of a valid RFC 3339 time, its fraction cut (not rounded) and its offset
    /// applied; nil when `s` is not valid.
    public static func epochSecond(_ s: String) -> Int64? {
        guard self.isValid(s) else { return nil }
        let b = Array(s.utf8)
        func n(_ at: Int, _ count: Int) -> Int64 { b[at..<(at + count)].reduce(0) { $0 * 10 + Int64($1 - 48) } }
        let year = n(0, 4), month = n(5, 2), day = n(8, 2)
        // Days from civil (Howard Hinnant's algorithm), proleptic Gregorian.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        var seconds = days * 86_400 + n(11, 2) * 3600 + n(14, 2) * 60 + n(17, 2)
        var i = 19
        if b[i] == UInt8(ascii: ".") { i += 1; while b[i] >= 48 && b[i] <= 57 { i += 1 } }
        if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
            let offset = n(i + 1, 2) * 3600 + n(i + 4, 2) * 60
            seconds += b[i] == UInt8(ascii: "+") ? -offset : offset
        }
        return seconds
    }
}
