import ConcordBytes
import ConcordDomain
import ConcordTestSupport
@testable import ConcordMappingIndex
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
            let key = UUIDBits(high: generator.next(), low: generator.next())
            records.append(.init(guid: key, fingerprint: 0, type: .asset, key: AccountMappingIndex.noKey))
            table.insert(key, number: UInt32(n)) { records[Int($0)].guid }
        }
        #expect(table.count == count)
        #expect(table.buckets.count >= 2 * count)
        let unknown = (0..<100).map { _ in UUIDBits(high: generator.next(), low: generator.next()) }
        for (n, record) in records.enumerated() {
            #expect(table.number(of: record.guid) { records[Int($0)].guid } == UInt32(n))
        }
        for key in unknown { #expect(table.number(of: key) { records[Int($0)].guid } == nil) }
        // A batch mixing known, unknown and absent keys, answered in order.
        var keys: [UUIDBits?] = records.map(\.guid) + unknown
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
            let key = UUIDBits(high: 42, low: UInt64(n) << 60)
            records.append(.init(guid: key, fingerprint: 0, type: .asset, key: AccountMappingIndex.noKey))
            table.insert(key, number: UInt32(n)) { records[Int($0)].guid }
        }
        let keys: [UUIDBits?] = records.map(\.guid).reversed()
        let numbers = records.withUnsafeBufferPointer { table.numbers(of: keys, records: $0) }
        #expect(numbers == [5, 4, 3, 2, 1, 0])
    }
}
