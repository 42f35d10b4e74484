import ConcordDomain
@testable import ConcordStorage
import Foundation
import Testing

/// CPU time of the calling thread: storage is synchronous, so this is the server CPU of a call.
func threadCPUSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

@Suite struct PerformanceTests {
    /// A 1000-identifier batch against a 100 000-asset library is a handful of statements, not 1000
    /// round trips: measured here (debug build, so bounds are loose; release numbers in the report).
    @Test func thousandIdentifierBatchAgainstHundredThousandAssets() throws {
        let dir = try TempDir()
        let store = try SQLiteStore(path: dir.db)
        let service = try ConcordService(store: store)
        let account = try service.createAccount(name: "perf")
        let created = try service.createDevice(accountID: account.accountID, name: "d", platform: nil)
        let device = DeviceRef(accountID: account.accountID, deviceID: created.deviceID)
        let n = 100_000
        // Bulk-load the library in SQL (the service path is tested elsewhere; here it would only make
        // the test slow). Fingerprints are 42 digits + "A": valid canonical base64url.
        _ = try store.writer.transaction(immediate: true) {
            try store.writer.run("""
                WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i + 1 < ?3)
                INSERT INTO objects (account_id, device_id, local_id, type, fingerprint, media_type, has_adjustments, is_favorite, members, app_created)
                SELECT ?1, ?2, 'ID-' || i || '/L0/001', 1, printf('%042dA', i), 'image', 0, 0, '', 0 FROM seq
                """, [.text(device.accountID), .text(device.deviceID), .int(Int64(n))])
        }
        let batch = (0..<1000).map { "ID-\($0 * 97)/L0/001" }
        // First call links them (step 3, one write transaction).
        let first = try service.cloudIdentifiers(forLocalIdentifiers: batch, device: device)
        let clouds = first.compactMap { m -> String? in if case .found(let c) = m.result { return c } else { return nil } }
        #expect(clouds.count == 1000)

        var best = Double.infinity
        var bestBack = Double.infinity
        for _ in 0..<5 {
            let t0 = threadCPUSeconds()
            let again = try service.cloudIdentifiers(forLocalIdentifiers: batch, device: device)
            let t1 = threadCPUSeconds()
            let back = try service.localIdentifiers(forCloudIdentifiers: clouds, device: device)
            let t2 = threadCPUSeconds()
            best = min(best, t1 - t0)
            bestBack = min(bestBack, t2 - t1)
            #expect(again == first)
            #expect(back.map(\.result) == batch.map { .found($0) })
        }
        print("perf: 1000 local→cloud (all linked) \(String(format: "%.2f", best * 1000)) ms CPU, 1000 cloud→local \(String(format: "%.2f", bestBack * 1000)) ms CPU, library \(n)")
        #expect(best < 0.1)
        #expect(bestBack < 0.1)
    }
}
