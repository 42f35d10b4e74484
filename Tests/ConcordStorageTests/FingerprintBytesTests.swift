import ConcordDomain
import Testing

@testable import ConcordStorage

/// PostgreSQL's stored form of fingerprints (`FingerprintBytes`): canonical base64url as the bytes it
/// encodes, everything else tagged with a 0x00 byte, and each form reads back as the text written.
@Suite struct FingerprintBytesTests {
    static let sha256 = "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA"

    /// Texts and their stored bytes; nil: stored tagged (0x00, then the text's UTF-8).
    static let cases: [(text: String, bytes: [UInt8]?)] = [
        ("", []),                  // no fingerprint
        ("AQID", [1, 2, 3]),       // canonical
        ("AQI", [1, 2]),
        ("AQ", [1]),
        ("AAECAw", nil),           // canonical, but its bytes begin with 0x00
        ("AR", nil),               // unused bits not zero
        ("AQIDB", nil),            // 4k + 1 characters
        ("AQ==", nil),             // padded
        ("a+b/", nil),             // base64, not base64url
        ("sha256:\u{E9}", nil),    // any other text
        ("E\u{301}", nil),         // its bytes as written
    ]

    @Test(arguments: 0..<FingerprintBytesTests.cases.count)
    func storedForm(_ i: Int) {
        let text = Self.cases[i].text
        var tagged: [UInt8] = [0]
        tagged.append(contentsOf: text.utf8)
        let bytes = Self.cases[i].bytes ?? tagged
        #expect(FingerprintBytes.stored(text) == bytes)
        #expect(bytes.withUnsafeBytes { FingerprintBytes.text($0) }.utf8.elementsEqual(text.utf8))
    }

    @Test func aSHA256IsStoredAsItsThirtyTwoBytes() {
        let stored = FingerprintBytes.stored(Self.sha256)
        #expect(stored == Array(1...32))
        #expect(stored.withUnsafeBytes { FingerprintBytes.text($0) } == Self.sha256)
    }

    /// The rule as first written (decode, then encode back to check the text is canonical), which
    /// `FingerprintBytes` must agree with without the second encoding.
    static func byRoundTrip(_ text: String) -> [UInt8] {
        guard !text.isEmpty else { return [] }
        if let bytes = Base64URL.decode(text), let first = bytes.first, first != 0, Base64URL.encode(bytes) == text { return bytes }
        return [0] + Array(text.utf8)
    }

    static func textByRoundTrip(_ bytes: [UInt8]) -> String {
        guard let first = bytes.first else { return "" }
        if first == 0 { return String(decoding: bytes[1...], as: UTF8.self) }
        return Base64URL.encode(bytes)
    }

    /// The same bytes as the round-trip rule, over texts of every short length made of base64url
    /// characters and a few others.
    @Test func agreesWithTheRoundTripRule() {
        let chars = Array("AQgw_-09+=é".unicodeScalars).map(String.init)
        var texts = [""]
        for a in chars { texts.append(a); for b in chars { texts.append("\(a)\(b)"); for c in chars { texts.append("\(a)\(b)\(c)"); texts.append("A\(a)\(b)\(c)w") } } }
        for t in texts {
            #expect(FingerprintBytes.stored(t) == Self.byRoundTrip(t), "\(t)")
            let s = Self.byRoundTrip(t)
            #expect(s.withUnsafeBytes { FingerprintBytes.text($0) } == Self.textByRoundTrip(s))
        }
    }
}
