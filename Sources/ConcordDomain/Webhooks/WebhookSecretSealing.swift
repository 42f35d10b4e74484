/// The webhook key: 256 bits that seal webhook secrets at rest, never stored in the database.
///
/// Concord must sign with a webhook's secret, so it cannot keep only a hash of it; it keeps the
/// secret sealed under this key, and neither the database nor a backup holds a usable secret.
public struct WebhookKey: Sendable, Equatable, CustomStringConvertible {
    public static let byteCount = 32

    /// The key's bytes; used only to derive pads and tags.
    let bytes: [UInt8]

    /// A short stable name for the key (8 lower-case hex digits), stored beside each sealed
    /// secret so an instance can tell it lacks the key a secret was sealed with. It reveals
    /// nothing usable about the key: the first 4 bytes of SHA-256("concord-webhook-key" ‖ key).
    public let keyID: String

    /// nil unless exactly 32 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
        self.keyID = Hex.encode(Array(SHA256.hash(Array("concord-webhook-key".utf8) + bytes).prefix(4)))
    }

    /// Parses 64 hex digits (either case); nil for anything else.
    public init?(hex: some StringProtocol) {
        let digits = Array(hex.utf8)
        guard digits.count == Self.byteCount * 2 else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(Self.byteCount)
        var i = 0
        while i < digits.count {
            guard let high = Self.hexValue(digits[i]), let low = Self.hexValue(digits[i + 1]) else { return nil }
            bytes.append(high << 4 | low)
            i += 2
        }
        self.init(bytes: bytes)
    }

    /// A new key of 32 bytes from the OS's secure generator.
    public static func generate() -> WebhookKey { WebhookKey(bytes: Secrets.randomBytes(Self.byteCount))! }

    /// The key as 64 lower-case hex digits (what the key file and `webhooks.secretKey` hold).
    public var hex: String { Hex.encode(self.bytes) }

    /// Names the key by its ID only.
    public var description: String { "webhook key \(self.keyID)" }

    /// The key tags are made with, derived apart from the pads' key: a pad message starts with
    /// "whsec", this one with "concord", so no pad is ever a tag key.
    var tagKey: [UInt8] { HMACSHA256.authenticate(Array("concord-webhook-secret-tag".utf8), key: self.bytes) }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x61...0x66: c - 0x61 + 10
        case 0x41...0x46: c - 0x41 + 10
        default: nil
        }
    }
}

/// Why a sealed secret does not open.
public enum WebhookSecretSealError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bytes are not a sealed secret of any known format.
    case malformed
    /// A format version this build does not know.
    case unknownFormat(UInt8)
    /// Sealed under another key (the stored key ID); this instance needs that key.
    case wrongKey(keyID: String)
    /// The tag does not match: the bytes were altered, or belong to another webhook.
    case tampered

    public var description: String {
        switch self {
        case .malformed: "malformed sealed webhook secret"
        case .unknownFormat(let version): "sealed webhook secret of unknown format \(version)"
        case .wrongKey(let keyID): "webhook secret sealed under webhook key \(keyID), not the configured one"
        case .tampered: "sealed webhook secret fails its integrity check"
        }
    }
}

/// A webhook secret sealed under a `WebhookKey`, as stored (one BLOB / bytea; docs/formats.md).
///
/// Layout of format 1, `encoded`:
///
///     version (1 byte, = 1) ‖ key ID (4 bytes) ‖ serial (8 bytes, big-endian) ‖
///     length n (1 byte, 24–64) ‖ ciphertext (n bytes) ‖ tag (32 bytes)
public struct SealedSecret: Sendable, Equatable {
    public static let formatVersion: UInt8 = 1
    static let tagCount = 32

    /// The ID of the key it was sealed with (`WebhookKey.keyID`).
    public let keyID: String
    /// The number that made its pad unique for this webhook and key.
    public let serial: Int64
    let ciphertext: [UInt8]
    let tag: [UInt8]

    init(keyID: String, serial: Int64, ciphertext: [UInt8], tag: [UInt8]) {
        self.keyID = keyID
        self.serial = serial
        self.ciphertext = ciphertext
        self.tag = tag
    }

    /// Reads `encoded` bytes back; checks the layout only (`WebhookSecretSealing.open` checks the tag).
    public init(encoded bytes: [UInt8]) throws(WebhookSecretSealError) {
        guard let version = bytes.first else { throw .malformed }
        guard version == Self.formatVersion else { throw .unknownFormat(version) }
        guard bytes.count >= 14 else { throw .malformed }
        let length = Int(bytes[13])
        guard WebhookSecret.allowedByteCounts.contains(length), bytes.count == 14 + length + Self.tagCount else { throw .malformed }
        var serial: UInt64 = 0
        for b in bytes[5..<13] { serial = serial << 8 | UInt64(b) }
        self.init(keyID: Hex.encode(Array(bytes[1..<5])), serial: Int64(bitPattern: serial),
                  ciphertext: Array(bytes[14..<(14 + length)]), tag: Array(bytes[(14 + length)...]))
    }

    /// The stored form (see the type's comment).
    public var encoded: [UInt8] { self.authenticatedHead + self.tag }

    /// Everything before the tag, which the tag covers (with the webhook ID after it).
    var authenticatedHead: [UInt8] {
        var out: [UInt8] = [Self.formatVersion]
        out += Self.keyIDBytes(self.keyID)
        out += Self.bigEndian(self.serial)
        out.append(UInt8(self.ciphertext.count))
        out += self.ciphertext
        return out
    }

    static func bigEndian(_ value: Int64) -> [UInt8] {
        let v = UInt64(bitPattern: value)
        return (0..<8).map { UInt8(truncatingIfNeeded: v >> (UInt64(7 - $0) * 8)) }
    }

    /// The 4 bytes an 8-hex-digit key ID stands for.
    static func keyIDBytes(_ keyID: String) -> [UInt8] {
        let digits = Array(keyID.utf8)
        func value(_ c: UInt8) -> UInt8 { c <= 0x39 ? c - 0x30 : c - 0x61 + 10 }
        return stride(from: 0, to: digits.count, by: 2).map { value(digits[$0]) << 4 | value(digits[$0 + 1]) }
    }
}

/// Seals webhook secrets for storage: the secret XORed with a pad, HMAC-SHA256(key, "whsec" ‖
/// webhook ID ‖ serial ‖ block), plus an HMAC-SHA256 tag under a key derived apart. With only
/// HMAC-SHA256 at hand this is authenticated encryption as long as each pad is used once: the
/// caller passes a serial never used before for that webhook under that key (for example a
/// counter bumped at every rotation), so no two secrets share a pad.
public enum WebhookSecretSealing {
    /// Seals `secret` for the webhook `webhookID`.
    public static func seal(_ secret: WebhookSecret, webhookID: String, serial: Int64, key: WebhookKey) -> SealedSecret {
        let pad = self.pad(count: secret.bytes.count, webhookID: webhookID, serial: serial, key: key)
        let ciphertext = zip(secret.bytes, pad).map { $0 ^ $1 }
        let unsigned = SealedSecret(keyID: key.keyID, serial: serial, ciphertext: ciphertext, tag: [])
        return SealedSecret(keyID: key.keyID, serial: serial, ciphertext: ciphertext,
                            tag: self.tag(unsigned, webhookID: webhookID, key: key))
    }

    /// The secret sealed for `webhookID`; throws `.wrongKey` when it was sealed under another key,
    /// `.tampered` when its bytes or its webhook differ from what was sealed.
    public static func open(_ sealed: SealedSecret, webhookID: String, key: WebhookKey) throws(WebhookSecretSealError) -> WebhookSecret {
        guard sealed.keyID == key.keyID else { throw .wrongKey(keyID: sealed.keyID) }
        guard Secrets.constantTimeEquals(self.tag(sealed, webhookID: webhookID, key: key), sealed.tag) else { throw .tampered }
        let pad = self.pad(count: sealed.ciphertext.count, webhookID: webhookID, serial: sealed.serial, key: key)
        guard let secret = WebhookSecret(bytes: zip(sealed.ciphertext, pad).map({ $0 ^ $1 })) else { throw .malformed }
        return secret
    }

    /// `open` on stored bytes.
    public static func open(encoded: [UInt8], webhookID: String, key: WebhookKey) throws(WebhookSecretSealError) -> WebhookSecret {
        try self.open(try SealedSecret(encoded: encoded), webhookID: webhookID, key: key)
    }

    /// `count` pad bytes: block i is HMAC-SHA256(key, "whsec" ‖ len(webhookID) (2 bytes) ‖
    /// webhookID ‖ serial (8 bytes) ‖ i (1 byte)). A generated secret (32 bytes) takes block 0 only.
    static func pad(count: Int, webhookID: String, serial: Int64, key: WebhookKey) -> [UInt8] {
        let id = Array(webhookID.utf8)
        var message = Array("whsec".utf8)
        message += [UInt8(truncatingIfNeeded: id.count >> 8), UInt8(truncatingIfNeeded: id.count)]
        message += id
        message += SealedSecret.bigEndian(serial)
        var pad = [UInt8]()
        var block: UInt8 = 0
        while pad.count < count {
            pad += HMACSHA256.authenticate(message + [block], key: key.bytes)
            block += 1
        }
        return Array(pad.prefix(count))
    }

    /// HMAC-SHA256(tag key, version ‖ key ID ‖ serial ‖ n ‖ ciphertext ‖ webhookID): every field
    /// before the webhook ID has a fixed or stated length, so no two inputs read alike.
    static func tag(_ sealed: SealedSecret, webhookID: String, key: WebhookKey) -> [UInt8] {
        HMACSHA256.authenticate(sealed.authenticatedHead + Array(webhookID.utf8), key: key.tagKey)
    }
}
