@testable import ConcordDomain
import Foundation
import Testing

/// The mapping index's GUID → record table: every record found by both lookups (one key, and a
/// batch in passes), unknown GUIDs not found, across the growth of the table.
@Suite struct RecordTableTests {
    @Test(arguments: [0, 1, 7, 8, 9, 1000, 20_000])
    func everyRecordIsFoundAndNoOtherGUID(_ count: Int) {
        var generator = SeededGenerator(state: UInt64(count) + 1)
        var records: [AccountMappingIndex.Record] = []
        var table = RecordTable()
        for n in 0..<count {
            let key = GUIDKey(high: generator.next(), low: generator.next())
            records.append(.init(guid: key, fingerprint: 0, type: .asset, key: AccountMappingIndex.noKey))
            table.insert(key, number: UInt32(n)) { records[Int($0)].guid }
        }
        #expect(table.count == count)
        #expect(table.buckets.count >= 2 * count)
        let unknown = (0..<100).map { _ in GUIDKey(high: generator.next(), low: generator.next()) }
        for (n, record) in records.enumerated() {
            #expect(table.number(of: record.guid) { records[Int($0)].guid } == UInt32(n))
        }
        for key in unknown { #expect(table.number(of: key) { records[Int($0)].guid } == nil) }
        // A batch mixing known, unknown and absent keys, answered in order.
        var keys: [GUIDKey?] = records.map(\.guid) + unknown
        keys.append(nil)
        let numbers = records.withUnsafeBufferPointer { table.numbers(of: keys, records: $0) }
        #expect(numbers == (0..<count).map(Int32.init) + [Int32](repeating: -1, count: unknown.count + 1))
    }

    /// Keys that share their first bucket are found by probing, in a batch too.
    @Test func keysInTheSameBucketAreProbed() {
        var records: [AccountMappingIndex.Record] = []
        var table = RecordTable()
        // Same high half and low halves that differ only above the bits the hash keeps: one bucket.
        for n in 0..<6 {
            let key = GUIDKey(high: 42, low: UInt64(n) << 60)
            records.append(.init(guid: key, fingerprint: 0, type: .asset, key: AccountMappingIndex.noKey))
            table.insert(key, number: UInt32(n)) { records[Int($0)].guid }
        }
        let keys: [GUIDKey?] = records.map(\.guid).reversed()
        let numbers = records.withUnsafeBufferPointer { table.numbers(of: keys, records: $0) }
        #expect(numbers == [5, 4, 3, 2, 1, 0])
    }
}


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
]) func aGUIDKeyIsReadFromHexDigitsOnly(_ guid: String, _ canonical: Bool, _ anyCase: Bool) {
    var s = guid
    let strict = s.withUTF8 { GUIDKey(bytes: $0) }
    let lenient = s.withUTF8 { GUIDKey(bytes: $0, anyCase: true) }
    #expect((strict != nil) == canonical && (lenient != nil) == anyCase, "\(guid)")
    if let lenient { #expect(lenient.string == guid.uppercased() && lenient == GUIDKey(guid.uppercased())) }
}

/// Every byte value in every digit position agrees with the definition (the parser reads 8 bytes
/// at a time with bit tricks; the definition is a set of characters and `UInt64(_:radix:)`).
@Test func aGUIDKeyAgreesWithTheDefinitionForEveryByteInEveryPosition() {
    let upper = Set("0123456789ABCDEF".utf8), lower = Set("abcdef".utf8)
    let base = Array("0123ABCD-4567-89EF-0123-456789ABCDEF".utf8)
    for position in base.indices where base[position] != UInt8(ascii: "-") {
        for byte in UInt8.min...UInt8.max {
            var bytes = base
            bytes[position] = byte
            let strict = bytes.withUnsafeBufferPointer { GUIDKey(bytes: $0) }
            let lenient = bytes.withUnsafeBufferPointer { GUIDKey(bytes: $0, anyCase: true) }
            #expect((strict != nil) == upper.contains(byte), "position \(position), byte \(byte)")
            #expect((lenient != nil) == (upper.contains(byte) || lower.contains(byte)), "position \(position), byte \(byte)")
            guard let lenient else { continue }
            let digits = String(decoding: bytes.filter { $0 != UInt8(ascii: "-") }, as: UTF8.self)
            #expect(lenient.high == UInt64(digits.prefix(16), radix: 16) && lenient.low == UInt64(digits.suffix(16), radix: 16), "\(digits)")
        }
    }
}

/// New IDs are version-7 UUIDs in upper case, as `UUID().uuidString` spells them: each greater
/// than the one before (storage's B-trees fill at the end), their time the current one.
@Test func newIDsAreIncreasingVersion7UUIDsInUpperCase() {
    let before = Date().timeIntervalSince1970
    let ids = (0..<10_000).map { _ in Identifiers.newUUID() }
    let after = Date().timeIntervalSince1970
    #expect(Set(ids).count == ids.count)
    #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 })
    for id in ids {
        let parsed = UUID(uuidString: id)
        #expect(parsed?.uuidString == id, "\(id)")
        let version = id[id.index(id.startIndex, offsetBy: 14)], variant = id[id.index(id.startIndex, offsetBy: 19)]
        #expect(version == "7" && "89AB".contains(variant), "\(id)")
    }
    // 48 bits of milliseconds: 10 000 IDs borrow at most a few milliseconds ahead.
    let hex = ids.last!.replacingOccurrences(of: "-", with: "").prefix(12)
    let seconds = Double(UInt64(hex, radix: 16)!) / 1000
    #expect(seconds >= before - 0.002 && seconds <= after + 0.1, "\(seconds) not in \(before)...\(after)")
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
