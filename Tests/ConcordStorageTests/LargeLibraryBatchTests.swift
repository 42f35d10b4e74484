import ConcordDomain
import ConcordMappingIndex
@testable import ConcordStorage
import Foundation
import Testing

/// A service over a fresh SQLite file in `dir` whose one device holds `assets` assets `ID-<i>/L0/001`,
/// bulk-loaded in SQL (the service path is tested elsewhere; here it would only make the test slow).
/// Fingerprints are 42 digits + "A": valid canonical base64url.
func largeLibrary(in dir: TempDir, assets n: Int) throws -> (store: SQLiteStore, service: ConcordService, device: DeviceRef) {
    let store = try SQLiteStore(path: dir.db)
    let service = try ConcordService(store: store)
    let account = try service.accounts.createAccount(name: "perf")
    let created = try service.accounts.createDevice(accountID: account.accountID, name: "d", platform: nil)
    let device = DeviceRef(accountID: account.accountID, deviceID: created.deviceID)
    _ = try store.writer.transaction(immediate: true) {
        try store.writer.run("""
            WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i + 1 < ?3)
            INSERT INTO objects (account_key, device_key, local_id, type, fingerprint, media_type, has_adjustments, is_favorite, members, app_created)
            SELECT (SELECT account_key FROM accounts WHERE account_id = ?1),
                   (SELECT device_key FROM devices WHERE device_id = ?2), 'ID-' || i || '/L0/001', 1, printf('%042dA', i), 'image', 0, 0, '', 0 FROM seq
            """, [.text(device.accountID), .text(device.deviceID), .int(Int64(n))])
    }
    return (store, service, device)
}

@Suite struct LargeLibraryBatchTests {
    /// 1000- and 10 000-identifier batches against a 100 000-asset library: the new ones linked
    /// (step 3, one write), then both directions answer every item, the same each time. Their time
    /// is `Benchmarks/run mapping`, not asserted here.
    @Test func thousandIdentifierBatchAgainstHundredThousandAssets() throws {
        let dir = try TempDir()
        let n = 100_000
        let (_, service, device) = try largeLibrary(in: dir, assets: n)
        let batch = (0..<1000).map { "ID-\($0 * 97)/L0/001" }
        // First call links them (step 3, one write transaction).
        let first = try service.mapping.cloudIdentifiers(forLocalIdentifiers: batch, device: device)
        // A full 10 000 batch of new content (step 3 for all).
        let big = (0..<10_000).map { "ID-\(50_000 + $0)/L0/001" }
        let bigAnswers = try service.mapping.cloudIdentifiers(forLocalIdentifiers: big, device: device)
        #expect(bigAnswers.allSatisfy { if case .found = $0.result { return true } else { return false } })
        let clouds = first.compactMap { m -> String? in if case .found(let c) = m.result { return c } else { return nil } }
        #expect(clouds.count == 1000)

        for _ in 0..<2 {
            let again = try service.mapping.cloudIdentifiers(forLocalIdentifiers: batch, device: device)
            let back = try service.mapping.localIdentifiers(forCloudIdentifiers: clouds, device: device)
            #expect(again == first)
            #expect(back.map(\.result) == batch.map { .found($0) })
        }
    }
}
