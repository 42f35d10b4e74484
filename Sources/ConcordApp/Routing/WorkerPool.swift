import CConcordSystem
import ConcordDomain
import Dispatch
import Foundation
import Synchronization

/// A fixed set of threads running jobs first come, first served: the app's two pools are two of
/// these (`Dispatcher`): a compute pool with a thread per core for the lookups that are
/// computation (routes declared `.perCoreLookup`), and a blocking pool with more threads than
/// cores for work that waits on storage (a commit's fsync, a PostgreSQL round trip).
///
/// Bounded twice: `threadCount` jobs run at once, and at most `maxPending` wait; past that
/// `submit` refuses, and the caller answers `503 unavailable` instead of letting the queue grow
/// without limit.
final class WorkerPool: Sendable {
    private struct State {
        /// Queued jobs from `head` on; a taken slot is emptied at once.
        var jobs: [(@Sendable () -> Void)?] = []
        var head = 0
        var running = 0
        var stopping = false
        var waiting: Int { self.jobs.count - self.head }
    }

    private let state = Mutex(State())
    /// One signal per queued job, and one per thread at shutdown: a thread waits on it for work.
    private let available = DispatchSemaphore(value: 0)
    /// One signal per thread that has left (`shutdown` waits for them).
    private let left = DispatchSemaphore(value: 0)
    let name: String
    let threadCount: Int
    let maxPending: Int
    /// The shutdown's deadline is read on it.
    private let clock: MonotonicClock

    /// - Parameter batchScheduling: the threads run under the batch scheduling policy
    ///   (`ServerConfiguration.batchScheduling`: the compute pool, which trades requests with the loops).
    init(name: String = "concord-work", threadCount: Int, maxPending: Int = 10_000, clock: MonotonicClock = .system,
         batchScheduling: Bool = false) {
        self.name = name
        self.threadCount = max(1, threadCount)
        self.maxPending = maxPending
        self.clock = clock
        for i in 0..<self.threadCount {
            // Strong on purpose: a thread keeps the pool alive until it has left `work()`,
            // so shutting down and releasing the pool can never race a waking thread.
            let name = "\(name)-\(i)"
            let thread = Thread {
                // Named from inside, by the system call (Foundation's setter does not always reach
                // the kernel's name, which `top -H` and /proc show).
                concord_set_thread_name(name)
                if batchScheduling { _ = concord_set_thread_batch_scheduling() }
                self.work()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Queues `job`; false when the queue is full or the pool is shutting down.
    func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        let accepted = self.state.withLock { state in
            guard !state.stopping, state.waiting < self.maxPending else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted { self.available.signal() }
        return accepted
    }

    /// Jobs waiting or running (for metrics).
    var depth: Int { self.state.withLock { $0.waiting + $0.running } }

    /// Jobs running right now.
    var runningCount: Int { self.state.withLock { $0.running } }

    /// Runs what is queued, then stops the threads; returns when they have all left or when
    /// `deadline` (seconds, on the pool's clock) passes, with the number of jobs still queued or
    /// running then.
    @discardableResult
    func shutdown(deadline: Double) -> Int {
        let end = self.clock.nanoseconds(after: deadline)
        let first = self.state.withLock { state in
            defer { state.stopping = true }
            return !state.stopping
        }
        if first {
            for _ in 0..<self.threadCount { self.available.signal() }
            var gone = 0
            while gone < self.threadCount {
                let left = end - self.clock.nanoseconds()
                if left <= 0 { break }
                // The system's timed wait, in slices: whether the deadline passed is the clock's to say.
                if self.left.wait(timeout: .now() + .nanoseconds(Int(min(left, 50_000_000)))) == .success { gone += 1 }
            }
        }
        return self.state.withLock { $0.waiting + $0.running }
    }

    private func work() {
        while true {
            self.available.wait()
            let job = self.state.withLock { state -> (@Sendable () -> Void)? in
                guard state.head < state.jobs.count else { return nil }   // stopping, and nothing left
                guard let job = state.jobs[state.head] else { preconditionFailure("a queued slot is never empty") }
                // The slot lets go of the job at once: a taken job's closure holds its request, body
                // and all (a library part is megabytes), and up to 1024 taken slots wait for compaction.
                state.jobs[state.head] = nil
                state.head += 1
                if state.head == state.jobs.count {
                    state.jobs.removeAll(keepingCapacity: true)
                    state.head = 0
                } else if state.head > 1024 && state.head * 2 > state.jobs.count {
                    // Compact now and then instead of removeFirst per job (O(n) each).
                    state.jobs.removeFirst(state.head)
                    state.head = 0
                }
                state.running += 1
                return job
            }
            guard let job else { break }
            job()
            self.state.withLock { $0.running -= 1 }
        }
        self.left.signal()
    }
}
