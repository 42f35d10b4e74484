#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Byte strings in byte order: `memcmp` of their bytes, the shorter first when one is a prefix of
/// the other. It is SQLite's BINARY collation, PostgreSQL's "C" and the order the API lists
/// identifiers in; Swift's `String <` compares Unicode scalars, and is several times slower.
public enum ByteOrder {
    /// The positions `0..<count` sorted by their keys (`key(i)`, valid during the call), equal keys
    /// in position order. Each key's first 8 bytes, as one big-endian number, decide almost every
    /// comparison of random identifiers; only equal prefixes compare the rest.
    @inlinable
    public static func positions(count: Int, key: (Int) -> UnsafeBufferPointer<UInt8>) -> [Int] {
        var keyed = [(prefix: UInt64, position: Int32)](unsafeUninitializedCapacity: count) { out, written in
            for i in 0..<count {
                let k = key(i)
                var prefix: UInt64 = 0
                for j in 0..<8 { prefix = prefix << 8 | UInt64(j < k.count ? k[j] : 0) }
                out[i] = (prefix, Int32(i))
            }
            written = count
        }
        keyed.sort { x, y in
            if x.prefix != y.prefix { return x.prefix < y.prefix }
            let a = key(Int(x.position)), b = key(Int(y.position))
            let common = min(a.count, b.count)
            let order = common == 0 ? 0 : memcmp(a.baseAddress!, b.baseAddress!, common)
            if order != 0 { return order < 0 }
            return a.count != b.count ? a.count < b.count : x.position < y.position
        }
        return keyed.map { Int($0.position) }
    }

    /// The positions of `strings` sorted by their UTF-8 bytes, equal strings in position order.
    public static func positions(of strings: [String]) -> [Int] {
        let list = IdentifierList(strings)
        return list.bytes.withUnsafeBufferPointer { bytes in
            self.positions(count: list.count) { i in
                let span = list.spans[i]
                return UnsafeBufferPointer(rebasing: bytes[Int(span.start)..<Int(span.start) + Int(span.length)])
            }
        }
    }
}
