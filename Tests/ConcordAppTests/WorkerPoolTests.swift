import CConcordSystem
import ConcordHTTP
import ConcordObservability
import Foundation
import Synchronization
import Testing

@testable import ConcordApp

private func dispatched(_ dispatcher: Dispatcher, _ method: String, _ target: String) async -> HTTPResponse {
    await withCheckedContinuation { continuation in
        dispatcher.handle(HTTPRequest(method: method, target: target)) { continuation.resume(returning: $0) }
    }
}

/// A `WorkerPool` runs at most its threads' worth of jobs at once, first come first served; the
/// dispatcher's two pools (compute for `.perCoreLookup` routes, blocking for storage routes) do
/// not wait for each other.
struct WorkerPoolTests {
    /// Busy work for about `seconds` of this thread's time (not sleeping: it holds its core).
    static func spin(_ seconds: Double) {
        let end = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
        while DispatchTime.now().uptimeNanoseconds < end {}
    }

    final class Log: Sendable {
        let order = Mutex<[Int]>([])
        let running = Atomic<Int>(0)
        let mostAtOnce = Atomic<Int>(0)
        func enter(_ n: Int) {
            let now = self.running.add(1, ordering: .relaxed).newValue
            self.mostAtOnce.max(now, ordering: .relaxed)
            self.order.withLock { $0.append(n) }
        }
        func leave() { self.running.subtract(1, ordering: .relaxed) }
    }

    /// The compute pool on one core: lookups run one at a time, in arrival order.
    @Test func shortJobsRunOneCoreAtATimeInArrivalOrder() {
        let pool = WorkerPool(name: "test-compute", threadCount: 1)
        let log = Log()
        let done = DispatchGroup()
        for n in 0..<40 {
            done.enter()
            #expect(pool.submit {
                log.enter(n)
                Self.spin(0.001)
                log.leave()
                done.leave()
            })
        }
        done.wait()
        #expect(log.mostAtOnce.load(ordering: .relaxed) == 1)
        #expect(log.order.withLock { $0 } == Array(0..<40))
        #expect(pool.shutdown(deadline: 10) == 0)
    }

    /// The policy a job's thread runs under: the batch policy (SCHED_BATCH, 3) for a pool made with
    /// it, the system's default (SCHED_OTHER, 0) otherwise.
    static func policy(of pool: WorkerPool) -> Int32 {
        let seen = Atomic<Int32>(-2)
        let done = DispatchSemaphore(value: 0)
        #expect(pool.submit {
            seen.store(concord_thread_scheduling_policy(), ordering: .relaxed)
            done.signal()
        })
        done.wait()
        return seen.load(ordering: .relaxed)
    }

    @Test(arguments: [(true, Int32(3)), (false, Int32(0))])
    func aPoolsThreadsRunUnderThePolicyItWasMadeWith(_ batch: Bool, _ policy: Int32) {
        let pool = WorkerPool(name: "test-policy", threadCount: 2, batchScheduling: batch)
        #expect(Self.policy(of: pool) == policy)
        #expect(pool.shutdown(deadline: 10) == 0)
    }

    /// The dispatcher's compute pool takes the loops' policy; the blocking pool, which waits on
    /// storage rather than trading requests with the loops, keeps the default.
    @Test func theComputePoolTakesTheBatchPolicyAndTheBlockingPoolDoesNot() {
        let dispatcher = Dispatcher(routes: [], logger: Logger(level: .error, sink: LogSink(flushInterval: 0, output: { _ in })), metrics: MetricsRegistry(),
                                    workerCount: 2, cores: 1, batchScheduling: true)
        #expect(Self.policy(of: dispatcher.compute) == 3)
        #expect(Self.policy(of: dispatcher.workers) == 0)
        _ = dispatcher.shutdown(deadline: 10)
    }

    /// A pool runs as many jobs at once as it has threads, never more.
    @Test(arguments: [1, 2, 4]) func aPoolRunsOneJobPerThreadAtOnce(_ threads: Int) {
        let pool = WorkerPool(threadCount: threads)
        let log = Log()
        let together = DispatchGroup()
        let release = DispatchSemaphore(value: 0)
        for n in 0..<(threads * 2) {
            if n < threads { together.enter() }
            _ = pool.submit {
                log.enter(n)
                if n < threads { together.leave() }
                release.wait()
                log.leave()
            }
        }
        #expect(together.wait(timeout: .now() + 10) == .success)
        #expect(log.mostAtOnce.load(ordering: .relaxed) == threads)
        #expect(log.order.withLock { $0 }.sorted() == Array(0..<threads))
        for _ in 0..<(threads * 2) { release.signal() }
        #expect(pool.shutdown(deadline: 10) == 0)
        #expect(log.mostAtOnce.load(ordering: .relaxed) == threads)
    }

    /// Storage work that holds every blocking thread (a stuck commit, say) does not hold up the
    /// lookups, which have the compute pool; nor do lookups queued for a core hold up storage
    /// work. (One pool with one line used to make a request wait behind whatever was ahead.)
    @Test func thePoolsDoNotWaitForEachOther() async {
        let stuck = DispatchSemaphore(value: 0), busy = DispatchSemaphore(value: 0)
        let routes = [
            Route("POST", "/commit", caller: .anyone, scheduling: .blockingPool) { _ throws(APIError) in stuck.wait(); return .noContent },
            Route("POST", "/lookup", caller: .anyone, scheduling: .perCoreLookup) { _ throws(APIError) in .text("found") },
            Route("POST", "/hog", caller: .anyone, scheduling: .perCoreLookup) { _ throws(APIError) in busy.wait(); return .noContent },
            Route("GET", "/read", caller: .anyone, scheduling: .blockingPool) { _ throws(APIError) in .text("read") },
        ]
        let dispatcher = Dispatcher(routes: routes, logger: Logger(level: .error, sink: LogSink(flushInterval: 0, output: { _ in })),
                                    metrics: MetricsRegistry(), workerCount: 2, cores: 1)
        #expect(dispatcher.compute.threadCount == 1)
        #expect(dispatcher.workers.threadCount == 2)
        // Both blocking threads stuck: lookups are still answered.
        for _ in 0..<2 { dispatcher.handle(HTTPRequest(method: "POST", target: "/commit")) { _ in } }
        while dispatcher.workers.runningCount < 2 { usleep(1000) }
        let found = await dispatched(dispatcher, "POST", "/lookup")
        #expect(found.status == 200 && String(decoding: found.body, as: UTF8.self) == "found")
        for _ in 0..<2 { stuck.signal() }
        // The one core busy and a lookup queued behind it: storage work is still answered.
        dispatcher.handle(HTTPRequest(method: "POST", target: "/hog")) { _ in }
        while dispatcher.compute.runningCount < 1 { usleep(1000) }
        let queuedLookup = Task { await dispatched(dispatcher, "POST", "/lookup") }
        let read = await dispatched(dispatcher, "GET", "/read")
        #expect(read.status == 200 && String(decoding: read.body, as: UTF8.self) == "read")
        busy.signal()
        #expect(await queuedLookup.value.status == 200)
        #expect(dispatcher.shutdown(deadline: 10) == 0)
    }

    /// What a job holds (its request, body and all) is let go once it ran, whether the queue
    /// drained or other jobs still wait behind it: taken slots used to keep up to 1024 finished
    /// jobs, megabytes of library parts each.
    @Test(arguments: [false, true]) func aJobLetsGoOfWhatItHoldsOnceItRan(_ othersWaiting: Bool) {
        final class Payload: Sendable {}
        let pool = WorkerPool(threadCount: 1)
        let release = DispatchSemaphore(value: 0), ran = DispatchSemaphore(value: 0)
        weak var held: Payload?
        do {
            let payload = Payload()
            held = payload
            #expect(pool.submit { withExtendedLifetime(payload) {}; ran.signal() })
        }
        if othersWaiting { _ = pool.submit { release.wait() }; _ = pool.submit {} }
        ran.wait()
        // The thread took the job and ran it; the pool's slot must not keep it alive.
        let deadline = Date().addingTimeInterval(2)
        while held != nil && Date() < deadline { usleep(1000) }
        #expect(held == nil)
        release.signal()
        #expect(pool.shutdown(deadline: 2) == 0)
    }

    /// A shutdown runs what was queued, refuses what comes after, and says what is still unfinished
    /// when its deadline (on the pool's clock) passes.
    @Test func shutdownDrainsThenRefuses() {
        let pool = WorkerPool(threadCount: 1)
        let ran = Atomic<Int>(0)
        let gate = DispatchSemaphore(value: 0)
        _ = pool.submit { gate.wait() }
        for _ in 0..<3 { _ = pool.submit { ran.add(1, ordering: .relaxed) } }
        let clock = ManualClock()
        let stuck = WorkerPool(threadCount: 1, clock: clock.clock)
        _ = stuck.submit { gate.wait() }
        _ = stuck.submit {}
        while stuck.runningCount < 1 { usleep(1000) }
        // Its clock never moves to the deadline by itself; moved past it, the shutdown gives up.
        let advancing = Thread { usleep(20_000); clock.advance(by: 5) }
        advancing.start()
        #expect(stuck.shutdown(deadline: 1) == 2)
        #expect(!stuck.submit {})
        gate.signal()
        gate.signal()
        #expect(pool.shutdown(deadline: 10) == 0)
        #expect(ran.load(ordering: .relaxed) == 3)
        #expect(!pool.submit {})
    }
}
