import CConcordSystem
import ConcordDomain
import Foundation
import Synchronization

/// The process's one `TimedWorkScheduler`: one thread sleeping until the nearest deadline of a
/// heap (`TimedWorkQueue`), then running what is due, one at a time. Long-poll deadlines and the
/// mapping index's background snapshot saves are scheduled here; work that blocks is handed on
/// by the work itself (the snapshot saver has its own queue), so a deadline is never late by more
/// than the short work before it.
final class Scheduler: TimedWorkScheduler, @unchecked Sendable {
    // @unchecked Sendable: `queue` and `stopped` are only touched holding `condition`'s lock;
    // `thread` is written once in `init`.
    let clock: MonotonicClock
    private let condition = NSCondition()
    private var queue = TimedWorkQueue()
    private var stopped = false
    /// The scheduler's thread has left its loop (`stop()` waits for it).
    private var finished = false

    /// For parts built without one (a test's `AppContext`); never stopped. A started app has its own.
    static let shared = Scheduler(name: "concord-scheduler-shared")

    init(clock: MonotonicClock = .system, name: String = "concord-scheduler") {
        self.clock = clock
        let thread = Thread { [self] in
            // Named from inside, by the system call (Foundation's setter does not always reach
            // the kernel's name, which `top -H` and /proc show).
            concord_set_thread_name(name)
            self.run()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Work scheduled and not yet run or cancelled.
    var pending: Int { self.condition.withLock { self.queue.count } }

    @discardableResult
    func schedule(at deadline: Int64, _ work: @escaping @Sendable () -> Void) -> ScheduledWork {
        self.condition.withLock {
            // Stopped: a token that names nothing (cancelling it returns false).
            guard !self.stopped else { return ScheduledWork(id: 0) }
            let earlier = self.queue.nextDeadline().map { deadline < $0 } ?? true
            let token = self.queue.add(at: deadline, work)
            // The thread sleeps until the nearest deadline: a nearer one wakes it.
            if earlier { self.condition.signal() }
            return token
        }
    }

    @discardableResult
    func cancel(_ work: ScheduledWork) -> Bool {
        self.condition.withLock { self.queue.cancel(work) }
    }

    /// Stops the thread (work running now finishes first); what is still scheduled never runs,
    /// nor does work scheduled later. Returns once the thread has stopped.
    func stop() {
        self.condition.lock()
        self.stopped = true
        self.queue.removeAll()
        self.condition.broadcast()
        while !self.finished { self.condition.wait() }
        self.condition.unlock()
    }

    private func run() {
        self.condition.lock()
        while !self.stopped {
            let now = self.clock.nanoseconds()
            if let work = self.queue.takeDue(now) {
                self.condition.unlock()
                work()
                self.condition.lock()
                continue
            }
            if let next = self.queue.nextDeadline() {
                // The system's timed wait takes a wall-clock date; what is due is decided by `clock`.
                _ = self.condition.wait(until: Date(timeIntervalSinceNow: Double(next - now) / 1e9))
            } else {
                self.condition.wait()
            }
        }
        self.finished = true
        self.condition.broadcast()
        self.condition.unlock()
    }
}
