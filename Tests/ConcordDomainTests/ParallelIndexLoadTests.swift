import ConcordDomain
import ConcordMappingIndex
@testable import ConcordStorage
import ConcordTestSupport
import Foundation
import Synchronization
import Testing

/// The mapping index's load from PostgreSQL on two connections sharing one snapshot, devices
/// loading on two threads (PostgresTransaction+IndexLoad.swift): the index answers exactly what
/// storage answers, and writes committed while it loads (this instance's, kept until it is
/// installed, and another instance's, caught up from the mapping log) are in its answers after.
/// The threshold is lowered for these small accounts; other suites' loads meanwhile take the same
/// path, which must answer alike as well.
@Suite(.serialized, .enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason + " (ParallelIndexLoadTests)")))
struct ParallelIndexLoadTests {
    /// Three devices (two on the read's connection, one on the second): shared content mapped both
    /// ways, objects of their own content unlinked, and fingerprints too long for the load's line
    /// of a record (stored as text), linked and not.
    final class World: @unchecked Sendable {
        let env: TestEnv
        let devices: [DeviceRef]
        var locals: [[String]] = []
        var clouds: [String] = []

        init() throws {
            self.env = try TestEnv(.postgres) { $0.mappingIndexBytes = 256 << 20 }
            self.devices = [try self.env.device("one"), try self.env.device("two"), try self.env.device("three")]
            let long = (0..<6).map { String(repeating: "A", count: 56) + String(format: "%04d", $0) }
            let assets: [[(String, String)]] = [
                (0..<60).map { ("A-\($0)/L0/001", fp($0)) } + (0..<3).map { ("A-long-\($0)", long[$0]) },
                (10..<70).map { ("\(String(format: "%08X", $0))-0000-4000-8000-000000000000/L0/001", fp($0)) } + (0..<6).map { ("B-long-\($0)", long[$0]) },
                (40..<90).map { ("C-\($0)", fp($0)) } + (200..<210).map { ("C-own-\($0)", fp($0)) },
            ]
            for (device, list) in zip(self.devices, assets) { try self.env.put(device, assets: list) }
            self.locals = assets.map { $0.map(\.0) }
            // Records from device one, links by content on device two, then some of three's own.
            for (n, device) in self.devices.enumerated() {
                let ids = n == 2 ? Array(self.locals[2].prefix(30)) : self.locals[n]
                for result in try self.env.cloud(device, ids) { if case .found(let c) = result { self.clouds.append(c) } }
            }
        }

        /// Both directions on every device, as text.
        func answers(_ service: ConcordService) throws -> String {
            var out: [String] = []
            for device in self.devices {
                out += try service.mapping.cloudIdentifiers(forLocalIdentifiers: self.locals.flatMap { $0 }, device: device).map { "\($0.result)" }
                out += try service.mapping.localIdentifiers(forCloudIdentifiers: self.clouds, device: device).map { "\($0.result)" }
                out.append("\(try service.mapping.status(device: device))")
            }
            return out.joined(separator: "\n")
        }

        /// A new service on the same database (a restart without snapshots).
        func restart(budget: Int = 256 << 20, inlineLoadObjects: Int? = nil) throws -> ConcordService {
            try self.env.restartedService(budget: budget, inlineLoadObjects: inlineLoadObjects)
        }
    }

    /// Every load on two connections while `body` runs.
    private func inParallel<T>(_ body: () throws -> T) rethrows -> T {
        let before = PostgresTransaction.parallelLoadObjects.exchange(0, ordering: .relaxed)
        defer { PostgresTransaction.parallelLoadObjects.store(before, ordering: .relaxed) }
        return try body()
    }

    @Test func aLoadOnTwoConnectionsAnswersAsStorageDoes() throws {
        let world = try World()
        let storage = try world.answers(try world.restart(budget: 0))
        try self.inParallel {
            let loads = PostgresTransaction.parallelLoads.load(ordering: .relaxed)
            let restarted = try world.restart()
            #expect(try world.answers(restarted) == storage)
            #expect(PostgresTransaction.parallelLoads.load(ordering: .relaxed) > loads)
            let statistics = try #require(restarted.mappingIndex?.statistics)
            #expect(statistics.loads == 1 && statistics.hits > 0, "\(statistics)")
        }
    }

    @Test func writesRacingALoadOnTwoConnectionsAreInItsAnswersOnceInstalled() throws {
        let world = try World()
        let restarted = try world.restart(inlineLoadObjects: 0)
        let other = try world.env.anotherInstance()
        let accountID = world.env.account.accountID
        let devices = world.devices
        let raced = Atomic(0)
        // Once the load holds its snapshot: a write through the loading instance (kept until the
        // load is installed) and one through another instance (read back from the mapping log).
        PostgresTransaction.parallelLoadStarted.withLock { hook in
            hook = { account in
                guard account == accountID, raced.add(1, ordering: .relaxed).newValue == 1 else { return }
                _ = try? restarted.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(
                    upsert: [.asset("A-new/L0/001", fingerprint: fp(15)), .asset("A-new2/L0/001", fingerprint: fp(301)),
                             .asset("A-1/L0/001", fingerprint: fp(300))],
                    delete: ["A-2/L0/001"])), device: devices[0])
                _ = try? other.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(
                    upsert: [.asset("C-new", fingerprint: fp(12))])), device: devices[2])
            }
        }
        defer { PostgresTransaction.parallelLoadStarted.withLock { $0 = nil } }
        try self.inParallel {
            // The first read is served from storage and starts the load in the background.
            _ = try world.answers(restarted)
            let deadline = Date().addingTimeInterval(60)
            while (restarted.mappingIndex?.statistics.backgroundLoadsFitted ?? 0) < 1, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
            #expect(raced.load(ordering: .relaxed) >= 1)
            let statistics = try #require(restarted.mappingIndex?.statistics)
            #expect(statistics.backgroundLoadsFitted == 1, "\(statistics)")
        }
        world.locals[0] += ["A-new/L0/001", "A-new2/L0/001"]
        world.locals[2] += ["C-new"]
        let fromIndex = try world.answers(restarted)
        let statistics = try #require(restarted.mappingIndex?.statistics)
        // This instance's write applied to the installed index, the other's caught up from the log.
        #expect(statistics.hits > 0 && statistics.appliedWrites > 0 && statistics.catchUps > 0, "\(statistics)")
        #expect(fromIndex == (try world.answers(try world.restart(budget: 0))))
        // 63 + 2 - 1 objects on device one, 60 + 1 on device three.
        #expect(try restarted.mapping.status(device: devices[0]).objects == 64)
        #expect(try restarted.mapping.status(device: devices[2]).objects == 61)
    }
}
