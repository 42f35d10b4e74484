import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordDomain
@testable import ConcordStorage

/// A library that grows by a page or more stores its new objects in the order they came
/// (`LibraryReplacement`): a `PUT /v1/library` body in its own order, an upload's parts in part
/// number order (a part's objects in byte order), so that a device mapping its library in the order
/// it uploaded it finds each request's objects in neighbouring rows. What is stored is the same as
/// before, whatever the order: updates keep their rows, deletions go, details list every change.
@Suite struct ArrivalOrderTests {
    /// A device's local identifiers in the order its rows are stored: SQLite's row numbers,
    /// PostgreSQL's object numbers.
    static func storedOrder(_ db: TestDatabase, _ device: DeviceRef) throws -> [String] {
        try db.store.write(account: device.accountID) { tx in
            var ids: [String] = []
            if let tx = tx as? SQLiteTransaction {
                try tx.db.query("""
                    SELECT o.local_id FROM objects o JOIN devices d ON d.account_key = o.account_key AND d.device_key = o.device_key
                    WHERE d.device_id = ?1 ORDER BY o.rowid
                    """, [.text(device.deviceID)]) { s in ids.append(s.text(0)) }
            } else if let tx = tx as? PostgresTransaction {
                try tx.db.query("""
                    SELECT o.local_id FROM objects o JOIN devices d ON d.device_key = o.device_key
                    WHERE d.account_id = $1 AND d.device_id = $2 ORDER BY o.object_no
                    """, [.text(device.accountID), .text(device.deviceID)]) { r in ids.append(r.text(0)) }
            }
            return ids
        }
    }

    /// A service with one account and one device on `engine`'s database.
    static func setUp(_ engine: TestEngine) throws -> (TestDatabase, ConcordService, DeviceRef) {
        let db = try TestDatabase(engine)
        let service = try ConcordService(store: db.store, mappingCache: nil)
        let account = try service.accounts.createAccount(name: "A")
        let device = DeviceRef(accountID: account.accountID,
                                deviceID: try service.accounts.createDevice(accountID: account.accountID, name: "phone", platform: nil).deviceID)
        return (db, service, device)
    }

    /// Identifiers whose order (a multiplicative scramble of `n`) is not their byte order.
    static func scrambled(_ prefix: String, _ count: Int) -> [String] {
        (0..<count).map { i in String(format: "%@-%08X", prefix, UInt32(truncatingIfNeeded: i &* 2_654_435_761)) }
    }

    static func asset(_ id: String, _ version: String = "") -> LibraryObject {
        .asset(id, fingerprint: Self.fingerprint("\(id)\(version)"))
    }

    /// A valid fingerprint (base64url of at least 16 bytes) made of `text`.
    static func fingerprint(_ text: String) -> String {
        Data("fingerprint of \(text)".utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    @Test(arguments: TestEngine.available) func aPutStoresNewObjectsInTheBodysOrder(_ engine: TestEngine) throws {
        let (db, service, device) = try Self.setUp(engine)
        let ids = Self.scrambled("a", LibraryReplacement.pageSize + 700)
        #expect(ids != ids.sorted { $0.utf8Precedes($1) })
        let result = try service.library.replaceLibrary(LibrarySnapshot(objects: ids.map { Self.asset($0) }), reset: false, device: device)
        #expect(result.inserted == ids.count)
        #expect(try Self.storedOrder(db, device) == ids)
        #expect(try service.library.object(localIdentifier: ids[17], device: device) == Self.asset(ids[17]))
    }

    @Test(arguments: TestEngine.available) func anUploadStoresNewObjectsPartByPart(_ engine: TestEngine) throws {
        let (db, service, device) = try Self.setUp(engine)
        // Three parts sent out of order; 2700 objects, so the commit reads them in two pages.
        let parts = [1: Self.scrambled("p1", 900), 2: Self.scrambled("p2", 900), 3: Self.scrambled("p3", 900)]
        let upload = try service.uploads.open(device: device).uploadID
        for part in [2, 3, 1] {
            _ = try service.uploads.putPart(part, of: upload, LibrarySnapshot(objects: parts[part]!.map { Self.asset($0) }), device: device)
        }
        let result = try service.uploads.commit(upload, reset: false, device: device)
        #expect(result.inserted == 2700)
        let expected = [1, 2, 3].flatMap { parts[$0]!.sorted { $0.utf8Precedes($1) } }
        #expect(try Self.storedOrder(db, device) == expected)
    }

    /// A replacement that grows the library and also updates, keeps and deletes stored objects, and
    /// (with `reset`) gives an identifier another type: new rows follow the body, the rest is as the
    /// merge decided.
    @Test(arguments: TestEngine.available) func aGrowingReplacementChangesWhatItChangedBefore(_ engine: TestEngine) throws {
        let (db, service, device) = try Self.setUp(engine)
        let old = Self.scrambled("o", 600)
        _ = try service.library.replaceLibrary(LibrarySnapshot(objects: old.map { Self.asset($0) }), reset: false, device: device)
        // old[0..<200] unchanged, old[200..<400] updated, old[400..<599] deleted, old[599] becomes an album.
        let new = Self.scrambled("n", LibraryReplacement.pageSize + 300)
        var sent = new.map { Self.asset($0) }
        sent.insert(contentsOf: old[0..<200].map { Self.asset($0) }, at: 1000)
        sent.insert(contentsOf: old[200..<400].map { Self.asset($0, "-v2") }, at: 500)
        sent.append(.assetCollection(old[599], fingerprint: Self.fingerprint("album"), title: "Trip", assets: [new[0], old[0]]))
        let result = try service.library.replaceLibrary(LibrarySnapshot(objects: sent), reset: true, device: device)
        #expect(result.inserted == new.count + 1)
        #expect(result.updated == 200)
        #expect(result.deleted == 200)
        #expect(result.unchanged == 200)

        let stored = try Self.storedOrder(db, device)
        // The kept rows where they were (the first library, smaller than a page, went in byte
        // order), then the new ones in the body's order, the retyped album last.
        let kept = Set(old[0..<400])
        #expect(stored == old.sorted { $0.utf8Precedes($1) }.filter(kept.contains) + new + [old[599]])
        #expect(try service.library.object(localIdentifier: old[250], device: device) == Self.asset(old[250], "-v2"))
        #expect(try service.library.object(localIdentifier: old[599], device: device).type == .assetCollection)
        #expect(throws: DomainError.self) { try service.library.object(localIdentifier: old[450], device: device) }
        var listed: [String] = [], after: String?
        repeat {
            let page = try service.library.listObjects(type: nil, after: after, limit: 500, device: device)
            listed += page.objects.map(\.localIdentifier)
            after = page.next
        } while after != nil
        #expect(listed == sent.map(\.localIdentifier).sorted { $0.utf8Precedes($1) })
    }
}
