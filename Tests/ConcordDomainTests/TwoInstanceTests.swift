import ConcordDomain
import ConcordMappingIndex
import ConcordTestSupport
import Foundation
import Testing

/// Two stores on one database stand for two Concord instances sharing it ("on one
/// server or on several sharing one database"; the mapping race is SharedDatabaseTests).
@Suite struct TwoInstanceTests {
    /// Runs `count` bodies on their own threads at once and waits for all of them.
    private func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let group = DispatchGroup()
        for i in 0..<count {
            group.enter()
            let thread = Thread {
                body(i)
                group.leave()
            }
            thread.start()
        }
        group.wait()
    }

    /// `writers` threads each write `writesEach` changes named `w<t>-<i>` (through `write(t, i)`),
    /// while one reader follows the feed from `start` with `readPage(since)` until the writers are
    /// done and a page comes back empty. Then: no failure, every change seen exactly once, and each
    /// writer's changes in the order it made them — a change never commits below a token the reader
    /// already moved past (it would be missed for good).
    private func expectFeedSeesEveryWriteInCommitOrder(
        writers: Int, writesEach: Int, start: String, prefix: String = "",
        readPage: @escaping @Sendable (_ since: String) throws -> (names: [String], next: String, empty: Bool),
        write: @escaping @Sendable (_ writer: Int, _ index: Int) throws -> Void
    ) {
        let lock = NSLock()
        nonisolated(unsafe) var failures: [String] = []
        nonisolated(unsafe) var writersDone = 0
        nonisolated(unsafe) var seen: [String] = []
        self.onThreads(writers + 1) { t in
            if t == writers {
                var since = start
                while true {
                    let finished = lock.withLock { writersDone == writers }
                    do {
                        let page = try readPage(since)
                        seen.append(contentsOf: page.names)
                        since = page.next
                        if finished && page.empty { return }
                    } catch {
                        lock.withLock { failures.append("reader: \(error)") }
                        return
                    }
                }
            }
            for i in 0..<writesEach {
                do { try write(t, i) } catch { lock.withLock { failures.append("writer \(t): \(error)") } }
            }
            lock.withLock { writersDone += 1 }
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        let expected = (0..<writers).flatMap { t in (0..<writesEach).map { "\(prefix)w\(t)-\($0)" } }
        #expect(seen.count == expected.count, "the reader saw \(seen.count) changes of \(expected.count)")
        #expect(Set(seen) == Set(expected))
        for t in 0..<writers {
            #expect(seen.filter { $0.hasPrefix("\(prefix)w\(t)-") } == (0..<writesEach).map { "\(prefix)w\(t)-\($0)" })
        }
    }

    /// Many writers of one device through two instances, and a reader following the feed through a
    /// third view: every change appears exactly once, after every change listed before it — a change
    /// never commits below a token the reader already moved past (it would be missed for good).
    @Test(arguments: TestEngine.available) func changeTokensAreHandedOutInCommitOrderAcrossInstances(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let second = try env.anotherInstance()
        let reader = try env.anotherInstance()
        let d = try env.device()
        let start = try env.service.history.currentChangeToken(device: d)
        let services = [env.service, second]
        self.expectFeedSeesEveryWriteInCommitOrder(writers: 4, writesEach: 15, start: start) { since in
            let page = try reader.history.changes(since: since, limit: 1000, device: d)
            return (page.changes.flatMap { $0.details?.assets.inserted ?? [] }, page.changeToken, page.changes.isEmpty)
        } write: { t, i in
            try services[t % 2].library.applyChanges(LibraryChangeRequest(assets: .init(upsert: [.asset("w\(t)-\(i)", fingerprint: fp(t * 100 + i))])), device: d)
        }
    }

    /// If-Match is checked against what every instance committed: a version read on one instance and
    /// overtaken on the other answers versionMismatch with the current version, for entries and journals.
    @Test(arguments: TestEngine.available) func staleIfMatchOnAnotherInstanceIsVersionMismatch(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let second = try env.anotherInstance()
        let a = try env.device("A")
        let b = try env.device("B")
        let j = try env.service.journals.createJournal(title: "Trip", device: a)
        let e = try env.service.journals.putEntry(journalID: j.journalID, entryID: "e", text: "one", photos: [], ifMatch: nil, device: a)
        // Instance 2 reads the entry, instance 1 moves it on.
        let seen = try second.journals.journal(j.journalID, device: b).entries[0].version
        #expect(seen == e.version)
        let moved = try env.service.journals.putEntry(journalID: j.journalID, entryID: "e", text: "two", photos: [], ifMatch: .versions([e.version]), device: a)
        expectError(.versionMismatch(currentVersion: moved.version)) {
            try second.journals.putEntry(journalID: j.journalID, entryID: "e", text: "stale", photos: [], ifMatch: .versions([seen]), device: b)
        }
        expectError(.versionMismatch(currentVersion: moved.version)) {
            try second.journals.deleteEntry(journalID: j.journalID, entryID: "e", ifMatch: .versions([seen]), device: b)
        }
        #expect(try second.journals.journal(j.journalID, device: b).entries[0].text == "two")
        // The same for the journal itself: a rename on instance 2 makes instance 1's version stale.
        let current = try env.service.journals.journal(j.journalID, device: a).journal.version
        let renamed = try second.journals.renameJournal(j.journalID, title: "Renamed", ifMatch: .versions([current]), device: b)
        expectError(.versionMismatch(currentVersion: renamed.version)) {
            try env.service.journals.renameJournal(j.journalID, title: "Stale", ifMatch: .versions([current]), device: a)
        }
        expectError(.versionMismatch(currentVersion: renamed.version)) {
            try env.service.journals.deleteJournal(j.journalID, ifMatch: .versions([current]), device: a)
        }
        #expect(try env.service.journals.journal(j.journalID, device: a).journal.title == "Renamed")
    }

    /// Two devices on two instances race one If-Match on the same version: exactly one wins, the other
    /// answers versionMismatch naming the winner's version.
    @Test(arguments: TestEngine.available) func racingIfMatchOnTwoInstancesHasOneWinner(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let services = [env.service, try env.anotherInstance()]
        let devices = [try env.device("A"), try env.device("B")]
        let j = try env.service.journals.createJournal(title: "Trip", device: devices[0])
        let base = try env.service.journals.putEntry(journalID: j.journalID, entryID: "e", text: "base", photos: [], ifMatch: nil, device: devices[0])
        let lock = NSLock()
        nonisolated(unsafe) var outcomes: [Int: Result<String, any Error>] = [:]
        self.onThreads(2) { i in
            let r = Result { try services[i].journals.putEntry(journalID: j.journalID, entryID: "e", text: "from \(i)", photos: [],
                                                      ifMatch: .versions([base.version]), device: devices[i]).version }
            lock.withLock { outcomes[i] = r }
        }
        let winners = outcomes.filter { if case .success = $0.value { return true } else { return false } }
        #expect(winners.count == 1)
        guard let (w, result) = winners.first, case .success(let version) = result, case .failure(let error)? = outcomes[1 - w] else { return }
        #expect(error as? DomainError == .versionMismatch(currentVersion: version))
        #expect(try services[1 - w].journals.journal(j.journalID, device: devices[1 - w]).entries[0].text == "from \(w)")
    }

    /// The account's journal feed, written through two instances and followed through a third: every
    /// change appears exactly once and after every change listed before it (tokens in commit order).
    @Test(arguments: TestEngine.available) func journalChangeTokensAreHandedOutInCommitOrderAcrossInstances(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let second = try env.anotherInstance()
        let reader = try env.anotherInstance()
        let d = try env.device()
        let j = try env.service.journals.createJournal(title: "Trip", device: d)
        let start = try env.service.journals.currentJournalChangeToken(device: d)
        let services = [env.service, second]
        self.expectFeedSeesEveryWriteInCommitOrder(writers: 4, writesEach: 10, start: start, prefix: j.journalID + "/") { since in
            let page = try reader.journals.journalChanges(since: since, limit: 1000, device: d)
            return (page.changes.flatMap { $0.details.entries.inserted }, page.changeToken, page.changes.isEmpty)
        } write: { t, i in
            _ = try services[t % 2].journals.putEntry(journalID: j.journalID, entryID: "w\(t)-\(i)", text: "", photos: [], ifMatch: nil, device: d)
        }
    }

    /// An instance with the mapping index off still moves the account's mapping version on when it
    /// changes the mapping tables: an instance with the index on, sharing the database, then
    /// reloads instead of answering from what it held before.
    @Test(arguments: TestEngine.available) func aWriteThroughAnInstanceWithoutTheIndexReachesOneWithIt(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d1 = try env.device("one"), d2 = try env.device("two")
        try env.put(d1, assets: [("X/L0/001", fp(1))])
        try env.put(d2, assets: [("Y/L0/001", fp(1))])
        let cloud = try env.cloudID(d1, "X/L0/001")
        #expect(try env.local(d2, [cloud]) == [.found("Y/L0/001")])
        var configuration = env.service.configuration
        configuration.mappingIndexBytes = 0
        let clock = env.clock
        let withoutIndex = try ConcordService(store: try env.database.openAnotherStore(), configuration: configuration, clock: { clock.now })
        try withoutIndex.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(delete: ["Y/L0/001"])), device: d2)
        #expect(try env.local(d2, [cloud]) == [.error(.identifierNotFound(limitedLibrary: false))])
        #expect(try env.cloud(d2, ["Y/L0/001"]) == [.error(.identifierNotFound(limitedLibrary: false))])
        #expect(env.service.mappingIndex?.statistics.catchUps ?? 0 >= 1)
    }
}
