import ConcordObservability
import Synchronization

/// The server's request rates (`rateLimits`): one bucket per client address, one per caller.
struct RequestRates: Sendable {
    let address: RateLimiter
    let caller: RateLimiter
    let failedAuthCost: Double
    let limitedByAddress: Counter
    let limitedByCaller: Counter
    let clock: AppClock

    init(_ limits: Configuration.RateLimits, metrics: MetricsRegistry, clock: AppClock = .monotonic) {
        self.clock = clock
        self.address = RateLimiter(rate: limits.perAddress, burst: limits.perAddress * limits.burstSeconds)
        self.caller = RateLimiter(rate: limits.perCaller, burst: limits.perCaller * limits.burstSeconds)
        self.failedAuthCost = limits.failedAuthCost
        let help = "Requests answered 429 tooManyRequests, by the limit they passed."
        self.limitedByAddress = metrics.counter("concord_rate_limited_total", help: help, labels: [("scope", "address")])
        self.limitedByCaller = metrics.counter("concord_rate_limited_total", help: help, labels: [("scope", "caller")])
    }

    /// `429` when the request's address is over its rate (nil: go on).
    func checkAddress(_ address: String?) -> APIError? {
        guard let address, let wait = self.address.take(address, now: self.clock.seconds) else { return nil }
        self.limitedByAddress.increment()
        return .tooManyRequests(retryAfter: wait)
    }

    /// A `401` costs its address more than a request.
    func failedAuthentication(_ address: String?) {
        guard let address, self.failedAuthCost > 1 else { return }
        self.address.charge(address, cost: self.failedAuthCost - 1, now: self.clock.seconds)
    }

    /// `429` when the caller (`"device:ID"`, `"account:ID"`, `"admin"`) is over its rate.
    func checkCaller(_ key: String) -> APIError? {
        guard let wait = self.caller.take(key, now: self.clock.seconds) else { return nil }
        self.limitedByCaller.increment()
        return .tooManyRequests(retryAfter: wait)
    }
}

/// Token buckets keyed by a client address or a caller (issue 12): each key may spend `rate`
/// requests per second on average and `burst` at once. Failed authentication spends more from
/// its address's bucket, so guessing tokens is throttled long before ordinary traffic is.
///
/// Memory is bounded: at most `maxKeys` buckets; past that, buckets that have refilled (whose
/// clients are idle) are dropped, and if none has, new keys share one overflow bucket.
final class RateLimiter: Sendable {
    struct Bucket {
        var tokens: Double
        var updated: Double
    }

    let rate: Double
    let burst: Double
    let maxKeys: Int
    private let buckets = Mutex<[String: Bucket]>([:])

    /// - Parameter rate: requests per second per key; 0 turns the limiter off.
    init(rate: Double, burst: Double, maxKeys: Int = 100_000) {
        self.rate = rate
        self.burst = max(1, burst)
        self.maxKeys = maxKeys
    }

    var isOn: Bool { self.rate > 0 }

    /// Spends `cost` from `key`'s bucket. Nil when allowed; otherwise the seconds until the
    /// bucket holds `cost` again (nothing is spent then).
    func take(_ key: String, cost: Double = 1, now: Double) -> Double? {
        guard self.isOn else { return nil }
        let need = min(cost, self.burst)
        return self.buckets.withLock { buckets in
            let slot = self.slot(for: key, in: &buckets, now: now)
            var bucket = self.refilled(buckets[slot], now: now)
            defer { buckets[slot] = bucket }
            guard bucket.tokens >= need else { return (need - bucket.tokens) / self.rate }
            bucket.tokens -= cost
            return nil
        }
    }

    /// Spends `cost` whatever is left (the bucket may go below zero: a penalty to wait out).
    func charge(_ key: String, cost: Double, now: Double) {
        guard self.isOn else { return }
        self.buckets.withLock { buckets in
            let slot = self.slot(for: key, in: &buckets, now: now)
            var bucket = self.refilled(buckets[slot], now: now)
            bucket.tokens -= cost
            buckets[slot] = bucket
        }
    }

    private func refilled(_ bucket: Bucket?, now: Double) -> Bucket {
        guard let bucket else { return Bucket(tokens: self.burst, updated: now) }
        return Bucket(tokens: min(self.burst, bucket.tokens + max(0, now - bucket.updated) * self.rate), updated: now)
    }

    /// `key`, or "" (one bucket shared by every key that does not fit) when the table is full
    /// even after dropping the buckets that have refilled (their clients went quiet).
    private func slot(for key: String, in buckets: inout [String: Bucket], now: Double) -> String {
        if buckets[key] != nil || buckets.count < self.maxKeys { return key }
        buckets = buckets.filter { $0.value.updated + (self.burst - $0.value.tokens) / self.rate > now }
        return buckets.count < self.maxKeys ? key : ""
    }
}
