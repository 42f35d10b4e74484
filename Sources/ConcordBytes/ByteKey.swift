#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A string compared and hashed as its UTF-8 bytes. Identifiers are byte strings and
/// storage compares them byte for byte, while Swift's `String ==` uses canonical equivalence (an
/// NFC "É" equals an NFD "É"): the index must not merge what storage keeps apart.
public struct ByteKey: Hashable, Sendable {
    public let string: String
    public init(_ string: String) { self.string = string }

    public static func == (a: ByteKey, b: ByteKey) -> Bool {
        var x = a.string, y = b.string
        return x.withUTF8 { p in y.withUTF8 { q in p.count == q.count && (p.count == 0 || memcmp(p.baseAddress!, q.baseAddress!, p.count) == 0) } }
    }

    public func hash(into hasher: inout Hasher) {
        var s = self.string
        s.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
