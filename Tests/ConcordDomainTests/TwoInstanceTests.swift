import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

/// Two stores on one database stand for two Concord instances sharing it (API.md §5, §7:
/// "on one server or on several sharing one database").
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

    /// Devices on different instances map the same new content at once: one record per content.
    @Test(arguments: TestEngine.available) func racingInstancesConvergeOnOneRecord(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let second = try env.anotherInstance()
        let a = try env.device("A")
        let b = try env.device("B")
        let contents = 30
        try env.put(a, assets: (0..<contents).map { ("a\($0)", fp($0)) })
        try env.put(b, assets: (0..<contents).map { ("b\($0)", fp($0)) })
        let lock = NSLock()
        nonisolated(unsafe) var answers: [Int: Set<String>] = [:]
        nonisolated(unsafe) var failures: [String] = []
        let services = [env.service, second]
        self.onThreads(6) { t in
            // Threads alternate instances and devices; half walk the contents backwards.
            let service = services[t % 2]
            let (device, prefix) = (t / 2) % 2 == 0 ? (a, "a") : (b, "b")
            let order = t % 3 == 0 ? Array((0..<contents).reversed()) : Array(0..<contents)
            for i in order {
                do {
                    let r = try service.cloudIdentifiers(forLocalIdentifiers: ["\(prefix)\(i)"], device: device)
                    if case .found(let c) = r[0].result { lock.withLock { _ = answers[i, default: []].insert(c) } } else { lock.withLock { failures.append("\(r)") } }
                } catch {
                    lock.withLock { failures.append("\(error)") }
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        for i in 0..<contents { #expect(answers[i]?.count == 1, "content \(i): \(answers[i] ?? [])") }
        for i in 0..<contents {
            guard let c = answers[i]?.first else { continue }
            #expect(try second.localIdentifiers(forCloudIdentifiers: [c], device: a).map(\.result) == [.found("a\(i)")])
            #expect(try env.local(b, [c]) == [.found("b\(i)")])
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
