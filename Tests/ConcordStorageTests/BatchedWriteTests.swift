import ConcordDomain
@testable import ConcordStorage
import ConcordTestSupport
import Foundation
import Testing

/// The write path in batches (item 2): a batch is a few multi-row statements, in chunks of
/// up to 512 rows, and must store exactly what row-by-row statements stored — on every engine, for
/// batches larger than a chunk and with a remainder that is not one.
@Suite struct BatchedWriteTests {
    static let g1 = "0C44A1D2-0000-4000-8000-000000000001", g2 = "0C44A1D2-0000-4000-8000-000000000002"
    static let device = DeviceRef(accountID: "acc", deviceID: "mac")

    static func open(_ engine: TestEngine) throws -> TestDatabase {
        let db = try TestDatabase(engine)
        try db.store.writeServer { tx in try tx.insertAccount(accountID: "acc", name: "n", tokenHash: [1], createdAt: Date()) }
        try db.store.write(account: "acc") { tx in try tx.insertDevice(Self.device, name: "Mac", platform: nil, tokenHash: [2], createdAt: Date()) }
        return db
    }

    static func id(_ n: Int) -> String { String(format: "%08X-AAAA-4000-8000-%012X/L0/001", (n &* 2_654_435_761) & 0xFFFF_FFFF, n) }

    /// 1 337 objects (two full chunks and a remainder of 313) in random identifier order, a later
    /// duplicate of an identifier winning, then an update of some of them, then links for all, keys
    /// for some and fingerprints filled into fingerprint-less records — read back field by field.
    @Test(arguments: TestEngine.available) func largeBatchesStoreWhatRowByRowStored(_ engine: TestEngine) throws {
        let db = try Self.open(engine)
        let n = 1_337
        var sent = (0..<n).map { i in
            StoredObject(object: .asset(Self.id(i), fingerprint: i % 7 == 0 ? "" : contentFingerprint(i), creationDate: i % 3 == 0 ? nil : "2024-05-01T10:00:\(String(format: "%02d", i % 60))Z",
                                        photoKitCloudIdentifier: i % 5 == 0 ? "K\(i):001:" : nil), link: nil)
        }
        sent[10].object.title = "first spelling"
        var duplicate = sent[10]
        duplicate.object.title = "the later one wins"
        duplicate.object.isFavorite = true
        try db.store.write(account: "acc") { tx in try tx.putObjects(Self.device, sent + [duplicate]) }
        var stored = try db.store.read(account: "acc") { tx in try tx.allObjects(Self.device) }
        #expect(stored.count == n)
        let byID = Dictionary(uniqueKeysWithValues: stored.map { ($0.object.localIdentifier, $0) })
        for (i, s) in sent.enumerated() where i != 10 { #expect(byID[s.object.localIdentifier] == s, "object \(i)") }
        #expect(byID[Self.id(10)]?.object == duplicate.object)

        // Records for every object, in one batch: creation orders follow the batch's order.
        let records = (0..<n).map { i in CloudRecord(guid: String(format: "0C44A1D2-0000-4000-8000-%012X", i), type: .asset, fingerprint: i % 7 == 0 ? "" : contentFingerprint(i)) }
        try db.store.write(account: "acc") { tx in
            try tx.insertRecords(records, createdAt: Date(timeIntervalSince1970: 1_800_000_000))
            try tx.setLinks(Self.device, (0..<n).map { (Self.id($0), records[$0].guid) })
            try tx.addRecordKeys((0..<n).filter { $0 % 5 == 0 }.map { (records[$0].guid, ObjectKey(type: .asset, a: "K\($0)")) }
                                 + [(records[0].guid, ObjectKey(type: .asset, a: "K0"))])   // already there: ignored
            // The first fill of a record wins; records that have a fingerprint keep it.
            try tx.fillRecordFingerprints([(records[7].guid, "first-fill"), (records[7].guid, "second-fill"), (records[8].guid, "not-taken")])
        }
        #expect(try db.store.read(account: "acc") { tx in try tx.recordCount() } == n)
        let back = try db.store.read(account: "acc") { tx in try tx.records(guids: records.map(\.guid)) }
        var expected = records
        expected[7].fingerprint = "first-fill"
        #expect(back == expected)   // oldest first: the batch's order
        stored = try db.store.read(account: "acc") { tx in try tx.allObjects(Self.device) }
        #expect(stored.allSatisfy { s in s.link?.guid == records[Int(s.object.localIdentifier.suffix(19).prefix(12), radix: 16)!].guid })
        let keys = try db.store.read(account: "acc") { tx in try tx.recordKeys(guids: records.map(\.guid)) }
        #expect(keys.count == (0..<n).filter { $0 % 5 == 0 }.count)
        #expect(keys[records[0].guid] == [ObjectKey(type: .asset, a: "K0")])
        // A second link to a record linked on this device is refused, batched or not.
        #expect(throws: (any Error).self) {
            try db.store.write(account: "acc") { tx in try tx.setLinks(Self.device, [(Self.id(1), records[2].guid)]) }
        }
    }

    /// setLinks on identifiers the device lacks changes nothing; an identifier given twice takes its
    /// last link, as one statement per link did.
    @Test(arguments: TestEngine.available) func linksForMissingObjectsAreIgnoredAndTheLastWins(_ engine: TestEngine) throws {
        let db = try Self.open(engine)
        try db.store.write(account: "acc") { tx in
            try tx.putObjects(Self.device, [StoredObject(object: .asset("A", fingerprint: contentFingerprint(1)), link: nil)])
            try tx.insertRecords([CloudRecord(guid: Self.g1, type: .asset, fingerprint: contentFingerprint(1)),
                                  CloudRecord(guid: Self.g2, type: .asset, fingerprint: contentFingerprint(1))], createdAt: Date())
            try tx.setLinks(Self.device, [("A", Self.g1), ("missing", Self.g2), ("A", Self.g2)])
        }
        let stored = try db.store.read(account: "acc") { tx in try tx.allObjects(Self.device) }
        #expect(stored.map(\.object.localIdentifier) == ["A"])
        #expect(stored.first?.link?.guid == Self.g2)
    }
}
