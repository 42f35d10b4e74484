import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordMappingIndex

/// A load from the tables leaves room at the end of the arrays a first mapping appends to: the
/// records, and each device's link of each record. Another instance's new records, caught up with
/// from the mapping log, then copy no array (at a million records, tens of megabytes and their page
/// faults on the request that caught up).
@Suite struct LoadHeadroomTests {
    @Test(arguments: TestEngine.available)
    func aLoadLeavesRoomForTheRecordsToCome(_ engine: TestEngine) throws {
        let database = try TestDatabase(engine)
        let service = try ConcordService(store: database.store, configuration: { var c = DomainConfiguration(); c.mappingIndexBytes = 0; return c }())
        let account = try service.accounts.createAccount(name: "headroom")
        let devices = try ["phone", "tablet"].map { name in
            DeviceRef(accountID: account.accountID, deviceID: try service.accounts.createDevice(accountID: account.accountID, name: name, platform: "test").deviceID)
        }
        let ids = (0..<3000).map { String(format: "%08X-0000-4000-8000-000000000000/L0/001", $0) }
        for device in devices {
            _ = try service.library.replaceLibrary(LibrarySnapshot(objects: ids.enumerated().map { .asset($1, fingerprint: contentFingerprint($0)) }),
                                                   reset: false, device: device)
        }
        _ = try service.mapping.cloudIdentifierAnswers(forLocalIdentifiers: IdentifierBatch(ids), device: devices[0])   // 3000 records, linked

        try database.store.read(account: account.accountID) { tx in
            let index = MappingIndex(budgetBytes: 1 << 30)
            let room = try #require(try index.read(tx, version: try tx.mappingVersion()) { reads in
                let loaded = (reads as! IndexedMappingReads).index
                return (records: loaded.records.count, capacity: loaded.records.capacity, devices: loaded.devices.values.map(\.recordCapacity))
            })
            #expect(room.records == 3000)
            #expect(room.capacity >= Headroom.capacity(for: 3000), "\(engine): records")
            #expect(room.devices.count == 2)
            for capacity in room.devices { #expect(capacity >= Headroom.capacity(for: 3000), "\(engine): a device's links of records") }
        }
    }
}
