import Foundation

/// A fixed set of threads running blocking work (storage calls) off the event loops.
///
/// Bounded twice: `threadCount` jobs run at once, and at most `maxPending` wait; past
/// that `submit` refuses, and the caller answers `503 unavailable` instead of letting
/// the queue grow without limit.
///
/// First come, first served on the processor for jobs submitted `onCore` (pure computation, such
/// as a mapping lookup served from memory): such a job starts only while fewer than `cores` jobs
/// that started less than `stallAfter` ago are running. A job running longer is presumed blocked
/// (a commit's fsync, a PostgreSQL round trip), and the next starts beside it. Without the bound
/// the kernel shares a core among all busy threads, and a lookup could finish after several that
/// arrived later (~0.4 ms of CPU each: the tail latency of a loaded core doubled). Other jobs need
/// no core of their own (their time is mostly storage's): they start when a thread is free, but
/// the queue is one line, so a job behind a lookup waiting for a core waits with it (≤ `stallAfter`).
final class WorkerPool: @unchecked Sendable {
    // @unchecked Sendable: `jobs`, `stopping`, `running` and `startedAt` are only touched
    // while holding `condition`'s lock; the threads array is written once in `init` and in
    // `shutdown` (under the lock too).
    private let condition = NSCondition()
    private var jobs: [(run: () -> Void, onCore: Bool)] = []
    private var head = 0
    private var stopping = false
    private var running = 0
    private var threads: [Thread] = []
    /// Per thread, when its current job started (uptime nanoseconds), 0 when idle.
    private var startedAt: [UInt64]
    /// A thread is in a timed wait for the youngest running job to pass `stallAfter`.
    private var watching = false
    let maxPending: Int
    let cores: Int
    let stallAfterNanoseconds: UInt64

    init(threadCount: Int, maxPending: Int = 10_000, cores: Int = .max, stallAfter: Double = 0.002) {
        self.maxPending = maxPending
        self.cores = max(1, cores)
        self.stallAfterNanoseconds = UInt64(max(0, stallAfter) * 1e9)
        self.startedAt = [UInt64](repeating: 0, count: max(1, threadCount))
        for i in 0..<max(1, threadCount) {
            // Strong on purpose: a thread keeps the pool alive until it has left `work()`,
            // so shutting down and releasing the pool can never race a waking thread.
            let name = "concord-work-\(i)"
            let thread = Thread {
                // Named from inside: on Linux a name set before `start()` is not applied.
                Thread.current.name = name
                self.work(slot: i)
            }
            thread.stackSize = 1 << 20
            self.threads.append(thread)
            thread.start()
        }
    }

    /// Queues `job`; false when the queue is full or the pool is shutting down.
    func submit(onCore: Bool = false, _ job: @escaping @Sendable () -> Void) -> Bool {
        self.condition.lock()
        defer { self.condition.unlock() }
        guard !self.stopping, self.jobs.count - self.head < self.maxPending else { return false }
        self.jobs.append((job, onCore))
        // A thread takes it now if it may start; else a watcher is needed, unless there is one
        // (a running job's thread takes it when done).
        if !self.watching || self.jobs[self.head].onCore == false || self.waitForCore(now: DispatchTime.now().uptimeNanoseconds) == 0 {
            self.condition.signal()
        }
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

    private func work(slot: Int) {
        while true {
            self.condition.lock()
            while !self.stopping {
                if self.head < self.jobs.count {
                    let wait = self.jobs[self.head].onCore ? self.waitForCore(now: DispatchTime.now().uptimeNanoseconds) : 0
                    if wait == 0 { break }
                    if self.watching {
                        self.condition.wait()
                    } else {
                        // This thread watches for a running job to stall; the others sleep.
                        self.watching = true
                        _ = self.condition.wait(until: Date(timeIntervalSinceNow: Double(wait) / 1e9))
                        self.watching = false
                    }
                } else {
                    self.condition.wait()
                }
            }
            if self.head == self.jobs.count {
                self.condition.broadcast()
                self.condition.unlock()
                return
            }
            let job = self.jobs[self.head]
            // The slot lets go of the job at once: a taken job's closure holds its request, body
            // and all (a library part is megabytes), and up to 1024 taken slots wait for compaction.
            self.jobs[self.head].run = {}
            self.head += 1
            if self.head == self.jobs.count {
                self.jobs.removeAll(keepingCapacity: true)
                self.head = 0
            }
            // Compact now and then instead of removeFirst per job (O(n) each).
            if self.head > 1024 && self.head * 2 > self.jobs.count {
                self.jobs.removeFirst(self.head)
                self.head = 0
            }
            self.running += 1
            self.startedAt[slot] = DispatchTime.now().uptimeNanoseconds
            // Jobs still wait: someone must watch for this one (or another) to stall.
            if self.head < self.jobs.count && !self.watching { self.condition.signal() }
            self.condition.unlock()
            job.run()
            self.condition.lock()
            self.running -= 1
            self.startedAt[slot] = 0
            // The core this job leaves goes to the next job on this same thread (the loop).
            if self.stopping { self.condition.broadcast() }
            self.condition.unlock()
        }
    }

    /// Nanoseconds until a job may start on a core (0: now): the earliest moment one of the
    /// `cores` youngest running jobs has run for `stallAfter`. Holding the lock.
    private func waitForCore(now: UInt64) -> UInt64 {
        guard self.running >= self.cores else { return 0 }
        var young = 0
        var soonest = UInt64.max
        for started in self.startedAt where started != 0 {
            let age = now &- started
            if age < self.stallAfterNanoseconds {
                young += 1
                soonest = min(soonest, self.stallAfterNanoseconds - age)
            }
        }
        return young < self.cores ? 0 : soonest
    }
}
