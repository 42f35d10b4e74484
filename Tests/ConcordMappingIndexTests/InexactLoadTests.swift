import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordMappingIndex

/// A load from the tables keeps the account only when the index holds it exactly. A link to a GUID
/// no record has (storage allows it on SQLite; the service never makes one) cannot be carried, so
/// the account is then answered from storage; without it the same tables load.
@Suite struct InexactLoadTests {
    static let orphan = "0C44A1D2-0000-4000-8000-00000000ABCD"

    @Test(arguments: [false, true])
    func aLinkToNoRecordKeepsTheAccountOutOfTheIndex(_ orphaned: Bool) throws {
        let database = try TestDatabase(.sqlite)
        let service = try ConcordService(store: database.store, configuration: { var c = DomainConfiguration(); c.mappingIndexBytes = 0; return c }())
        let account = try service.accounts.createAccount(name: "inexact")
        let device = DeviceRef(accountID: account.accountID, deviceID: try service.accounts.createDevice(accountID: account.accountID, name: "phone", platform: "test").deviceID)
        let ids = (0..<50).map { String(format: "%08X-0000-4000-8000-000000000000/L0/001", $0) }
        _ = try service.library.replaceLibrary(LibrarySnapshot(objects: ids.enumerated().map { .asset($1, fingerprint: contentFingerprint($0)) }),
                                               reset: false, device: device)
        _ = try service.mapping.cloudIdentifierAnswers(forLocalIdentifiers: IdentifierBatch(Array(ids[..<40])), device: device)   // 40 linked
        if orphaned {
            try database.store.write(account: account.accountID) { tx in try tx.setLinks(device, [(ids[45], Self.orphan)]) }
        }
        try database.store.read(account: account.accountID) { tx in
            let index = MappingIndex(budgetBytes: 1 << 30)
            let linked = try index.read(tx, version: try tx.mappingVersion()) { reads in
                (reads as! IndexedMappingReads).index.devices.values.first?.objectSlots.filter { $0.live && $0.hasLink }.count
            }
            #expect(linked == (orphaned ? nil : 40))
        }
    }
}
