import ConcordObservability
import Synchronization

/// The server's request rates (`rateLimits`): one bucket per client address, one per caller, and
/// per address one bucket of failed authentications.
///
/// Failures are charged to their own bucket, not to the address's requests: behind a NAT
/// or a reverse proxy one address is many users, and one of them guessing tokens must not throttle
/// the others. While an address cannot afford another failure, a token from it is looked up only
/// when it is one this server has recently seen valid (`KnownTokens`); any other is `429` before
/// its storage read — so guessing stays throttled while the devices already working go on.
struct RequestRates: Sendable {
    let address: RateLimiter
    let caller: RateLimiter
    /// Per address: what failed authentications cost (`failedAuthCost` each), refilling at the address rate.
    let failures: RateLimiter
    let failedAuthCost: Double
    /// Tokens that authenticated lately (their hashes).
    let knownTokens: KnownTokens
    let limitedByAddress: Counter
    let limitedByCaller: Counter
    let clock: AppClock

    init(_ limits: Configuration.RateLimits, metrics: MetricsRegistry, clock: AppClock = .monotonic) {
        self.clock = clock
        self.address = RateLimiter(rate: limits.perAddress, burst: limits.perAddress * limits.burstSeconds)
        self.caller = RateLimiter(rate: limits.perCaller, burst: limits.perCaller * limits.burstSeconds)
        self.failedAuthCost = limits.failedAuthCost
        // Off with the address limit, or when a failure costs nothing.
        self.failures = RateLimiter(rate: limits.failedAuthCost > 0 ? limits.perAddress : 0, burst: limits.perAddress * limits.burstSeconds)
        self.knownTokens = KnownTokens()
        let help = "Requests answered 429 tooManyRequests, by the limit they passed."
        self.limitedByAddress = metrics.counter("concord_rate_limited_total", help: help, labels: [("scope", "address")])
        self.limitedByCaller = metrics.counter("concord_rate_limited_total", help: help, labels: [("scope", "caller")])
    }

    /// `429` when the request's address is over its rate, or when it has spent what failed
    /// authentications may cost and `token` is not one seen valid lately (nil: go on).
    func checkAddress(_ address: String?, token: @autoclosure () -> String? = nil) -> APIError? {
        guard let address else { return nil }
        let now = self.clock.seconds
        if let wait = self.address.take(address, now: now) {
            self.limitedByAddress.increment()
            return .tooManyRequests(retryAfter: wait)
        }
        // A request without a token is no guess (it costs no lookup); a known token is no guess either.
        guard self.failures.isOn else { return nil }
        let available = self.failures.available(address, now: now)
        guard available < self.failedAuthCost, let token = token(), !self.knownTokens.contains(token, now: now) else { return nil }
        self.limitedByAddress.increment()
        return .tooManyRequests(retryAfter: (min(self.failedAuthCost, self.failures.burst) - available) / self.failures.rate)
    }

    /// A `401` for an unknown token costs its address `failedAuthCost` from its failures bucket.
    func failedAuthentication(_ address: String?) {
        guard let address, self.failedAuthCost > 0 else { return }
        self.failures.charge(address, cost: self.failedAuthCost, now: self.clock.seconds)
    }

    /// A token authenticated: remembered, so that its address's failures do not refuse it.
    func authenticated(_ token: String) {
        guard self.failures.isOn else { return }
        self.knownTokens.insert(token, now: self.clock.seconds)
    }

    /// `429` when the caller (`"device:ID"`, `"account:ID"`, `"admin"`) is over its rate.
    func checkCaller(_ key: String) -> APIError? {
        guard let wait = self.caller.take(key, now: self.clock.seconds) else { return nil }
        self.limitedByCaller.increment()
        return .tooManyRequests(retryAfter: wait)
    }
}

/// Tokens that authenticated in the last `lifetime` seconds, as keyed hashes (SipHash with this
/// process's random seed, so the table holds no token and nobody outside can aim a collision).
/// A hit only spares a token the failed-authentication throttle: it is still looked up.
/// Bounded: at most `maxEntries`; when full, entries older than `lifetime` go, then everything.
final class KnownTokens: Sendable {
    private let seen = Mutex<[Int: Double]>([:])
    let maxEntries: Int
    let lifetime: Double

    init(maxEntries: Int = 100_000, lifetime: Double = 3600) {
        self.maxEntries = maxEntries
        self.lifetime = lifetime
    }

    private static func key(_ token: String) -> Int {
        var hasher = Hasher()
        hasher.combine(token)
        return hasher.finalize()
    }

    func insert(_ token: String, now: Double) {
        let key = Self.key(token)
        self.seen.withLock { seen in
            if seen[key] == nil, seen.count >= self.maxEntries {
                seen = seen.filter { now - $0.value < self.lifetime }
                if seen.count >= self.maxEntries { seen.removeAll(keepingCapacity: true) }
            }
            seen[key] = now
        }
    }

    func contains(_ token: String, now: Double) -> Bool {
        let key = Self.key(token)
        return self.seen.withLock { seen in seen[key].map { now - $0 < self.lifetime } ?? false }
    }
}

/// Token buckets keyed by a client address or a caller: each key may spend `rate`
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

    /// What `key`'s bucket holds now (`burst` for a key never seen); nothing is spent.
    func available(_ key: String, now: Double) -> Double {
        guard self.isOn else { return .infinity }
        return self.buckets.withLock { buckets in self.refilled(buckets[key], now: now).tokens }
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
