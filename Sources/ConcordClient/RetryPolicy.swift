import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// When and how long the client waits before sending a request again.
///
/// Retried: `503` answers (`unavailable`, `tooManyConnections`: the server did not act on the
/// request), any request; connection failures before the request could reach the server
/// (cannot connect, host not found), any request; connection failures after it may have
/// reached the server (connection lost, timed out), only idempotent requests. Waits follow
/// the server's `Retry-After` when it gives one, else grow exponentially with jitter.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included (1: never retry).
    public var maxAttempts: Int
    /// Base wait before the first retry, in seconds.
    public var initialDelay: Double
    /// Each further retry waits this many times longer.
    public var multiplier: Double
    /// Upper bound of a computed wait, in seconds.
    public var maxDelay: Double
    /// A `Retry-After` longer than this (seconds) is not waited for: the `503` is thrown
    /// (with `retryAfter` set) so the app can decide.
    public var maxRetryAfter: Double
    /// Whether connection failures are retried at all.
    public var retriesConnectionErrors: Bool

    public init(maxAttempts: Int = 4, initialDelay: Double = 0.25, multiplier: Double = 2, maxDelay: Double = 8, maxRetryAfter: Double = 30, retriesConnectionErrors: Bool = true) {
        self.maxAttempts = maxAttempts
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
        self.retriesConnectionErrors = retriesConnectionErrors
    }

    /// Four attempts, 0.25 s doubling up to 8 s, `Retry-After` honoured up to 30 s.
    public static let standard = RetryPolicy()
    /// One attempt: every failure is thrown at once.
    public static let never = RetryPolicy(maxAttempts: 1)

    /// Seconds to wait before retry number `retry` (1 for the first), or nil when it should
    /// not be made (attempts spent, or the server asks for longer than `maxRetryAfter`).
    ///
    /// Without `Retry-After`: "equal jitter", a uniform wait in `[d/2, d]` where
    /// `d = min(maxDelay, initialDelay * multiplier^(retry-1))`, so clients that failed
    /// together do not come back together. `random` is in `0..<1`.
    public func delay(beforeRetry retry: Int, retryAfter: Double?, random: Double) -> Double? {
        guard retry >= 1, retry < self.maxAttempts else { return nil }
        if let retryAfter {
            guard retryAfter <= self.maxRetryAfter else { return nil }
            return max(0, retryAfter)
        }
        let exponent = Double(retry - 1)
        let full = min(self.maxDelay, self.initialDelay * pow(self.multiplier, exponent))
        let unit = min(max(random, 0), 1)
        return max(0, full / 2 + unit * full / 2)
    }

    /// Whether a connection-level failure allows another attempt: failures before anything was
    /// sent for any request, failures that may follow a delivered request only when repeating
    /// it is harmless.
    func retries(_ error: URLError, idempotent: Bool) -> Bool {
        guard self.retriesConnectionErrors else { return false }
        switch error.code {
        case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet:
            return true
        case .networkConnectionLost, .timedOut, .badServerResponse:
            return idempotent
        default:
            return false
        }
    }
}

/// `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
enum RetryAfter {
    /// Seconds to wait from `now`, or nil when the value is neither form; a date in the
    /// past means 0.
    static func seconds(_ value: String, now: Date = Date()) -> Double? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            return Double(text) ?? nil
        }
        guard let date = Self.httpDate(text) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }

    /// IMF-fixdate, and the obsolete RFC 850 and asctime forms recipients must accept
    /// (RFC 9110 §5.6.7).
    static func httpDate(_ text: String) -> Date? {
        // asctime pads the day with a space ("Nov  6"); one space is what the formatter reads.
        let text = text.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        for format in ["EEE, dd MMM yyyy HH:mm:ss 'GMT'", "EEEE, dd-MMM-yy HH:mm:ss 'GMT'", "EEE MMM d HH:mm:ss yyyy"] {
            // A formatter per call: DateFormatter is not Sendable, and 503s are rare.
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
