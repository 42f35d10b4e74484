import ConcordDomain
import ConcordMappingIndex
@testable import ConcordStorage
import Foundation
import Testing

/// CPU time of the calling thread: storage is synchronous, so this is the server CPU of a call.
func threadCPUSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

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

@Suite struct PerformanceTests {
    /// A 1000-identifier batch against a 100 000-asset library is a handful of statements, not 1000
    /// round trips: measured here (debug build, so bounds are loose; release numbers in the report).
    @Test func thousandIdentifierBatchAgainstHundredThousandAssets() throws {
        let dir = try TempDir()
        let n = 100_000
        let (store, service, device) = try largeLibrary(in: dir, assets: n)
        let batch = (0..<1000).map { "ID-\($0 * 97)/L0/001" }
        // First call links them (step 3, one write transaction).
        let tFirst = threadCPUSeconds()
        let first = try service.mapping.cloudIdentifiers(forLocalIdentifiers: batch, device: device)
        let firstCPU = threadCPUSeconds() - tFirst
        // A full 10 000 batch of new content (step 3 for all).
        let big = (0..<10_000).map { "ID-\(50_000 + $0)/L0/001" }
        let tBig = threadCPUSeconds()
        let bigAnswers = try service.mapping.cloudIdentifiers(forLocalIdentifiers: big, device: device)
        let bigCPU = threadCPUSeconds() - tBig
        #expect(bigAnswers.allSatisfy { if case .found = $0.result { return true } else { return false } })
        let clouds = first.compactMap { m -> String? in if case .found(let c) = m.result { return c } else { return nil } }
        #expect(clouds.count == 1000)

        var best = Double.infinity
        var bestBack = Double.infinity
        let rounds = Int(ProcessInfo.processInfo.environment["CONCORD_PERF_ROUNDS"] ?? "") ?? 5
        for _ in 0..<rounds {
            let t0 = threadCPUSeconds()
            let again = try service.mapping.cloudIdentifiers(forLocalIdentifiers: batch, device: device)
            let t1 = threadCPUSeconds()
            let back = try service.mapping.localIdentifiers(forCloudIdentifiers: clouds, device: device)
            let t2 = threadCPUSeconds()
            best = min(best, t1 - t0)
            bestBack = min(bestBack, t2 - t1)
            #expect(again == first)
            #expect(back.map(\.result) == batch.map { .found($0) })
        }
        var bestRaw = Double.infinity, bestJSON = Double.infinity, bestEmpty = Double.infinity
        for _ in 0..<5 {
            let t0 = threadCPUSeconds()
            _ = try store.read(account: device.accountID) { tx in try tx.linkStates(device, localIdentifiers: batch) }
            let t1 = threadCPUSeconds()
            _ = try store.writer.query("SELECT count(*) FROM json_each(?) j CROSS JOIN objects o ON o.account_key = 1 AND o.device_key = 1 AND o.local_id = j.value", [.text(jsonArray(batch))]) { _ in }
            let t2 = threadCPUSeconds()
            _ = try store.readServer { tx in try tx.setting("x") }
            let t3 = threadCPUSeconds()
            bestRaw = min(bestRaw, t1 - t0); bestJSON = min(bestJSON, t2 - t1); bestEmpty = min(bestEmpty, t3 - t2)
        }
        print("perf-detail: store.linkStates \(bestRaw * 1000) ms, count-only query \(bestJSON * 1000) ms, empty read tx \(bestEmpty * 1000) ms")
        print("perf-first: 1000 new \(String(format: "%.2f", firstCPU * 1000)) ms CPU, 10000 new \(String(format: "%.2f", bigCPU * 1000)) ms CPU")
        print("perf: 1000 local→cloud (all linked) \(String(format: "%.2f", best * 1000)) ms CPU, 1000 cloud→local \(String(format: "%.2f", bestBack * 1000)) ms CPU, library \(n)")
        #expect(best < 0.1)
        #expect(bestBack < 0.1)
    }
}
