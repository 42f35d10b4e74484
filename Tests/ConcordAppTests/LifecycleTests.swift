import Synchronization
import Testing

@testable import ConcordApp

/// One list of started components, stopped in reverse on a failed start and on shutdown alike.
@Suite struct LifecycleTests {
    final class Journal: Sendable {
        let lines = Mutex<[String]>([])
        func add(_ line: String) { self.lines.withLock { $0.append(line) } }
        var all: [String] { self.lines.withLock { $0 } }
    }

    @Test(arguments: [Lifecycle.Reason.shutdown, .startFailed])
    func componentsStopInReverseOrderOnce(_ reason: Lifecycle.Reason) throws {
        let journal = Journal()
        let lifecycle = Lifecycle()
        lifecycle.register("a") { _ in journal.add("stop a") }
        let b = try lifecycle.start("b", { () throws(StartupError) in journal.add("start b"); return 2 }) { value, reason in
            journal.add("stop b \(value) \(reason)")
        }
        #expect(b == 2)
        lifecycle.register("c") { _ in journal.add("stop c") }
        lifecycle.stop(reason)
        lifecycle.stop(reason)
        #expect(journal.all == ["start b", "stop c", "stop b 2 \(reason)", "stop a"])
    }

    @Test func aComponentThatFailsToStartIsNotStopped() {
        let journal = Journal()
        let lifecycle = Lifecycle()
        lifecycle.register("a") { _ in journal.add("stop a") }
        #expect(throws: StartupError.self) {
            _ = try lifecycle.start("b", { () throws(StartupError) -> Int in throw StartupError("no") }) { _, _ in journal.add("stop b") }
        }
        lifecycle.stop(.startFailed)
        #expect(journal.all == ["stop a"])
        #expect(lifecycle.names == ["a"])
    }

    /// The server's components, in start order; shutdown stops them from the long-polls back to the
    /// logs (the scheduler after everything that schedules on it).
    @Test func theServerRegistersEachComponentOnce() throws {
        let server = try APIServer()
        #expect(server.app.lifecycle.names == ["logs", "scheduler", "generated webhook key", "storage", "mapping index snapshots", "webhook delivery", "workers", "listener", "long-polls"])
    }
}
