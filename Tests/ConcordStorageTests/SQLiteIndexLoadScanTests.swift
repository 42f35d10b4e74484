import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// SQLite's load of the mapping index reads an account's objects either in the table's own order
/// (the table holds few rows of other accounts) or through the account's index (a small account in
/// a large file). Both give every object of the account, with its link, and none of another's.
@Suite struct SQLiteIndexLoadScanTests {
    /// An account with one device of `count` assets (sent in an order that is not their byte
    /// order), the first `mapped` of them mapped local → cloud.
    static func account(_ service: ConcordService, _ name: String, count: Int, mapped: Int) throws -> (accountID: String, ids: [String]) {
        let account = try service.accounts.createAccount(name: name)
        let device = DeviceRef(accountID: account.accountID,
                               deviceID: try service.accounts.createDevice(accountID: account.accountID, name: "phone", platform: nil).deviceID)
        let ids = (0..<count).map { String(format: "%08X-%@/L0/001", UInt32(truncatingIfNeeded: $0 &* 2_654_435_761), name) }
        _ = try service.library.replaceLibrary(LibrarySnapshot(objects: ids.enumerated().map { .asset($1, fingerprint: contentFingerprint($0)) }),
                                               reset: false, device: device)
        _ = try service.mapping.cloudIdentifierAnswers(forLocalIdentifiers: IdentifierBatch(Array(ids[..<mapped])), device: device)
        return (account.accountID, ids)
    }

    @Test func eitherWayOfReadingTheObjectsLoadsTheAccountsRows() throws {
        let db = try TestDatabase(.sqlite)
        let service = try ConcordService(store: db.store, mappingCache: nil)
        let small = try Self.account(service, "small", count: 20, mapped: 7)
        let large = try Self.account(service, "large", count: 300, mapped: 120)
        let tableRows = try db.store.read(account: large.accountID) { tx in try (tx as! SQLiteTransaction).db.scalarInt("SELECT max(rowid) FROM objects") ?? 0 }
        // The small account through its index, the large one in the table's order.
        #expect(tableRows > SQLiteTransaction.tableScanSlack * 20)
        #expect(tableRows <= SQLiteTransaction.tableScanSlack * 300)
        for (account, mapped) in [(small, 7), (large, 120)] {
            let (rows, inexact) = try db.store.read(account: account.accountID) { tx in try tx.mappingObjectRows() }
            #expect(!inexact)
            #expect(rows.map(\.localIdentifier).sorted() == account.ids.sorted())
            #expect(Set(rows.filter { $0.linkedGUID != nil }.map(\.localIdentifier)) == Set(account.ids[..<mapped]))
        }
    }
}
