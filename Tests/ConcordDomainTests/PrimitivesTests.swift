@testable import ConcordDomain
import Testing

@Suite struct IdentifierTests {
    @Test(arguments: [
        ("9F983DBA-EC35-42B8-8773-B597CF782EDD/L0/001", true),
        ("a", true),
        (String(repeating: "x", count: 255), true),
        (String(repeating: "é", count: 127), true),          // 254 bytes
        (String(repeating: "é", count: 128), false),         // 256 bytes
        (String(repeating: "x", count: 256), false),
        ("", false),
        ("tab\there", false),
        ("new\nline", false),
        ("nul\u{0}", false),
        ("del\u{7F}", false),
        ("c1\u{85}", false),
        ("emoji 📷 ok", true),
    ])
    func localIdentifierValidation(_ input: String, _ valid: Bool) {
        #expect(Identifiers.isValidLocalIdentifier(input) == valid)
    }

    /// The word-at-a-time scan finds a control character at every offset of every word and in
    /// the tail, and lets non-control bytes that are close to the tested values pass.
    @Test func controlCharactersAreFoundAtEveryOffset() {
        for length in [8, 9, 15, 16, 17, 40] {
            for at in 0..<length {
                for bad in ["\u{0}", "\u{1F}", "\u{7F}", "\u{80}", "\u{9F}"] {
                    var id = String(repeating: "a", count: length)
                    id.replaceSubrange(id.index(id.startIndex, offsetBy: at)...id.index(id.startIndex, offsetBy: at), with: bad)
                    #expect(!Identifiers.isValidLocalIdentifier(id), "\(bad.unicodeScalars.first!.value) at \(at) of \(length)")
                }
                for good in [" ", "~", "\u{A0}", "\u{C0}", "é"] {   // 0x20, 0x7E, C2 A0, C3 80, C3 A9
                    var id = String(repeating: "a", count: length)
                    id.replaceSubrange(id.index(id.startIndex, offsetBy: at)...id.index(id.startIndex, offsetBy: at), with: good)
                    #expect(Identifiers.isValidLocalIdentifier(id), "\(good) at \(at) of \(length)")
                }
            }
        }
    }

    @Test(arguments: [
        (String(repeating: "A", count: 22), true),            // 16 bytes
        (String(repeating: "A", count: 21), false),           // 15.75 bytes
        (String(repeating: "A", count: 86), true),            // 64 bytes
        (String(repeating: "A", count: 87), false),           // 65 bytes
        (String(repeating: "A", count: 42) + "A", true),      // 43: SHA-256
        (String(repeating: "A", count: 42) + "B", true),      // non-zero unused bits: accepted (lenient)
        (String(repeating: "A", count: 42) + "E", true),
        (String(repeating: "A", count: 21) + "Q", true),      // 22 chars, last has 4 unused bits: Q = 16 ok
        (String(repeating: "a", count: 43), true),
        (String(repeating: "A", count: 42) + "=", false),     // padding
        (String(repeating: "A", count: 42) + "+", false),     // base64, not base64url
        (String(repeating: "-", count: 43).dropLast() + "A", true),
        (String(repeating: "_", count: 44), true),            // 33 bytes
        (String(repeating: "A", count: 45), false),           // 45 % 4 == 1
    ])
    func fingerprintValidation(_ input: String, _ valid: Bool) {
        #expect(Identifiers.isValidFingerprint(input) == valid)
    }

    /// Every byte value in every position agrees with the alphabet's definition (the validator
    /// works on bit masks, the definition on ranges), for the shortest, a SHA-256's and the
    /// longest fingerprint.
    @Test(arguments: [22, 43, 86]) func fingerprintValidationMatchesTheAlphabetForEveryByte(_ length: Int) {
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var bytes = [UInt8](repeating: UInt8(ascii: "A"), count: length)
        for at in 0..<length {
            for byte in 0...255 {
                bytes[at] = UInt8(byte)
                let valid = bytes.withUnsafeBufferPointer { Identifiers.isValidFingerprint(bytes: $0) }
                if valid != alphabet.contains(UInt8(byte)) { Issue.record("byte \(byte) at \(at) of \(length)") }
            }
            bytes[at] = UInt8(ascii: "A")
        }
    }

    static let fp43 = String(repeating: "A", count: 43)

    @Test(arguments: [
        ("9F983DBA-EC35-42B8-8773-B597CF782EDD:001:" + fp43, "9F983DBA-EC35-42B8-8773-B597CF782EDD", ObjectType.asset, fp43),
        ("9f983dba-ec35-42b8-8773-b597cf782edd:040:", "9F983DBA-EC35-42B8-8773-B597CF782EDD", .assetCollection, ""),
        ("9F983DBA-EC35-42B8-8773-B597CF782EDD:020:", "9F983DBA-EC35-42B8-8773-B597CF782EDD", .collectionList, ""),
    ])
    func cloudIdentifierParses(_ input: String, _ guid: String, _ type: ObjectType, _ fingerprint: String) throws {
        let c = try #require(CloudIdentifier(parsing: input))
        #expect(c.guid == guid)
        #expect(c.type == type)
        #expect(c.fingerprint == fingerprint)
        #expect(c.stringValue == guid + ":" + type.code + ":" + fingerprint)
    }

    @Test(arguments: [
        "",
        "garbage",
        "9F983DBA-EC35-42B8-8773-B597CF782EDD:001",                 // two parts
        "9F983DBA-EC35-42B8-8773-B597CF782EDD:001:" + fp43 + ":x",   // four parts
        "9F983DBA-EC35-42B8-8773-B597CF782EDD:002:" + fp43,          // unknown type
        "9F983DBA-EC35-42B8-8773-B597CF782ED:001:" + fp43,           // short GUID
        "9F983DBAXEC35-42B8-8773-B597CF782EDD:001:" + fp43,          // dash missing
        "9G983DBA-EC35-42B8-8773-B597CF782EDD:001:" + fp43,          // not hex
        "9F983DBA-EC35-42B8-8773-B597CF782EDD:001:short",            // bad fingerprint
        "9F983DBA-EC35-42B8-8773-B597CF782EDD:1:" + fp43,
    ])
    func cloudIdentifierRejects(_ input: String) {
        #expect(CloudIdentifier(parsing: input) == nil)
    }

    @Test(arguments: [
        ("2024-05-01T12:30:00Z", true), ("2024-05-01T12:30:00.123+02:00", true), ("2024-05-01t12:30:00z", true),
        ("2024-05-01", false), ("2024-13-01T00:00:00Z", false), ("2024-05-01T12:30:00", false), ("2024-05-01T25:00:00Z", false),
        ("2024-05-01T12:30:00.Z", false), ("2024-05-01T12:30:00+0200", false),
        // The day must exist in its month (RFC 3339 §5.7).
        ("2026-02-31T00:00:00Z", false), ("2026-04-31T00:00:00Z", false), ("2026-02-29T00:00:00Z", false),
        ("2024-02-29T00:00:00Z", true), ("2000-02-29T00:00:00Z", true), ("1900-02-29T00:00:00Z", false),
        ("2026-12-31T23:59:60Z", true),
    ])
    func rfc3339Validation(_ input: String, _ valid: Bool) {
        #expect(RFC3339.isValid(input) == valid)
    }

    @Test func rfc3339Formats() {
        #expect(RFC3339.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: 1_800_000_000.7)) == "2027-01-15T08:00:00Z")
    }
}

import Foundation

@Suite struct CryptoTests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        ("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"),
    ])
    func sha256KnownVectors(_ message: String, _ digest: String) {
        #expect(Hex.encode(SHA256.hash(Array(message.utf8))) == digest)
    }

    @Test func sha256IncrementalEqualsOneShot() {
        let data = (0..<1000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        var h = SHA256()
        h.update(data[0..<1])
        h.update(data[1..<64])
        h.update(data[64...])
        #expect(h.finalize() == SHA256.hash(data))
    }

    @Test(arguments: [
        // RFC 4231 test cases 1, 2 and 6 (key longer than the block).
        ([UInt8](repeating: 0x0b, count: 20), "Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        (Array("Jefe".utf8), "what do ya want for nothing?", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        ([UInt8](repeating: 0xaa, count: 131), "Test Using Larger Than Block-Size Key - Hash Key First",
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
    ])
    func hmacSHA256RFC4231(_ key: [UInt8], _ message: String, _ mac: String) {
        #expect(Hex.encode(HMACSHA256.authenticate(Array(message.utf8), key: key)) == mac)
    }

    @Test(arguments: [
        ([UInt8](), ""), ([0x66], "Zg"), ([0x66, 0x6f], "Zm8"), ([0x66, 0x6f, 0x6f], "Zm9v"), ([0xfb, 0xff], "-_8"),
    ])
    func base64urlRoundTrip(_ bytes: [UInt8], _ text: String) {
        #expect(Base64URL.encode(bytes) == text)
        #expect(Base64URL.decode(text) == bytes)
    }

    @Test func base64urlRejectsNonCanonical() {
        #expect(Base64URL.decode("Zh") == nil)     // low bits set
        #expect(Base64URL.decode("Z") == nil)
        #expect(Base64URL.decode("Zm9v=") == nil)
    }

    @Test(arguments: [
        // A SHA-256's 32 bytes, 43 characters; each length's tail (4k + 2, 4k + 3 characters).
        ([UInt8](0..<32), "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"),
        ([0xff, 0xff, 0xff, 0xff], "_____w"), ([0x00, 0x10, 0x83], "ABCD"), ([0x3e, 0xff, 0xbf, 0xfb], "Pv-_-w"),
    ])
    func base64urlLongerTexts(_ bytes: [UInt8], _ text: String) {
        #expect(Base64URL.encode(bytes) == text)
        #expect(Base64URL.decode(text) == bytes)
    }

    @Test(arguments: ["Zm9v+", "Zm9v/A", "Zm 9", "Zm9vZ", "_____x", "AAEC\u{e9}", "Zm\u{0}v", "=Zm9"])
    func base64urlRejects(_ text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    /// Every text of up to three characters over the alphabet and a few bytes outside it: decoded as
    /// the bit-by-bit definition decodes it, and a decoded text encodes back to itself.
    @Test func base64urlAgreesWithTheBitwiseDefinition() {
        let chars = Array("AZaz09-_BQgw+/= ".utf8) + [0x80, 0x00]
        func reference(_ text: [UInt8]) -> [UInt8]? {
            guard text.count % 4 != 1 else { return nil }
            var out: [UInt8] = [], acc: UInt32 = 0, bits = 0
            for c in text {
                guard let v = Identifiers.base64urlValue(c) else { return nil }
                acc = acc << 6 | UInt32(v); bits += 6
                if bits >= 8 { bits -= 8; out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits))); acc &= (1 << UInt32(bits)) - 1 }
            }
            return acc == 0 ? out : nil
        }
        var texts: [[UInt8]] = [[]]
        for a in chars { texts.append([a]); for b in chars { texts.append([a, b]); for c in chars { texts.append([a, b, c]) } } }
        for t in texts {
            let decoded = t.withUnsafeBytes { Base64URL.decode($0) }
            #expect(decoded == reference(t), "\(t)")
            if let decoded { #expect(Array(Base64URL.encode(decoded).utf8) == t) }
        }
    }

    @Test func randomTokensAreLongAndDistinct() {
        let a = Secrets.newToken(prefix: "x_"), b = Secrets.newToken(prefix: "x_")
        #expect(a != b)
        #expect(a.utf8.count == 2 + 43)   // 256 bits
        #expect(Secrets.randomBytes(16).count == 16)
    }

    @Test func constantTimeEquals() {
        #expect(Secrets.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!Secrets.constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!Secrets.constantTimeEquals([1, 2, 3], [1, 2]))
        #expect(Secrets.tokenHash("abc") == SHA256.hash(Array("abc".utf8)))
    }
}

@Suite struct ChangeTokenCodecTests {
    static let codec = ChangeTokenCodec(secret: Array("secret-one".utf8))
    static let a = DeviceRef(accountID: "ACC-A", deviceID: "DEV-1")
    static let b = DeviceRef(accountID: "ACC-A", deviceID: "DEV-2")

    @Test(arguments: [Int64(0), 1, 42, 1 << 40, Int64.max])
    func roundTrip(_ seq: Int64) {
        let t = Self.codec.encode(seq: seq, scope: .library(Self.a))
        #expect(Self.codec.decode(t, scope: .library(Self.a)) == seq)
    }

    @Test func rejectsOtherScopesForgeriesAndGarbage() {
        let t = Self.codec.encode(seq: 7, scope: .library(Self.a))
        let other = ChangeTokenCodec(secret: Array("secret-two".utf8))
        var flipped = Array(t.utf8)
        flipped[5] = flipped[5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let cases: [(String, ChangeTokenScope, ChangeTokenCodec)] = [
            (t, .library(Self.b), Self.codec),                             // another device
            (t, .library(DeviceRef(accountID: "ACC-B", deviceID: "DEV-1")), Self.codec),   // another account
            (t, .journals(accountID: "ACC-A"), Self.codec),                // another kind
            (t, .library(Self.a), other),                                  // another server secret
            (String(decoding: flipped, as: UTF8.self), .library(Self.a), Self.codec),   // garbled
            ("", .library(Self.a), Self.codec),
            ("not a token!", .library(Self.a), Self.codec),
            (String(t.dropLast()), .library(Self.a), Self.codec),
            (t + "AA", .library(Self.a), Self.codec),
        ]
        for (token, scope, codec) in cases {
            #expect(codec.decode(token, scope: scope) == nil, "\(token)")
        }
    }
}

@Suite struct LocalIdentifierOrderTests {
    /// `inLocalIdentifierOrder` sorts as `utf8Precedes` does (byte order): identifiers sharing
    /// their first 8 bytes, one a prefix of another, upper before lower case, and multi-byte
    /// UTF-8 after ASCII, whatever the input's order.
    @Test(arguments: [
        ["b", "a"],
        ["ABCDEFGH-2", "ABCDEFGH-10", "ABCDEFGH", "ABCDEFGH-1"],
        ["é📷", "z", "Z", "e\u{301}", "ABCDEFGHIJ", "ABCDEFGHI"],
        ["only"],
        [],
    ])
    func sortsByBytes(_ identifiers: [String]) {
        let objects = identifiers.map { StoredObject(object: .asset($0, fingerprint: "fp-\($0)"), link: nil) }
        let sorted = objects.inLocalIdentifierOrder()
        #expect(sorted.map(\.object.localIdentifier) == identifiers.sorted { $0.utf8Precedes($1) })
        #expect(sorted.map(\.object.fingerprint) == sorted.map { "fp-\($0.object.localIdentifier)" })
    }
}
