/// Names one piece of scheduled work, to cancel it (`TimedWorkScheduler.cancel`).
public struct ScheduledWork: Hashable, Sendable {
    public let id: UInt64

    public init(id: UInt64) { self.id = id }
}

/// Runs work once a deadline of its monotonic clock has passed: the one place timed work waits
/// (long-poll deadlines, snapshot saves, retries, deliveries), instead of a thread or a timer each.
///
/// The contract every implementation keeps:
/// - Work runs once, at or after its deadline, never before (as read on `clock`).
/// - Work due by the same moment runs in deadline order; work with equal deadlines in the order
///   it was scheduled.
/// - Work runs on the scheduler's own thread, one at a time: it must be short and must not block
///   (hand storage calls, network calls and long computation to a pool). A deadline passed while
///   other work ran is served as soon as that work returns.
/// - `cancel` before the work started means it never runs.
public protocol TimedWorkScheduler: Sendable {
    /// The clock deadlines are read on.
    var clock: MonotonicClock { get }

    /// Schedules `work` for when `clock` reaches `deadline` (nanoseconds; a past one: as soon as
    /// possible). A scheduler that has stopped never runs it.
    @discardableResult
    func schedule(at deadline: Int64, _ work: @escaping @Sendable () -> Void) -> ScheduledWork

    /// Cancels `work`; true when it had not started (it will not), false when it ran, is running,
    /// was cancelled before, or is unknown.
    @discardableResult
    func cancel(_ work: ScheduledWork) -> Bool
}

extension TimedWorkScheduler {
    /// Schedules `work` for `seconds` from now on `clock`.
    @discardableResult
    public func schedule(after seconds: Double, _ work: @escaping @Sendable () -> Void) -> ScheduledWork {
        self.schedule(at: self.clock.nanoseconds(after: seconds), work)
    }
}
