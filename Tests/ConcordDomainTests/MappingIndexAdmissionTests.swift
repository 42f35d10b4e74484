@testable import ConcordDomain
@testable import ConcordMappingIndex
import ConcordTestSupport
import Foundation
import Synchronization
import Testing

/// The mapping index's admission: two accounts that do not fit together, used
/// alternately, are not evicted and reloaded on every request; an account larger than the budget
/// is not loaded again in a request's path, and its retry off that path installs it once it fits.
@Suite struct MappingIndexAdmissionTests {
    /// One account with a device of `count` linked assets; its identifiers' cloud identifiers.
    static func account(_ env: TestEnv, _ name: String, count: Int) throws -> (DeviceRef, [String], [String]) {
        let account = try env.service.accounts.createAccount(name: name)
        let device = try env.device(name, accountID: account.accountID)
        let ids = (0..<count).map { "\(name)-\($0)/L0/001" }
        _ = try env.service.library.replaceLibrary(LibrarySnapshot(objects: ids.enumerated().map { i, id in
            .asset(id, fingerprint: fp(i + (name == "b" ? 10_000 : 0)))
        }), reset: false, device: device)
        let clouds = try env.cloud(device, ids).map { result -> String in
            guard case .found(let c) = result else { Issue.record("not found: \(result)"); return "" }
            return c
        }
        return (device, ids, clouds)
    }

    @Test(arguments: TestEngine.available) func twoAccountsUsedAlternatelyDoNotEvictEachOther(_ engine: TestEngine) throws {
        var configuration = DomainConfiguration()
        configuration.mappingIndexBytes = 200_000   // one account of 600 objects fits, two do not
        configuration.mappingIndexProtectSeconds = 30
        let env = try TestEnv(engine, configuration: configuration)
        let (a, aIDs, aClouds) = try Self.account(env, "a", count: 600)
        let (b, bIDs, bClouds) = try Self.account(env, "b", count: 600)
        let index = try #require(env.service.mappingIndex)
        for round in 0..<10 {
            env.clock.advance(1)
            #expect(try env.cloud(a, aIDs).map(\.found) == aClouds, "round \(round)")
            #expect(try env.local(b, bClouds).map(\.found) == bIDs, "round \(round)")
        }
        let alternating = index.statistics
        // Each account was loaded once; after that the one that came second is served from storage.
        #expect(alternating.evictions == 0 && alternating.loads <= 3 && alternating.refusedAdmissions >= 9, "\(alternating)")
        // Once the resident account has been idle longer than protectSeconds, the other one is admitted.
        env.clock.advance(31)
        #expect(try env.local(b, bClouds).map(\.found) == bIDs)
        let after = index.statistics
        #expect(after.evictions == 1 && after.loads == alternating.loads + 1, "\(after)")
    }

    @Test(arguments: TestEngine.available) func aTooLargeAccountIsNotLoadedAgainInARequest(_ engine: TestEngine) throws {
        var configuration = DomainConfiguration()
        configuration.mappingIndexBytes = 20_000
        let env = try TestEnv(engine, configuration: configuration)
        let (a, ids, clouds) = try Self.account(env, "a", count: 600)
        let index = try #require(env.service.mappingIndex)
        for _ in 0..<5 {
            env.clock.advance(120)   // the old rule retried a load every 60 s of the service's clock
            #expect(try env.local(a, clouds).map(\.found) == ids)
        }
        let s = index.statistics
        #expect(s.overBudgetLoads == 1 && s.loads == 0 && s.tooLarge >= 5, "\(s)")
    }

    /// The retry off the request path: a load that does not fit is scheduled again; one that fits
    /// is installed, and the next read at that version is answered from it without a load.
    @Test func aBackgroundRetryInstallsTheAccountOnceItFits() throws {
        let index = MappingIndex(budgetBytes: 100_000, retrySeconds: 0.05)
        let retried = Mutex(0)
        index.setRetryLoad { account in
            retried.withLock { $0 += 1 }
            index.loadInBackground(account: account, version: 7) { fresh in _ = fresh.insertDevice("d") }   // it fits now
        }
        func big(_ fresh: AccountMappingIndex) throws {
            let d = fresh.insertDevice("d")
            for i in 0..<5_000 { d.put("object-\(i)/L0/001", type: .asset, fingerprint: 0, record: -1, linkedGUID: nil) }
            try index.checkBudget(fresh)
        }
        var loadedInRequest = 0
        let first = try index.read(account: "A", version: 7, load: { loadedInRequest += 1; try big($0) }) { _ in true }
        #expect(first == nil && loadedInRequest == 1)
        let deadline = Date().addingTimeInterval(5)
        while index.statistics.backgroundLoadsFitted == 0, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(retried.withLock { $0 } == 1 && index.statistics.backgroundLoadsFitted == 1)
        let second = try index.read(account: "A", version: 7, load: { loadedInRequest += 1; try big($0) }) { $0.devices.count }
        #expect(second == 1 && loadedInRequest == 1, "answered by the index the retry installed")
    }

    /// A slow load (`loadsQuickly` false) runs off the request path: reads are served from storage
    /// meanwhile, and a write this process commits while it runs is applied to it once installed —
    /// the index is then current without another load.
    @Test func aSlowLoadRunsOffTheRequestPathAndKeepsTheWritesMadeMeanwhile() throws {
        let index = MappingIndex(budgetBytes: 1 << 20)
        let started = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        index.setRetryLoad { account in
            started.signal()
            release.wait()
            index.loadInBackground(account: account, version: 7) { fresh in _ = fresh.insertDevice("d") }
        }
        var loadedInRequest = 0
        func read() throws -> [String]? {
            try index.read(account: "A", version: 8, loadsQuickly: { false }, load: { _ in loadedInRequest += 1 }) { $0.devices.keys.sorted() }
        }
        #expect(try index.read(account: "A", version: 7, loadsQuickly: { false }, load: { _ in loadedInRequest += 1 }) { _ in true } == nil)
        started.wait()
        #expect(index.isLoaded(account: "A"), "a write during the load keeps its changes")
        index.expect(account: "A", version: 8)
        index.finish(account: "A", version: 8, mutations: [.insertDevice("e")])
        #expect(try read() == nil, "served from storage while the load runs")
        release.signal()
        let deadline = Date().addingTimeInterval(5)
        while index.statistics.backgroundLoadsFitted == 0, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(try read() == ["d", "e"] && loadedInRequest == 0)
        let s = index.statistics
        #expect(s.deferredLoads == 1 && s.readsWhileLoading == 2 && s.appliedWrites == 1 && s.hits == 1 && s.loads == 0, "\(s)")
    }

    /// A background load whose storage read failed leaves the account to the next read, which
    /// defers it again (nothing stays "loading" for ever).
    @Test func aFailedBackgroundLoadIsTriedAgainByTheNextRead() throws {
        let index = MappingIndex(budgetBytes: 1 << 20)
        let attempts = Mutex(0)
        index.setRetryLoad { account in
            if attempts.withLock({ $0 += 1; return $0 }) == 1 {
                index.backgroundLoadFailed(account: account)
            } else {
                index.loadInBackground(account: account, version: 3) { fresh in _ = fresh.insertDevice("d") }
            }
        }
        func read() throws -> Int? { try index.read(account: "A", version: 3, loadsQuickly: { false }, load: { _ in }) { $0.devices.count } }
        #expect(try read() == nil)
        let deadline = Date().addingTimeInterval(5)
        while attempts.withLock({ $0 }) < 1 || index.isLoaded(account: "A"), Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(try read() == nil)
        while index.statistics.backgroundLoadsFitted == 0, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(try read() == 1 && attempts.withLock { $0 } == 2 && index.statistics.deferredLoads == 2)
    }

    /// A retry that comes after the account was deleted loads nothing and keeps no entry.
    @Test func aBackgroundRetryOfADeletedAccountLoadsNothing() throws {
        let index = MappingIndex(budgetBytes: 1_000)
        _ = try index.read(account: "A", version: 1, load: { fresh in
            let d = fresh.insertDevice("d")
            for i in 0..<100 { d.put("object-\(i)", type: .asset, fingerprint: 0, record: -1, linkedGUID: nil) }
            try index.checkBudget(fresh)
        }) { _ in true }
        index.forget(account: "A")
        index.loadInBackground(account: "A", version: 1) { fresh in _ = fresh.insertDevice("d") }
        #expect(index.statistics.backgroundLoads == 0 && index.statistics.accounts == 0 && !index.isLoaded(account: "A"))
    }
}

extension MappingResult {
    fileprivate var found: String? { if case .found(let s) = self { s } else { nil } }
}
