@testable import ConcordMappingIndex
import Testing

/// `FingerprintBits`: a number is in the set exactly when it was inserted, across word boundaries
/// and growth.
@Suite struct FingerprintBitsTests {
    static let cases: [(inserted: [UInt32], absent: [UInt32])] = [
        ([], [0, 1, 63, 64, 1_000_000]),
        ([0], [1, 63, 64]),
        ([63, 64], [62, 65, 0, 127]),
        ([1_000_000, 5], [999_999, 1_000_001, 4, 6, 64]),
        ([127, 128, 129, 4095], [126, 130, 4094, 4096]),
    ]

    @Test(arguments: Self.cases) func containsExactlyWhatWasInserted(_ c: (inserted: [UInt32], absent: [UInt32])) {
        var bits = FingerprintBits()
        for n in c.inserted { bits.insert(n) }
        bits.insert(c.inserted.first ?? 0)   // inserting twice changes nothing
        for n in c.inserted { #expect(bits.contains(n), "\(n)") }
        for n in c.absent where !c.inserted.contains(n) && n != (c.inserted.first ?? 0) { #expect(!bits.contains(n), "\(n)") }
    }
}
