import Foundation

/// A fixed set of threads running blocking work (storage calls) off the event loops.
///
/// Bounded twice: `threadCount` jobs run at once, and at most `maxPending` wait; past
/// that `submit` refuses, and the caller answers `503 unavailable` instead of letting
/// the queue grow without limit.
final class WorkerPool: @unchecked Sendable {
    // @unchecked Sendable: `jobs`, `stopping` and `running` are only touched while
    // holding `condition`'s lock; the threads array is written once in `init` and in
    // `shutdown` (under the lock too).
    private let condition = NSCondition()
    private var jobs: [() -> Void] = []
    private var head = 0
    private var stopping = false
    private var running = 0
    private var threads: [Thread] = []
    let maxPending: Int

    init(threadCount: Int, maxPending: Int = 10_000) {
        self.maxPending = maxPending
        for i in 0..<max(1, threadCount) {
            // Strong on purpose: a thread keeps the pool alive until it has left `work()`,
            // so shutting down and releasing the pool can never race a waking thread.
            let name = "concord-work-\(i)"
            let thread = Thread {
                // Named from inside: on Linux a name set before `start()` is not applied.
                Thread.current.name = name
                self.work()
            }
            thread.stackSize = 1 << 20
            self.threads.append(thread)
            thread.start()
        }
    }

    /// Queues `job`; false when the queue is full or the pool is shutting down.
    func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        self.condition.lock()
        defer { self.condition.unlock() }
        guard !self.stopping, self.jobs.count - self.head < self.maxPending else { return false }
        self.jobs.append(job)
        self.condition.signal()
        return true
    }

    /// Jobs waiting or running (for metrics).
    var depth: Int {
        self.condition.lock()
        defer { self.condition.unlock() }
        return self.jobs.count - self.head + self.running
    }

    /// Jobs running right now.
    var runningCount: Int {
        self.condition.lock()
        defer { self.condition.unlock() }
        return self.running
    }

    /// Runs what is queued, then stops the threads; returns when they are idle or when
    /// `deadline` (seconds) passes, with the number of jobs still queued or running then.
    @discardableResult
    func shutdown(deadline: Double) -> Int {
        let end = Date(timeIntervalSinceNow: deadline)
        self.condition.lock()
        self.stopping = true
        self.condition.broadcast()
        while (self.jobs.count - self.head > 0 || self.running > 0) && Date() < end {
            _ = self.condition.wait(until: min(end, Date(timeIntervalSinceNow: 0.05)))
        }
        let unfinished = self.jobs.count - self.head + self.running
        self.condition.unlock()
        return unfinished
    }

    private func work() {
        while true {
            self.condition.lock()
            while self.head == self.jobs.count && !self.stopping { self.condition.wait() }
            if self.head == self.jobs.count {
                self.condition.broadcast()
                self.condition.unlock()
                return
            }
            let job = self.jobs[self.head]
            self.head += 1
            // Compact now and then instead of removeFirst per job (O(n) each).
            if self.head > 1024 && self.head * 2 > self.jobs.count {
                self.jobs.removeFirst(self.head)
                self.head = 0
            }
            self.running += 1
            self.condition.unlock()
            job()
            self.condition.lock()
            self.running -= 1
            if self.stopping { self.condition.broadcast() }
            self.condition.unlock()
        }
    }
}
