import ConcordBytes
import Foundation
import Testing

/// A GUID's key from its 36 bytes: canonical upper case always, lower case only when asked, and
/// nothing else — each byte that is not a hex digit, and a dash out of place, refused.
@Test(arguments: [
    ("0123ABCD-4567-89EF-0123-456789ABCDEF", true, true),
    ("0123abcd-4567-89ef-0123-456789abcdef", false, true),
    ("0123ABCD-4567-89EF-0123-456789ABCDEG", false, false),
    ("0123ABCD-4567-89EF-0123-456789ABCDEg", false, false),
    ("0123ABCD-4567-89EF-0123-456789ABCDE@", false, false),
    ("0123ABCD-4567-89EF-0123-456789ABCDE`", false, false),
    ("0123ABCD-4567-89EF-0123-456789ABCDE/", false, false),
    ("0123ABCD-4567-89EF-0123-456789ABCDE:", false, false),
    ("0123ABCD-4567-89EF-0123-456789ABCDE ", false, false),
    ("0123ABCD-4567-89EF-01234-56789ABCDEF", false, false),
    ("0123ABCD-4567-89EF-0123-456789ABCDE", false, false),
]) func aUUIDBitsIsReadFromHexDigitsOnly(_ guid: String, _ canonical: Bool, _ anyCase: Bool) {
    var s = guid
    let strict = s.withUTF8 { UUIDBits(bytes: $0) }
    let lenient = s.withUTF8 { UUIDBits(bytes: $0, anyCase: true) }
    #expect((strict != nil) == canonical && (lenient != nil) == anyCase, "\(guid)")
    if let lenient { #expect(lenient.string == guid.uppercased() && lenient == UUIDBits(guid.uppercased())) }
}

/// Every byte value in every digit position agrees with the definition (the parser reads 8 bytes
/// at a time with bit tricks; the definition is a set of characters and `UInt64(_:radix:)`).
@Test func aUUIDBitsAgreesWithTheDefinitionForEveryByteInEveryPosition() {
    let upper = Set("0123456789ABCDEF".utf8), lower = Set("abcdef".utf8)
    let base = Array("0123ABCD-4567-89EF-0123-456789ABCDEF".utf8)
    for position in base.indices where base[position] != UInt8(ascii: "-") {
        for byte in UInt8.min...UInt8.max {
            var bytes = base
            bytes[position] = byte
            let strict = bytes.withUnsafeBufferPointer { UUIDBits(bytes: $0) }
            let lenient = bytes.withUnsafeBufferPointer { UUIDBits(bytes: $0, anyCase: true) }
            #expect((strict != nil) == upper.contains(byte), "position \(position), byte \(byte)")
            #expect((lenient != nil) == (upper.contains(byte) || lower.contains(byte)), "position \(position), byte \(byte)")
            guard let lenient else { continue }
            let digits = String(decoding: bytes.filter { $0 != UInt8(ascii: "-") }, as: UTF8.self)
            #expect(lenient.high == UInt64(digits.prefix(16), radix: 16) && lenient.low == UInt64(digits.suffix(16), radix: 16), "\(digits)")
        }
    }
}

/// Digits the index writes into answers, 8 at a time.
@Suite struct UUIDBitsSpellingTests {
    /// The index writes a GUID's 32 hex digits 8 at a time; a digit-by-digit spelling is the reference.
    @Test func guidDigitsAreTheCanonicalSpelling() throws {
        var keys = [UUIDBits(high: 0, low: 0), UUIDBits(high: .max, low: .max), UUIDBits(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210)]
        var state: UInt64 = 0x5EED
        for _ in 0..<1000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let high = state
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            keys.append(UUIDBits(high: high, low: state))
        }
        for key in keys {
            let digits = String(format: "%016llX%016llX", key.high, key.low)
            var reference = ""
            for (i, c) in digits.enumerated() {
                if [8, 12, 16, 20].contains(i) { reference.append("-") }
                reference.append(c)
            }
            #expect(key.string == reference)
            #expect(UUIDBits(reference) == key)
        }
        let uuid = UUID().uuidString
        #expect(try #require(UUIDBits(uuid)).string == uuid)
    }
}
