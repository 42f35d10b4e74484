import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

/// Two stores on one database stand for two Concord instances sharing it (API.md §7: "on one
/// server or on several sharing one database"; the §5 race is SharedDatabaseTests).
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

    /// Many writers of one device through two instances, and a reader following the feed through a
    /// third view: every change appears exactly once, after every change listed before it — a change
    /// never commits below a token the reader already moved past (it would be missed for good).
    @Test(arguments: TestEngine.available) func changeTokensAreHandedOutInCommitOrderAcrossInstances(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let second = try env.anotherInstance()
        let reader = try env.anotherInstance()
        let d = try env.device()
        let start = try env.service.currentChangeToken(device: d)
        let writers = 4, writesEach = 15
        let lock = NSLock()
        nonisolated(unsafe) var failures: [String] = []
        nonisolated(unsafe) var writersDone = 0
        nonisolated(unsafe) var seen: [String] = []
        let services = [env.service, second]
        self.onThreads(writers + 1) { t in
            if t == writers {
                // The reader: follows the feed until the writers are done and it is drained.
                var since = start
                while true {
                    let finished = lock.withLock { writersDone == writers }
                    do {
                        let page = try reader.changes(since: since, limit: 1000, device: d)
                        for c in page.changes { seen.append(contentsOf: c.details?.assets.inserted ?? []) }
                        since = page.changeToken
                        if finished && page.changes.isEmpty { return }
                    } catch {
                        lock.withLock { failures.append("reader: \(error)") }
                        return
                    }
                }
            }
            for i in 0..<writesEach {
                do {
                    try services[t % 2].applyChanges(LibraryChangeRequest(assets: .init(upsert: [.asset("w\(t)-\(i)", fingerprint: fp(t * 100 + i))])), device: d)
                } catch {
                    lock.withLock { failures.append("writer \(t): \(error)") }
                }
            }
            lock.withLock { writersDone += 1 }
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        let expected = Set((0..<writers).flatMap { t in (0..<writesEach).map { "w\(t)-\($0)" } })
        #expect(seen.count == expected.count, "the reader saw \(seen.count) changes of \(expected.count)")
        #expect(Set(seen) == expected)
        // Each writer's own changes appear in the order it made them.
        for t in 0..<writers {
            let mine = seen.filter { $0.hasPrefix("w\(t)-") }
            #expect(mine == (0..<writesEach).map { "w\(t)-\($0)" })
        }
    }
}
