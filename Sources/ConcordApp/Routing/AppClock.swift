#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The app's one clock: monotonic nanoseconds, passed in so that rate limits, long-polls, the
/// pipeline's timing and the dispatcher read the same time, and tests can drive it.
public struct AppClock: Sendable {
    /// Monotonic nanoseconds (never jumps with the wall clock).
    public let nanoseconds: @Sendable () -> Int64

    public init(nanoseconds: @escaping @Sendable () -> Int64) { self.nanoseconds = nanoseconds }

    /// `CLOCK_MONOTONIC`.
    public static let monotonic = AppClock { MonotonicClock.nanoseconds() }

    /// Monotonic seconds.
    public var seconds: Double { Double(self.nanoseconds()) / 1e9 }
}

/// Monotonic time for durations (never jumps with the wall clock).
enum MonotonicClock {
    static func nanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
