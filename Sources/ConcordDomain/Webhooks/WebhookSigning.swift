import Foundation

/// A webhook's signing secret: `whsec_` and the base64 (RFC 4648 §4, padded) of its bytes, as
/// Standard Webhooks defines it. Concord generates 32 random bytes; the standard allows 24–64.
///
/// `description` never shows the secret, so a secret interpolated into a log line by mistake
/// stays secret; `text` is the one way to spell it out (the create and rotate answers).
public struct WebhookSecret: Sendable, Equatable, CustomStringConvertible {
    public static let prefix = "whsec_"
    /// The length Concord generates: 256 bits.
    public static let generatedByteCount = 32
    /// The lengths Standard Webhooks allows.
    public static let allowedByteCounts = 24...64

    /// The HMAC key: the decoded bytes after `whsec_`.
    public let bytes: [UInt8]

    /// nil unless `bytes.count` is in `allowedByteCounts`.
    public init?(bytes: [UInt8]) {
        guard Self.allowedByteCounts.contains(bytes.count) else { return nil }
        self.bytes = bytes
    }

    /// Parses `whsec_<base64>`; nil for anything else (no prefix, bad base64, a length out of range).
    public init?(parsing text: some StringProtocol) {
        guard text.hasPrefix(Self.prefix),
              let data = Data(base64Encoded: String(text.dropFirst(Self.prefix.count))) else { return nil }
        self.init(bytes: [UInt8](data))
    }

    /// A new secret of 32 bytes from the OS's secure generator.
    public static func generate() -> WebhookSecret {
        WebhookSecret(bytes: Secrets.randomBytes(Self.generatedByteCount))!
    }

    /// The secret spelled out: `whsec_` + padded base64.
    public var text: String { Self.prefix + Data(self.bytes).base64EncodedString() }

    public var description: String { "whsec_(redacted)" }
}

/// Standard Webhooks signatures: `v1,` + base64 of HMAC-SHA256(secret bytes, `<id>.<timestamp>.<body>`).
public enum WebhookSigning {
    /// How far `webhook-timestamp` may be from the receiver's clock, either way (Standard Webhooks: 5 minutes).
    public static let defaultTolerance = 300

    /// One signature, `v1,<base64>`, over the exact body bytes.
    public static func sign(secret: WebhookSecret, id: String, timestamp: Int, body: [UInt8]) -> String {
        "v1," + Data(self.mac(secret: secret, id: id, timestamp: timestamp, body: body)).base64EncodedString()
    }

    /// The `webhook-signature` header: one signature per secret, separated by one space, in the
    /// order given — the current secret first, then a previous one while it is unexpired.
    public static func signatureHeader(secrets: [WebhookSecret], id: String, timestamp: Int, body: [UInt8]) -> String {
        secrets.map { self.sign(secret: $0, id: id, timestamp: timestamp, body: body) }.joined(separator: " ")
    }

    /// True when `timestamp` is within `tolerance` seconds of `now` (either way) and any `v1,`
    /// entry of `header` is the signature of one of `secrets`. Entries of other versions, and
    /// entries that are not base64, are skipped. Compares in constant time.
    public static func verify(header: String, id: String, timestamp: Int, body: [UInt8],
                              secrets: [WebhookSecret], now: Int, tolerance: Int = defaultTolerance) -> Bool {
        guard timestamp >= now - tolerance, timestamp <= now + tolerance else { return false }
        let expected = secrets.map { self.mac(secret: $0, id: id, timestamp: timestamp, body: body) }
        var matched = false
        for entry in header.split(separator: " ", omittingEmptySubsequences: true) {
            guard entry.hasPrefix("v1,"),
                  let data = Data(base64Encoded: String(entry.dropFirst(3))) else { continue }
            let given = [UInt8](data)
            // Every candidate is compared, so timing says nothing about which (if any) matched.
            for mac in expected where Secrets.constantTimeEquals(mac, given) { matched = true }
        }
        return matched
    }

    /// `webhook-timestamp` as an integer, accepted only in its canonical spelling (ASCII digits,
    /// no sign, no leading zero): then the text the sender signed is exactly `String(timestamp)`.
    public static func parseTimestamp(_ text: some StringProtocol) -> Int? {
        let utf8 = Array(text.utf8)
        guard !utf8.isEmpty, utf8.count <= 18, utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              utf8.count == 1 || utf8[0] != 0x30 else { return nil }
        return Int(String(decoding: utf8, as: UTF8.self))
    }

    /// HMAC-SHA256(secret, "<id>.<timestamp>.<body>").
    static func mac(secret: WebhookSecret, id: String, timestamp: Int, body: [UInt8]) -> [UInt8] {
        var message = [UInt8]()
        message.reserveCapacity(id.utf8.count + 22 + body.count)
        message += id.utf8
        message.append(0x2E)
        message += String(timestamp).utf8
        message.append(0x2E)
        message += body
        return HMACSHA256.authenticate(message, key: secret.bytes)
    }
}
