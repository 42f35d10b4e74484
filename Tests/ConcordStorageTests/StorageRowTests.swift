import ConcordDomain
@testable import ConcordStorage
import ConcordTestSupport
import Foundation
import Testing

/// `StoredObject.storageRow`: where storage keeps an object's row (SQLite's rowid, PostgreSQL's
/// object number), read with the object, reported by the writes that store it, and taken by
/// `setLinks(_:_:rows:)` to find the row without the index by local identifier. A row number is a
/// hint: a wrong one costs a lookup, never a link.
@Suite struct StorageRowTests {
    static func guid(_ n: Int) -> String { String(format: "0C44A1D2-0000-4000-8000-%012X", n) }

    /// How many links the transaction set by the rows it was given.
    static func linksSetByRow(_ tx: any AccountWriteTransaction) -> Int? {
        (tx as? SQLiteTransaction)?.linksSetByRow ?? (tx as? PostgresTransaction)?.linksSetByNumber
    }

    /// Collects the rows that `putObjects` mutations report, by local identifier, and every object
    /// reported without one or with a row other than one reported for it before.
    final class ReportedRows: TransactionObserver {
        var rows: [String: Int64] = [:]
        var unreported: [String] = [], moved: [String] = []
        func transactionDidChange(_ mutation: @autoclosure () -> MappingMutation) {
            guard case .putObjects(_, let packed) = mutation() else { return }
            packed.forEach(device: "") { row in
                guard let r = row.storageRow else { return self.unreported.append(row.localIdentifier) }
                if let earlier = self.rows[row.localIdentifier], earlier != r { self.moved.append(row.localIdentifier) }
                self.rows[row.localIdentifier] = r
            }
        }
    }

    @Test(arguments: TestEngine.available) func writesReportTheRowsReadsFind(_ engine: TestEngine) throws {
        let db = try TestDatabase(engine)
        let device = DeviceRef(accountID: "acc", deviceID: "d")
        try db.store.writeServer { tx in try tx.insertAccount(accountID: "acc", name: "A", tokenHash: [7], createdAt: Date()) }
        let reported = ReportedRows()
        try db.store.write(account: "acc") { tx in
            tx.add(observer: reported)
            try tx.insertDevice(device, name: "d", platform: nil, tokenHash: [1], createdAt: Date())
            try tx.insertNewObjects(device, [StoredObject(object: .asset("n1", fingerprint: "f1"), link: nil),
                                             StoredObject(object: .asset("n2", fingerprint: "f2"), link: nil)])
            // One updated, one new, one new named twice (the last one counts).
            try tx.putObjects(device, [StoredObject(object: .asset("n1", fingerprint: "f1b"), link: nil),
                                       StoredObject(object: .asset("p1", fingerprint: "x"), link: nil),
                                       StoredObject(object: .asset("p2", fingerprint: "y"), link: nil),
                                       StoredObject(object: .asset("p2", fingerprint: "z"), link: nil)])
        }
        let ids = ["n1", "n2", "p1", "p2"]
        let read = try db.store.write(account: "acc") { tx in try tx.mappingObjects(device, localIdentifiers: ids) }
        let rows = Dictionary(uniqueKeysWithValues: read.map { ($0.object.localIdentifier, $0.storageRow) })
        #expect(Set(rows.values.compactMap { $0 }).count == 4, "each object its own row")
        // Each object's row, the updated one's as it was, both of the duplicate's the same.
        #expect(reported.rows == rows.compactMapValues { $0 })
        #expect(reported.rows.count == 4)
        #expect(reported.unreported.isEmpty && reported.moved.isEmpty)
        #expect(read.first { $0.object.localIdentifier == "p2" }?.object.fingerprint == "z")
    }

    /// Links set with right, wrong, unknown and missing rows all land on their objects, and only there.
    @Test(arguments: TestEngine.available) func linksFindTheirObjectsWhateverTheRowsSay(_ engine: TestEngine) throws {
        let db = try TestDatabase(engine)
        let device = DeviceRef(accountID: "acc", deviceID: "d")
        try db.store.writeServer { tx in try tx.insertAccount(accountID: "acc", name: "A", tokenHash: [7], createdAt: Date()) }
        let ids = ["a", "b", "c", "d", "e"]
        let records = (1...5).map { CloudRecord(guid: Self.guid($0), type: .asset, fingerprint: "f\($0)") }
        try db.store.write(account: "acc") { tx in
            try tx.insertDevice(device, name: "d", platform: nil, tokenHash: [1], createdAt: Date())
            try tx.insertRecords(records, createdAt: Date())
            try tx.insertNewObjects(device, ids.map { StoredObject(object: .asset($0, fingerprint: ""), link: nil) })
        }
        func links() throws -> [String: String] {
            let linked = try db.store.read(account: "acc") { tx in try tx.linkedObjects(device, guids: records.map(\.guid)) }
            return Dictionary(uniqueKeysWithValues: linked.map { ($0.localIdentifier, $0.guid) })
        }
        let rowOf = Dictionary(uniqueKeysWithValues: try db.store.write(account: "acc") { tx in try tx.mappingObjects(device, localIdentifiers: ids) }
            .map { ($0.object.localIdentifier, $0.storageRow) })
        // All right: every link by its row.
        let byRow = try db.store.write(account: "acc") { tx in
            try tx.setLinks(device, [("a", records[0].guid), ("b", records[1].guid)], rows: [rowOf["a"]!, rowOf["b"]!])
            return Self.linksSetByRow(tx)
        }
        #expect(byRow == 2)
        #expect(try links() == ["a": records[0].guid, "b": records[1].guid])
        // c given d's row, e a row no object has, d none; c linked twice (the last one counts).
        let afterStale = try db.store.write(account: "acc") { tx in
            try tx.setLinks(device, [("c", records[3].guid), ("c", records[2].guid), ("e", records[4].guid), ("d", records[3].guid)],
                            rows: [rowOf["d"]!, rowOf["d"]!, 1 << 40, nil])
            return Self.linksSetByRow(tx)
        }
        #expect(afterStale == 0, "a stale row sends every link of the batch by identifier")
        #expect(try links() == ["a": records[0].guid, "b": records[1].guid, "c": records[2].guid, "d": records[3].guid, "e": records[4].guid])
        // Replacing a link by row.
        try db.store.write(account: "acc") { tx in
            try tx.dropLinks(device, guids: [records[0].guid, records[1].guid])
            try tx.setLinks(device, [("b", records[0].guid), ("a", records[1].guid)], rows: [rowOf["b"]!, rowOf["a"]!])
            #expect(Self.linksSetByRow(tx) == 2)
        }
        #expect(try links() == ["a": records[1].guid, "b": records[0].guid, "c": records[2].guid, "d": records[3].guid, "e": records[4].guid])
    }
}
