import ConcordDomain
import ConcordMappingIndex
import ConcordStorage
import ConcordTestSupport
import Foundation
import Testing

/// The mapping index's snapshots (IndexSnapshot.swift): saved at a clean shutdown, used
/// by the next start only while storage still holds their ID at their version, and otherwise
/// removed and replaced by a load from the tables — with the same answers either way.
@Suite struct MappingIndexSnapshotTests {
    /// An account with two devices: 40 assets on each (30 shared), mapped both ways, so that
    /// records, links and content lists are all in the index.
    final class World {
        let env: TestEnv
        let directory: IndexSnapshotDirectory
        let one: DeviceRef, two: DeviceRef
        var clouds: [String] = []

        init(_ engine: TestEngine, budget: Int = 256 << 20) throws {
            self.directory = try IndexSnapshotDirectory(path: NSTemporaryDirectory() + "concord-snapshots-" + UUID().uuidString)
            var configuration = DomainConfiguration()
            configuration.mappingIndexBytes = budget
            configuration.mappingIndexSnapshots = self.directory
            self.env = try TestEnv(engine, configuration: configuration)
            self.one = try self.env.device("one")
            self.two = try self.env.device("two")
            try self.env.put(self.one, assets: (0..<40).map { ("A-\($0)/L0/001", fp($0)) })
            try self.env.put(self.two, assets: (10..<50).map { ("\(String(format: "%08X", $0))-0000-4000-8000-000000000000/L0/001", fp($0)) })
            self.clouds = try self.env.cloud(self.one, (0..<40).map { "A-\($0)/L0/001" }).map { result -> String in
                guard case .found(let c) = result else { return "" }
                return c
            }
        }

        /// Both directions on both devices, as text.
        func answers(_ service: ConcordService) throws -> String {
            var out: [String] = []
            for device in [self.one, self.two] {
                let locals = (0..<40).map { "A-\($0)/L0/001" } + (10..<50).map { "\(String(format: "%08X", $0))-0000-4000-8000-000000000000/L0/001" }
                out += try service.mapping.cloudIdentifiers(forLocalIdentifiers: locals, device: device).map { "\($0.result)" }
                out += try service.mapping.localIdentifiers(forCloudIdentifiers: self.clouds, device: device).map { "\($0.result)" }
                out.append("\(try service.mapping.status(device: device))")
            }
            return out.joined(separator: "\n")
        }

        /// A new service on the same database and snapshot directory (a restart).
        func restart(budget: Int = 256 << 20, inlineLoadObjects: Int? = nil) throws -> ConcordService {
            try self.env.restartedService(budget: budget, inlineLoadObjects: inlineLoadObjects)
        }

        var file: String { self.directory.file(self.env.account.accountID) }
    }

    @Test(arguments: TestEngine.available) func aRestartLoadsTheSavedIndexAndAnswersAlike(_ engine: TestEngine) throws {
        let world = try World(engine)
        let before = try world.answers(world.env.service)
        let (saved, failures) = world.env.service.saveMappingIndexSnapshots()
        #expect(saved == 1 && failures.isEmpty)
        #expect(FileManager.default.fileExists(atPath: world.file))

        let restarted = try world.restart()
        #expect(try world.answers(restarted) == before)
        let statistics = try #require(restarted.mappingIndex?.statistics)
        #expect(statistics.snapshotLoads == 1 && statistics.loads == 1 && statistics.rejectedSnapshots == 0, "\(statistics)")
        // The restored index goes on applying writes exactly.
        try restarted.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: [.asset("A-99/L0/001", fingerprint: fp(45))],
                                                                                          delete: ["A-3/L0/001"])), device: world.one)
        let storageOnly = try world.restart(budget: 0)
        #expect(try world.answers(restarted) == (try world.answers(storageOnly)))
        #expect(restarted.mappingIndex?.statistics.appliedWrites ?? 0 > 0)
    }

    /// The index restored from a snapshot knows which contents records carry: a new photo of
    /// device two with one of device one's contents links to that record, not to a new one.
    @Test(arguments: TestEngine.available) func aRestoredIndexFindsRecordsByContent(_ engine: TestEngine) throws {
        let world = try World(engine)
        _ = world.env.service.saveMappingIndexSnapshots()
        let restarted = try world.restart()
        #expect(try restarted.mapping.status(device: world.two).objects == 40)   // loads the index
        #expect(restarted.mappingIndex?.statistics.snapshotLoads == 1)
        try restarted.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: [.asset("N-5/L0/001", fingerprint: fp(5))])), device: world.two)
        let mapped = try restarted.mapping.cloudIdentifiers(forLocalIdentifiers: ["N-5/L0/001"], device: world.two)
        #expect(mapped.map(\.result) == [.found(world.clouds[5])])
    }

    @Test(arguments: TestEngine.available) func aSnapshotOfAnOlderStateIsRemovedAndTheTablesLoaded(_ engine: TestEngine) throws {
        let world = try World(engine)
        _ = world.env.service.saveMappingIndexSnapshots()
        // A write after the save (this instance or another): the snapshot is behind storage.
        let other = try world.restart()
        try other.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(delete: ["A-7/L0/001"])), device: world.one)
        let restarted = try world.restart()
        let storageOnly = try world.restart(budget: 0)
        #expect(try world.answers(restarted) == (try world.answers(storageOnly)))
        let statistics = try #require(restarted.mappingIndex?.statistics)
        #expect(statistics.snapshotLoads == 0 && statistics.rejectedSnapshots == 1 && statistics.loads == 1, "\(statistics)")
        #expect(!FileManager.default.fileExists(atPath: world.file))
    }

    /// A load that would be slow runs off the request path (`mappingIndexInlineLoadObjects`; 0
    /// here, so that every account counts as large): a current snapshot still loads in the request;
    /// without one (a write since the save cleared its ID), storage answers while the tables load in
    /// the background, and the installed index answers the same afterwards.
    @Test(arguments: TestEngine.available) func onlyASlowLoadRunsOffTheRequestPath(_ engine: TestEngine) throws {
        let world = try World(engine)
        _ = world.env.service.saveMappingIndexSnapshots()
        let current = try world.restart(inlineLoadObjects: 0)
        let before = try world.answers(current)
        let fromSnapshot = try #require(current.mappingIndex?.statistics)
        #expect(fromSnapshot.snapshotLoads == 1 && fromSnapshot.loads == 1 && fromSnapshot.deferredLoads == 0, "\(fromSnapshot)")
        #expect(before == (try world.answers(world.restart(budget: 0))))

        try current.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(delete: ["A-7/L0/001"])), device: world.one)
        let restarted = try world.restart(inlineLoadObjects: 0)
        let expected = try world.answers(world.restart(budget: 0))
        #expect(try world.answers(restarted) == expected)
        let index = try #require(restarted.mappingIndex)
        let deadline = Date().addingTimeInterval(10)
        while index.statistics.backgroundLoadsFitted == 0, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        let hitsBefore = index.statistics.hits
        #expect(try world.answers(restarted) == expected)
        let s = index.statistics
        #expect(s.deferredLoads == 1 && s.backgroundLoadsFitted == 1 && s.readsWhileLoading >= 1 && s.loads == 0 && s.snapshotLoads == 0
                 && s.hits > hitsBefore, "\(s)")
        // With the default limit, an account this small loads in the request, snapshot or not.
        let small = try world.restart()
        #expect(try world.answers(small) == expected)
        #expect(small.mappingIndex?.statistics.deferredLoads == 0 && small.mappingIndex?.statistics.loads == 1)
    }

    @Test(arguments: TestEngine.available) func aDamagedOrForeignSnapshotIsNotUsed(_ engine: TestEngine) throws {
        let world = try World(engine)
        let before = try world.answers(world.env.service)
        #expect(!FileManager.default.fileExists(atPath: world.file))   // nothing saved yet
        _ = world.env.service.saveMappingIndexSnapshots()
        let good = try Data(contentsOf: URL(fileURLWithPath: world.file))
        var cases: [(String, Data)] = []
        var flipped = good
        flipped[flipped.count / 2] ^= 0x40
        cases.append(("a byte changed", flipped))
        cases.append(("cut short", good.prefix(good.count - 9)))
        cases.append(("longer", good + Data([0])))
        cases.append(("empty", Data()))
        for (what, bytes) in cases {
            try bytes.write(to: URL(fileURLWithPath: world.file))
            let restarted = try world.restart()
            #expect(try world.answers(restarted) == before, "\(what)")
            let statistics = try #require(restarted.mappingIndex?.statistics)
            #expect(statistics.snapshotLoads == 0 && statistics.rejectedSnapshots == 1, "\(what): \(statistics)")
        }
        // A whole snapshot whose ID storage does not hold (a later save replaced it, or the
        // database was restored from a backup taken before it was recorded).
        #expect(!FileManager.default.fileExists(atPath: world.file))   // the last damaged one was removed
        let saver = try world.restart()
        _ = try world.answers(saver)                                  // loads from the tables
        #expect(saver.saveMappingIndexSnapshots().saved == 1)        // records another ID at the same version
        try good.write(to: URL(fileURLWithPath: world.file))          // the first one back
        let restarted = try world.restart()
        #expect(try world.answers(restarted) == before)
        #expect(restarted.mappingIndex?.statistics.rejectedSnapshots == 1 && restarted.mappingIndex?.statistics.snapshotLoads == 0)
    }

    /// Saves in the background (`onlyQuiet`) take an account once its version has not moved for a
    /// pass; no save (in the background or at shutdown) writes an account whose snapshot on disk is
    /// already of its version, loaded or saved.
    @Test(arguments: TestEngine.available) func onlyChangedAccountsAreSavedAndInTheBackgroundOnlySettledOnes(_ engine: TestEngine) throws {
        let world = try World(engine)
        let service = world.env.service
        _ = try world.answers(service)
        #expect(service.saveMappingIndexSnapshots(onlyQuiet: true).saved == 0)   // first seen at this version
        #expect(service.saveMappingIndexSnapshots(onlyQuiet: true).saved == 1)   // unchanged for a pass
        let first = try Data(contentsOf: URL(fileURLWithPath: world.file))
        #expect(service.saveMappingIndexSnapshots(onlyQuiet: true).saved == 0)
        #expect(service.saveMappingIndexSnapshots().saved == 0)                  // the file is current
        try service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(delete: ["A-7/L0/001"])), device: world.one)
        #expect(service.saveMappingIndexSnapshots(onlyQuiet: true).saved == 0)   // changed since the last pass
        #expect(service.saveMappingIndexSnapshots(onlyQuiet: true).saved == 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: world.file)) != first)
        let before = try world.answers(service)

        // A start after a crash (nothing saved at the end) loads it, and has nothing to save.
        let restarted = try world.restart()
        #expect(try world.answers(restarted) == before)
        #expect(restarted.mappingIndex?.statistics.snapshotLoads == 1)
        #expect(restarted.saveMappingIndexSnapshots().saved == 0)
        #expect(restarted.saveMappingIndexSnapshots(onlyQuiet: true).saved == 0 && restarted.saveMappingIndexSnapshots(onlyQuiet: true).saved == 0)
        #expect(restarted.mappingIndex?.statistics.savedSnapshots == 0)
    }

    @Test func anAccountLargerThanTheBudgetIsNotReadFromItsSnapshot() throws {
        let world = try World(.sqlite)
        let before = try world.answers(world.env.service)
        _ = world.env.service.saveMappingIndexSnapshots()
        let small = try world.restart(budget: 2_000)
        #expect(try world.answers(small) == before)
        let statistics = try #require(small.mappingIndex?.statistics)
        #expect(statistics.snapshotLoads == 0 && statistics.tooLarge > 0 && statistics.accounts == 0, "\(statistics)")
        // Still there for a start with room for it.
        #expect(FileManager.default.fileExists(atPath: world.file))
    }

    @Test func deletingTheAccountRemovesItsSnapshot() throws {
        let world = try World(.sqlite)
        _ = world.env.service.saveMappingIndexSnapshots()
        #expect(FileManager.default.fileExists(atPath: world.file))
        try world.env.service.accounts.deleteAccount(accountID: world.env.account.accountID)
        #expect(!FileManager.default.fileExists(atPath: world.file))
    }

    @Test func aSaveBegunAfterTheDeadlineIsNotMadeAndAKilledSavesLeftoverIsRemoved() throws {
        let world = try World(.sqlite)
        #expect(world.env.service.saveMappingIndexSnapshots(deadline: .distantPast).saved == 0)
        #expect(!FileManager.default.fileExists(atPath: world.file))
        // A process killed while writing leaves its temporary file; the next start removes it.
        let leftover = world.file + ".tmp-4242"
        #expect(FileManager.default.createFile(atPath: leftover, contents: Data([1, 2, 3])))
        #expect(world.env.service.saveMappingIndexSnapshots().saved == 1)
        _ = try IndexSnapshotDirectory(path: world.directory.path)
        #expect(!FileManager.default.fileExists(atPath: leftover))
        #expect(FileManager.default.fileExists(atPath: world.file))
    }

    @Test func snapshotFilesAreNamedByAccountSafely() throws {
        let directory = try IndexSnapshotDirectory(path: NSTemporaryDirectory() + "concord-snapshots-" + UUID().uuidString)
        let cases: [(String, String)] = [
            ("0F3C1E6A-1B2C-4D5E-8F90-A1B2C3D4E5F6", "0F3C1E6A-1B2C-4D5E-8F90-A1B2C3D4E5F6.index"),
            ("acct_1", "acct_1.index"),
            ("../x", "x2e2e2f78.index"),
            ("", "x.index"),
            ("\u{1}#", "x0123.index"),   // not "x123": two digits a byte
            ("\u{12}\u{3}", "x1203.index"),
        ]
        for (account, name) in cases {
            #expect(directory.file(account) == directory.path + "/" + name, "\(account)")
        }
    }
}
