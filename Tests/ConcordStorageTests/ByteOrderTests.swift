import ConcordBytes
import Foundation
import Testing

@testable import ConcordStorage

/// The order SQLite batches bind their keys in (`ByteOrder.positions`, `SQLiteTransaction.inKeyOrder`): memcmp order of the
/// UTF-8 bytes (SQLite's BINARY collation), stable for equal keys, whether keys differ within the
/// first 8 bytes (the integer prefix) or only after them.
@Suite struct ByteOrderTests {
    @Test(arguments: [
        // (keys, expected positions)
        ([String](), [Int]()),
        (["B", "A"], [1, 0]),
        (["AB", "A", "ABC", ""], [3, 1, 0, 2]),                               // a prefix first, within 8 bytes
        (["ABCDEFGHIJ", "ABCDEFGH", "ABCDEFGHI"], [1, 2, 0]),                 // and past them
        (["ABCDEFGH-2", "ABCDEFGH-10", "ABCDEFGH-1"], [2, 1, 0]),             // bytes, not numbers
        (["x", "A", "x", "A"], [1, 3, 0, 2]),                                 // stable
        (["ABCDEFGHZ", "ABCDEFGHZ", "ABCDEFGHA"], [2, 0, 1]),
        (["a", "Z", "0", "~"], [2, 1, 0, 3]),                                 // ASCII order: digits, upper, lower
        (["é", "z", "e\u{301}", "\u{1F600}"], [2, 1, 0, 3]),                  // UTF-8 bytes, not canonical equivalence
        (["A\u{7F}", "A~", "A\u{80}"], [1, 0, 2]),
    ])
    func order(keys: [String], expected: [Int]) {
        #expect(ByteOrder.positions(of: keys) == expected)
        #expect(SQLiteTransaction.inKeyOrder(keys) == expected.map { keys[$0] })
    }

    /// Random PhotoKit-shaped identifiers: the same order as sorting their bytes.
    @Test func matchesSortedBytes() {
        var generator = SystemRandomNumberGenerator()
        let keys = (0..<2000).map { i in
            i % 7 == 0 ? "SAMEPREFIX-\(UInt32.random(in: 0...999, using: &generator))"
                       : String(format: "%08X-0011-4000-8000-000000000011/L0/001", UInt32.random(in: 0...UInt32.max, using: &generator))
        }
        let expected = keys.indices.sorted { a, b in
            let x = Array(keys[a].utf8), y = Array(keys[b].utf8)
            return x.lexicographicallyPrecedes(y) || (x == y && a < b)
        }
        #expect(ByteOrder.positions(of: keys) == expected)
    }
}
