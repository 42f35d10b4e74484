import ConcordBytes
import Testing

/// `ByteKey`: equal exactly when the UTF-8 bytes are, and hashed alike when equal.
@Suite struct ByteKeyTests {
    @Test(arguments: [
        ("", "", true),
        ("a", "a", true),
        ("a", "b", false),
        ("a", "ab", false),
        // NFC "É" and NFD "E" + combining acute: equal as Swift strings, different bytes.
        ("\u{C9}", "E\u{301}", false),
        ("12345678-ABCD-4EF0-8123-456789ABCDEF/L0/001", "12345678-ABCD-4EF0-8123-456789ABCDEF/L0/001", true),
        ("12345678-ABCD-4EF0-8123-456789ABCDEF/L0/001", "12345678-ABCD-4EF0-8123-456789ABCDEF/L0/002", false),
        ("short", String(repeating: "short", count: 1), true),
    ])
    func equality(_ a: String, _ b: String, _ equal: Bool) {
        #expect((ByteKey(a) == ByteKey(b)) == equal)
        if equal { #expect(ByteKey(a).hashValue == ByteKey(b).hashValue) }
    }

    @Test func substringsAndBuiltStringsKeyAlike() {
        let long = "ABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789"
        let built = String(long.dropFirst(0))   // another storage of the same bytes
        var set = Set<ByteKey>([ByteKey(long)])
        #expect(!set.insert(ByteKey(built)).inserted)
        #expect(set.insert(ByteKey(String(long.dropLast()))).inserted)
    }
}
