#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Monotonic time, for intervals and deadlines: rate limits, long-poll waits, timings, scheduled
/// work. Passed in (never read from the system where behaviour depends on it), so every part of a
/// process reads the same time and tests drive it (`ManualClock` in the app's test support).
public struct MonotonicClock: Sendable {
    /// Nanoseconds since an arbitrary start; never jumps with the wall clock.
    public let nanoseconds: @Sendable () -> Int64

    public init(nanoseconds: @escaping @Sendable () -> Int64) { self.nanoseconds = nanoseconds }

    /// The system's `CLOCK_MONOTONIC`.
    public static let system = MonotonicClock {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// Monotonic seconds.
    public var seconds: Double { Double(self.nanoseconds()) / 1e9 }

    /// The instant `seconds` from now, in this clock's nanoseconds (negative seconds count as 0).
    public func nanoseconds(after seconds: Double) -> Int64 {
        let now = self.nanoseconds()
        let delta = seconds.isFinite ? min(max(0, seconds) * 1e9, Double(Int64.max / 2)) : Double(Int64.max / 2)
        return now &+ Int64(delta)
    }
}

/// Wall-clock time, for times that are stored or shown (a record's `createdAt`, an upload's
/// expiry, a snapshot's age): the one source of `Date` for behaviour, passed in so tests fix it.
/// Intervals are measured with `MonotonicClock`, which a clock set back cannot disturb.
public struct WallClock: Sendable {
    public let now: @Sendable () -> Date

    public init(now: @escaping @Sendable () -> Date) { self.now = now }

    /// The system's time.
    public static let system = WallClock { Date() }
}
