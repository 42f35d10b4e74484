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

    /// Lengths first (a native string knows its UTF-8 count), then the bytes in place: no copy of
    /// either string, which dictionaries keyed by identifiers compare on every hit.
    public static func == (a: ByteKey, b: ByteKey) -> Bool {
        let x = a.string.utf8, y = b.string.utf8
        guard x.count == y.count else { return false }
        let same = x.withContiguousStorageIfAvailable { p in
            y.withContiguousStorageIfAvailable { q in p.count == 0 || memcmp(p.baseAddress!, q.baseAddress!, p.count) == 0 }
        }
        if let same, let same { return same }
        return x.elementsEqual(y)
    }

    public func hash(into hasher: inout Hasher) {
        if let _ = self.string.utf8.withContiguousStorageIfAvailable({ hasher.combine(bytes: UnsafeRawBufferPointer($0)) }) { return }
        var s = self.string
        s.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
