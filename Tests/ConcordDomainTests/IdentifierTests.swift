@testable import ConcordDomain
import Foundation
import Testing

/// New IDs are version-7 UUIDs in upper case, as `UUID().uuidString` spells them: each greater
/// than the one before (storage's B-trees fill at the end), their time their clock's (a fixed one
/// here, so the bounds are exact whatever the machine is doing).
@Test func newIDsAreIncreasingVersion7UUIDsInUpperCase() {
    let now: UInt64 = 1_800_000_000_123
    let clock = UUIDClock(milliseconds: { now })
    let ids = (0..<10_000).map { _ in Identifiers.newUUID(clock: clock) }
    #expect(Set(ids).count == ids.count)
    #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 })
    for id in ids {
        let parsed = UUID(uuidString: id)
        #expect(parsed?.uuidString == id, "\(id)")
        let version = id[id.index(id.startIndex, offsetBy: 14)], variant = id[id.index(id.startIndex, offsetBy: 19)]
        #expect(version == "7" && "89AB".contains(variant), "\(id)")
    }
    // 48 bits of milliseconds: 10 000 IDs in one millisecond borrow two more (4096 a millisecond).
    let first = ids.first!.replacingOccurrences(of: "-", with: "").prefix(12)
    #expect(UInt64(first, radix: 16)! == now)
    // 10 000 = 2 × 4096 + 1808: the last ID is two milliseconds past the clock's, exactly.
    let last = ids.last!.replacingOccurrences(of: "-", with: "").prefix(12)
    #expect(UInt64(last, radix: 16)! == now + 2)
}

/// The counter: from 0 in a new millisecond, up by one within one, borrowing the next
/// millisecond past 4095 or when the clock goes back.
@Test func theUUIDClockAlwaysIncreases() {
    let clock = UUIDClock()
    var answers: [String] = []
    for now: UInt64 in [1000, 1000, 1000, 999, 1001, 5000] {
        let (ms, counter) = clock.next(now: now)
        answers.append("\(ms).\(counter)")
    }
    #expect(answers == ["1000.0", "1000.1", "1000.2", "1000.3", "1001.0", "5000.0"])
    for _ in 0..<4095 { _ = clock.next(now: 5000) }
    let (ms, counter) = clock.next(now: 5000)
    #expect(ms == 5001 && counter == 0)
}

/// New identifiers' random bits come from a buffer refilled 64 words at a time: across refills
/// they stay distinct, and so do the identifiers' random halves.
@Test func randomWordsStayDistinctAcrossRefills() {
    let words = RandomWords()
    let drawn = (0..<200).map { _ in words.next() }
    #expect(Set(drawn).count == 200)
    let ids = (0..<200).map { _ in Identifiers.newUUID() }
    #expect(Set(ids.map { $0.suffix(17) }).count == 200)
}
