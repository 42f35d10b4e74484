@testable import ConcordDomain
import Testing

@Suite struct WebhookSigningTests {
    // Standard Webhooks' published vector (libraries/go/webhook_test.go, TestWebhookSign; the same
    // in the C#, Java, Python and JavaScript libraries' tests).
    static let vectorSecret = WebhookSecret(parsing: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")!
    static let vectorID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
    static let vectorTimestamp = 1614265330
    static let vectorBody = Array(#"{"test": 2432232314}"#.utf8)
    static let vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

    @Test func signsStandardWebhooksPublishedVector() {
        #expect(Self.vectorSecret.bytes.count == 24)
        #expect(WebhookSigning.sign(secret: Self.vectorSecret, id: Self.vectorID, timestamp: Self.vectorTimestamp, body: Self.vectorBody)
                == Self.vectorSignature)
    }

    @Test func headerHoldsCurrentSignatureFirstThenPrevious() {
        let previous = WebhookSecret.generate()
        let header = WebhookSigning.signatureHeader(secrets: [Self.vectorSecret, previous], id: Self.vectorID,
                                                    timestamp: Self.vectorTimestamp, body: Self.vectorBody)
        let parts = header.split(separator: " ", omittingEmptySubsequences: false)
        #expect(parts.count == 2)
        #expect(parts[0] == Self.vectorSignature)
        #expect(String(parts[1]) == WebhookSigning.sign(secret: previous, id: Self.vectorID, timestamp: Self.vectorTimestamp, body: Self.vectorBody))
        #expect(WebhookSigning.signatureHeader(secrets: [Self.vectorSecret], id: Self.vectorID, timestamp: Self.vectorTimestamp,
                                               body: Self.vectorBody) == Self.vectorSignature)
    }

    struct VerifyCase: Sendable, CustomTestStringConvertible {
        var name: String
        var header: String
        var body: [UInt8] = WebhookSigningTests.vectorBody
        var id: String = WebhookSigningTests.vectorID
        var secrets: [WebhookSecret] = [WebhookSigningTests.vectorSecret]
        var now: Int = WebhookSigningTests.vectorTimestamp
        var valid: Bool
        var testDescription: String { self.name }
    }

    static let other = WebhookSecret(bytes: [UInt8](repeating: 7, count: 32))!

    static let verifyCases: [VerifyCase] = [
        VerifyCase(name: "the vector", header: vectorSignature, valid: true),
        VerifyCase(name: "wrong secret", header: vectorSignature, secrets: [other], valid: false),
        VerifyCase(name: "no secret", header: vectorSignature, secrets: [], valid: false),
        VerifyCase(name: "tampered body", header: vectorSignature, body: Array(#"{"test": 2432232315}"#.utf8), valid: false),
        VerifyCase(name: "other id", header: vectorSignature, id: "msg_other", valid: false),
        VerifyCase(name: "truncated signature (the libraries' bad vector)", header: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLawdd", valid: false),
        VerifyCase(name: "other version", header: "v1a," + String(vectorSignature.dropFirst(3)), valid: false),
        VerifyCase(name: "no version", header: String(vectorSignature.dropFirst(3)), valid: false),
        VerifyCase(name: "empty header", header: "", valid: false),
        VerifyCase(name: "not base64", header: "v1,!!!!", valid: false),
        VerifyCase(name: "stale by 301 s", header: vectorSignature, now: vectorTimestamp + 301, valid: false),
        VerifyCase(name: "old by exactly 300 s", header: vectorSignature, now: vectorTimestamp + 300, valid: true),
        VerifyCase(name: "future by 301 s", header: vectorSignature, now: vectorTimestamp - 301, valid: false),
        VerifyCase(name: "future by 300 s", header: vectorSignature, now: vectorTimestamp - 300, valid: true),
        VerifyCase(name: "two signatures, the matching one second", header: "v1,\(String(repeating: "A", count: 43))= \(vectorSignature)", valid: true),
        VerifyCase(name: "two signatures, the matching one first", header: "\(vectorSignature) v1,\(String(repeating: "A", count: 43))=", valid: true),
        VerifyCase(name: "two signatures, none matching", header: "v1,\(String(repeating: "A", count: 43))= v1,\(String(repeating: "B", count: 43))=", valid: false),
        VerifyCase(name: "another version then v1", header: "v1a,xyz \(vectorSignature)", valid: true),
        VerifyCase(name: "either of two secrets", header: vectorSignature, secrets: [other, vectorSecret], valid: true),
    ]

    @Test(arguments: verifyCases)
    func verify(_ c: VerifyCase) {
        #expect(WebhookSigning.verify(header: c.header, id: c.id, timestamp: Self.vectorTimestamp, body: c.body,
                                      secrets: c.secrets, now: c.now) == c.valid)
    }

    @Test func verifiesWhatItSignsDuringARotation() {
        let current = WebhookSecret.generate(), previous = WebhookSecret.generate()
        let body = Array(#"{"id":"X","type":"webhook.ping","timestamp":"2026-11-27T00:00:00Z","data":{"webhookID":"W"}}"#.utf8)
        let header = WebhookSigning.signatureHeader(secrets: [current, previous], id: "X", timestamp: 1_800_000_000, body: body)
        for secrets in [[current], [previous], [current, previous]] {
            #expect(WebhookSigning.verify(header: header, id: "X", timestamp: 1_800_000_000, body: body, secrets: secrets, now: 1_800_000_010))
        }
        #expect(!WebhookSigning.verify(header: header, id: "X", timestamp: 1_800_000_000, body: body, secrets: [WebhookSecret.generate()], now: 1_800_000_010))
    }

    @Test(arguments: [
        ("1614265330", 1614265330), ("0", 0), ("", nil), ("01614265330", nil), ("+1614265330", nil),
        ("-5", nil), ("16142 65330", nil), ("1614265330.0", nil), ("１２", nil), (String(repeating: "9", count: 19), nil),
    ] as [(String, Int?)])
    func parsesOnlyCanonicalTimestamps(_ text: String, _ expected: Int?) {
        #expect(WebhookSigning.parseTimestamp(text) == expected)
    }

    @Test(arguments: [
        ("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 24),
        ("whsec_" + String(repeating: "A", count: 43) + "=", 32),
        ("whsec_" + String(repeating: "A", count: 86) + "==", 64),
        ("whsec_" + String(repeating: "A", count: 88), nil),       // 66 bytes
        ("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", nil),                  // no prefix
        ("whsec_" + String(repeating: "A", count: 28), nil),       // 21 bytes
        ("whsec_" + String(repeating: "A", count: 92), nil),       // 69 bytes
        ("whsec_not base64 at all!!!!!!!!!!", nil),
        ("whsec_", nil),
    ] as [(String, Int?)])
    func parsesSecrets(_ text: String, _ byteCount: Int?) {
        #expect(WebhookSecret(parsing: text)?.bytes.count == byteCount)
    }

    @Test func generatedSecretsAre32RandomBytesAndRoundTrip() {
        let a = WebhookSecret.generate(), b = WebhookSecret.generate()
        #expect(a.bytes.count == 32)
        #expect(a != b)
        #expect(a.text.hasPrefix("whsec_"))
        #expect(WebhookSecret(parsing: a.text) == a)
        #expect(!"\(a)".contains(a.text.dropFirst(6)))   // logging a secret never shows it
    }
}

@Suite struct WebhookSecretSealingTests {
    static let key = WebhookKey(hex: String(repeating: "0123456789abcdef", count: 4))!
    static let webhookID = "0193A5C2-7E41-7B3A-9C1D-5F2E8A6B4C10"

    @Test func keyParsesHexAndHasAStableShortID() {
        #expect(Self.key.hex == String(repeating: "0123456789abcdef", count: 4))
        #expect(WebhookKey(hex: String(repeating: "0123456789ABCDEF", count: 4)) == Self.key)
        #expect(Self.key.keyID.utf8.count == 8)
        #expect(Self.key.keyID == Hex.encode(Array(SHA256.hash(Array("concord-webhook-key".utf8) + Self.key.bytes).prefix(4))))
        #expect(WebhookKey.generate().keyID != Self.key.keyID)
        #expect(!"\(Self.key)".contains(Self.key.hex))
        for bad in ["", String(repeating: "0", count: 63), String(repeating: "0", count: 65), String(repeating: "g", count: 64)] {
            #expect(WebhookKey(hex: bad) == nil, "\(bad)")
        }
    }

    @Test(arguments: [24, 32, 33, 64])
    func sealsAndOpens(_ byteCount: Int) throws {
        let secret = WebhookSecret(bytes: Secrets.randomBytes(byteCount))!
        let sealed = WebhookSecretSealing.seal(secret, webhookID: Self.webhookID, serial: 7, key: Self.key)
        #expect(sealed.keyID == Self.key.keyID)
        #expect(sealed.serial == 7)
        #expect(sealed.ciphertext != secret.bytes)
        let encoded = sealed.encoded
        #expect(encoded.count == 1 + 4 + 8 + 1 + byteCount + 32)
        #expect(encoded[0] == SealedSecret.formatVersion)
        #expect(try SealedSecret(encoded: encoded) == sealed)
        #expect(try WebhookSecretSealing.open(encoded: encoded, webhookID: Self.webhookID, key: Self.key) == secret)
    }

    @Test func wrongKeyIsNamedByItsID() {
        let sealed = WebhookSecretSealing.seal(.generate(), webhookID: Self.webhookID, serial: 1, key: Self.key)
        #expect(throws: WebhookSecretSealError.wrongKey(keyID: Self.key.keyID)) {
            try WebhookSecretSealing.open(sealed, webhookID: Self.webhookID, key: WebhookKey.generate())
        }
    }

    @Test func anyAlteredByteOrAnotherWebhookFailsTheTag() throws {
        let encoded = WebhookSecretSealing.seal(.generate(), webhookID: Self.webhookID, serial: 1, key: Self.key).encoded
        // Every byte after the key ID (a changed key ID reads as another key; a changed version or
        // length does not decode at all).
        for i in 5..<encoded.count where i != 13 {
            var altered = encoded
            altered[i] ^= 0x01
            #expect(throws: WebhookSecretSealError.tampered) {
                try WebhookSecretSealing.open(encoded: altered, webhookID: Self.webhookID, key: Self.key)
            }
        }
        #expect(throws: WebhookSecretSealError.tampered) {
            try WebhookSecretSealing.open(encoded: encoded, webhookID: "0193A5C2-7E41-7B3A-9C1D-5F2E8A6B4C11", key: Self.key)
        }
    }

    @Test(arguments: [
        ([], WebhookSecretSealError.malformed),
        ([2] + [UInt8](repeating: 0, count: 77), WebhookSecretSealError.unknownFormat(2)),
        ([1, 0, 0, 0, 0], WebhookSecretSealError.malformed),
        ([1] + [UInt8](repeating: 0, count: 12) + [32] + [UInt8](repeating: 0, count: 63), WebhookSecretSealError.malformed),   // one byte short
        ([1] + [UInt8](repeating: 0, count: 12) + [23] + [UInt8](repeating: 0, count: 55), WebhookSecretSealError.malformed),   // 23-byte secret
    ] as [([UInt8], WebhookSecretSealError)])
    func refusesMalformedBytes(_ bytes: [UInt8], _ error: WebhookSecretSealError) {
        #expect(throws: error) { try SealedSecret(encoded: bytes) }
    }

    @Test func eachSerialAndWebhookGetsItsOwnPad() {
        let secret = WebhookSecret.generate()
        var ciphertexts = Set<[UInt8]>()
        for serial: Int64 in [0, 1, 2, 255, 256, .max, -1] {
            for id in [Self.webhookID, "0193A5C2-7E41-7B3A-9C1D-5F2E8A6B4C11"] {
                ciphertexts.insert(WebhookSecretSealing.seal(secret, webhookID: id, serial: serial, key: Self.key).ciphertext)
            }
        }
        #expect(ciphertexts.count == 14)
        // The pad is exactly the spelled-out HMAC, block 0 for a 32-byte secret.
        let message = Array("whsec".utf8) + [0, 36] + Array(Self.webhookID.utf8) + [0, 0, 0, 0, 0, 0, 0, 9] + [0]
        #expect(WebhookSecretSealing.pad(count: 32, webhookID: Self.webhookID, serial: 9, key: Self.key)
                == HMACSHA256.authenticate(message, key: Self.key.bytes))
        // Same inputs, same sealed bytes (deterministic: the serial carries the uniqueness).
        #expect(WebhookSecretSealing.seal(secret, webhookID: Self.webhookID, serial: 3, key: Self.key)
                == WebhookSecretSealing.seal(secret, webhookID: Self.webhookID, serial: 3, key: Self.key))
    }
}
