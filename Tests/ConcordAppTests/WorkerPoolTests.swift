import Foundation
import Synchronization
import Testing

@testable import ConcordApp

/// `WorkerPool` runs at most `cores` young jobs at once for jobs submitted `onCore`, in arrival
/// order, and starts the next beside one that has run past `stallAfter` (presumed blocked).
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

    @Test func shortJobsRunOneCoreAtATimeInArrivalOrder() {
        let pool = WorkerPool(threadCount: 4, cores: 1, stallAfter: 0.5)
        let log = Log()
        let done = DispatchGroup()
        for n in 0..<40 {
            done.enter()
            #expect(pool.submit(onCore: true) {
                log.enter(n)
                Self.spin(0.001)
                log.leave()
                done.leave()
            })
        }
        done.wait()
        #expect(log.mostAtOnce.load(ordering: .relaxed) == 1)
        #expect(log.order.withLock { $0 } == Array(0..<40))
        pool.shutdown(deadline: 1)
    }

    @Test func aBlockedJobDoesNotHoldUpTheOthers() {
        let pool = WorkerPool(threadCount: 4, cores: 1, stallAfter: 0.002)
        let blocked = DispatchSemaphore(value: 0)
        let quickDone = DispatchGroup()
        let started = Date()
        _ = pool.submit(onCore: true) { blocked.wait() }   // a lookup whose account must load, say
        for _ in 0..<3 {
            quickDone.enter()
            _ = pool.submit(onCore: true) { quickDone.leave() }
        }
        // They run beside the blocked job within moments, not after it.
        #expect(quickDone.wait(timeout: .now() + 2) == .success)
        #expect(Date().timeIntervalSince(started) < 1)
        blocked.signal()
        #expect(pool.shutdown(deadline: 2) == 0)
    }

    /// Jobs not submitted `onCore` start whenever a thread is free, bound or not.
    @Test(arguments: [Int.max, 1]) func otherJobsRunOnEveryThread(_ cores: Int) {
        let pool = WorkerPool(threadCount: 4, cores: cores, stallAfter: 10)
        let log = Log()
        let together = DispatchGroup()
        let release = DispatchSemaphore(value: 0)
        for n in 0..<4 {
            together.enter()
            _ = pool.submit {
                log.enter(n)
                together.leave()
                release.wait()
                log.leave()
            }
        }
        #expect(together.wait(timeout: .now() + 2) == .success)
        #expect(log.mostAtOnce.load(ordering: .relaxed) == 4)
        for _ in 0..<4 { release.signal() }
        #expect(pool.shutdown(deadline: 2) == 0)
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
}
