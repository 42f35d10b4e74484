import ConcordDomain
import Synchronization

/// A test clock: monotonic nanoseconds that move only when told (`advance`).
final class ManualClock: Sendable {
    private let now: Atomic<Int64>

    init(nanoseconds: Int64 = 1_000_000_000) { self.now = Atomic(nanoseconds) }

    var clock: MonotonicClock { MonotonicClock { [self] in self.now.load(ordering: .relaxed) } }

    var nanoseconds: Int64 { self.now.load(ordering: .relaxed) }

    func advance(by seconds: Double) { self.now.add(Int64(seconds * 1e9), ordering: .relaxed) }

    /// Moves the clock to `nanoseconds`, unless it reads later already (it never goes back).
    func advance(to nanoseconds: Int64) { self.now.max(nanoseconds, ordering: .relaxed) }
}

/// A `TimedWorkScheduler` for tests: no thread; `advance(by:)` moves its `ManualClock` and runs
/// what became due, on the caller's thread, in the order the real one would (see `advance(by:)`).
final class ManualScheduler: TimedWorkScheduler, Sendable {
    let manualClock: ManualClock
    private let queue = Mutex(TimedWorkQueue())

    init(clock: ManualClock = ManualClock()) { self.manualClock = clock }

    var clock: MonotonicClock { self.manualClock.clock }

    /// Work scheduled and not yet run or cancelled.
    var pending: Int { self.queue.withLock { $0.count } }

    @discardableResult
    func schedule(at deadline: Int64, _ work: @escaping @Sendable () -> Void) -> ScheduledWork {
        self.queue.withLock { $0.add(at: deadline, work) }
    }

    @discardableResult
    func cancel(_ work: ScheduledWork) -> Bool {
        self.queue.withLock { $0.cancel(work) }
    }

    /// Moves the clock by `seconds`, stopping at each deadline on the way to run its work, as a
    /// punctual scheduler would: work runs with the clock at its deadline, so work it schedules
    /// counts from there (and runs within this advance when due by its end). Returns how many ran.
    @discardableResult
    func advance(by seconds: Double) -> Int {
        let target = self.manualClock.nanoseconds + Int64(seconds * 1e9)
        var ran = 0
        while let work = self.queue.withLock({ queue -> (@Sendable () -> Void)? in
            guard let next = queue.nextDeadline(), next <= target else { return nil }
            self.manualClock.advance(to: next)
            return queue.takeDue(self.manualClock.nanoseconds)
        }) {
            work()
            ran += 1
        }
        self.manualClock.advance(to: target)
        return ran
    }
}
