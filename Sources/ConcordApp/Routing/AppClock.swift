import ConcordDomain

/// The app's name for its one monotonic clock (ConcordDomain's `MonotonicClock`): rate limits,
/// long-polls, the pipeline's timing, the dispatcher and the scheduler read the same time, and
/// tests drive it.
public typealias AppClock = MonotonicClock

extension MonotonicClock {
    /// `CLOCK_MONOTONIC` (`MonotonicClock.system`).
    public static var monotonic: MonotonicClock { .system }
}
