import ConcordDomain
import ConcordMappingIndex
import ConcordTestSupport
import Foundation
import Testing

/// The checklist of an indexed column. An object column the mapping index keeps is written in
/// several places that must agree: `MappingObjectRow` (ConcordDomain), both engines'
/// `streamMappingTableBytes` (the index's load), `PackedObjectRows` (what a write hands the index
/// after its commit), and the index's loader, mutations and snapshot (ConcordMappingIndex). A
/// column added in one place and not the others fails here.
@Suite struct IndexedColumnsChecklistTests {
    /// Every column of an object the mapping index keeps, in `MappingObjectRow`'s order. Adding one:
    /// `MappingObjectRow`, `SQLiteTransaction`'s and `PostgresTransaction`'s `streamMappingTableBytes`,
    /// `PackedObjectRows`, `AccountMappingIndex+Loading` and `+Mutations` (`DeviceTable.put`),
    /// and the snapshot's layout (`DeviceTable.Slot`, docs/formats.md).
    static let indexedColumns = ["deviceID", "localIdentifier", "type", "fingerprint", "linkedGUID", "keyA", "creationSecond"]
    /// Not a column of the object: where the engine keeps its row (`StoredObject.storageRow`, SQLite's
    /// rowid, PostgreSQL's object number), which the index hands back so that a write finds the row
    /// by it. Streamed and packed by both engines; a wrong or missing one costs a lookup, never an answer.
    static let hints = ["storageRow"]

    /// A row's columns by name, each as text ("nil" when absent).
    static func columns(_ row: MappingObjectRow) -> [String: String] {
        var columns: [String: String] = [:]
        for child in Mirror(reflecting: row).children {
            guard let label = child.label else { continue }
            let value = Mirror(reflecting: child.value)
            columns[label] = value.displayStyle == .optional ? (value.children.first.map { "\($0.value)" } ?? "nil") : "\(child.value)"
        }
        return columns
    }

    @Test func theChecklistIsTheRowsColumns() {
        let row = MappingObjectRow(deviceID: "d", localIdentifier: "x", type: .asset, fingerprint: "", linkedGUID: nil)
        #expect(Mirror(reflecting: row).children.compactMap(\.label) == Self.indexedColumns + Self.hints)
    }

    /// One object with every column set: each engine streams every column, a write's packed rows
    /// carry the same values, and the index loaded from the stream answers what storage answers
    /// for each (fingerprint and type: content lookups; link and key: counts and objects; creation
    /// second: the wanted list of a second device).
    @Test(arguments: TestEngine.available)
    func everyIndexedColumnIsStreamedPackedAndKept(_ engine: TestEngine) throws {
        let database = try TestDatabase(engine)
        let service = try ConcordService(store: database.store, configuration: { var c = DomainConfiguration(); c.mappingIndexBytes = 0; return c }())
        let account = try service.accounts.createAccount(name: "checklist")
        func device(_ name: String) throws -> DeviceRef {
            DeviceRef(accountID: account.accountID, deviceID: try service.accounts.createDevice(accountID: account.accountID, name: name, platform: "test").deviceID)
        }
        let first = try device("first"), second = try device("second")
        let fingerprint = String(repeating: "Q", count: 43)
        _ = try service.library.replaceLibrary(LibrarySnapshot(objects: [
            .asset("X/L0/001", fingerprint: fingerprint, creationDate: "2024-01-02T03:04:05Z", photoKitCloudIdentifier: "K:001:"),
        ]), reset: false, device: first)
        _ = try service.mapping.cloudIdentifierAnswers(forLocalIdentifiers: IdentifierBatch(["X/L0/001"]), device: first)   // a record, linked
        // The second device has the object without its fingerprint: wanted, by the creation second.
        _ = try service.library.replaceLibrary(LibrarySnapshot(objects: [
            .asset("Y/L0/001", fingerprint: "", creationDate: "2024-01-02T03:04:05Z"),
        ]), reset: false, device: second)

        try database.store.read(account: account.accountID) { tx in
            let (streamed, inexact) = try tx.mappingObjectRows()
            #expect(!inexact)
            let row = try #require(streamed.first { $0.deviceID == first.deviceID })
            for column in Self.indexedColumns {
                #expect(Self.columns(row)[column].map { $0 != "nil" && !$0.isEmpty } == true, "\(engine) streams no \(column)")
            }

            // What a write hands the index: the same value in every column.
            var packed: [MappingObjectRow] = []
            PackedObjectRows(try tx.objects(first, localIdentifiers: ["X/L0/001"])).forEach(device: first.deviceID) { packed.append($0) }
            #expect(packed.map { Self.columns($0).filter { !Self.hints.contains($0.key) } } == [Self.columns(row).filter { !Self.hints.contains($0.key) }])

            // The index loaded from the stream answers what storage answers.
            let index = MappingIndex(budgetBytes: 1 << 30)
            let version = try tx.mappingVersion()
            for device in [first, second] {
                let (indexed, stored) = try #require(try index.read(tx, version: version) { reads in
                    (try Self.answers(reads, device, fingerprint), try Self.answers(tx, device, fingerprint))
                })
                #expect(indexed == stored, "\(engine), \(device.deviceID == first.deviceID ? "first" : "second") device")
            }
            #expect(try tx.wantedPage(second, after: nil, limit: 10).total == 1, "the creation second is exercised")
        }
    }

    /// What the index's reads say of a device: counts (keys and links among them), wanted page,
    /// and the objects with the content (the index's carry no key: the rules read keys from
    /// `recordLookups`).
    static func answers(_ reads: any MappingReads, _ device: DeviceRef, _ fingerprint: String) throws -> [String] {
        let status = try reads.libraryStatus(device)
        let wanted = try reads.wantedPage(device, after: nil, limit: 10)
        let objects = try reads.objects(device, matching: [ContentKey(type: .asset, fingerprint: fingerprint)])
        return ["\(status)", "\(wanted.objects.map(\.localIdentifier)) \(wanted.total)"]
            + objects.map { "\($0.object.localIdentifier) \($0.object.type) \($0.object.fingerprint) \(String(describing: $0.link))" }
    }
}
