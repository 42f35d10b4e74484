import ConcordObservability
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordApp

/// Token buckets alone, time passed in by hand.
@Suite struct RateLimiterTests {
    @Test func aBucketAllowsItsBurstThenItsRate() {
        let limiter = RateLimiter(rate: 10, burst: 5)
        for _ in 0..<5 { #expect(limiter.take("a", now: 0) == nil) }
        let wait = limiter.take("a", now: 0)
        #expect(wait != nil && abs(wait! - 0.1) < 1e-9)     // one request per 0.1 s
        #expect(limiter.take("b", now: 0) == nil)           // another key has its own bucket
        #expect(limiter.take("a", now: 0.05) != nil)
        #expect(limiter.take("a", now: 0.1) == nil)
        #expect(limiter.take("a", now: 10) == nil)          // refilled, never above the burst:
        for _ in 0..<4 { #expect(limiter.take("a", now: 10) == nil) }
        #expect(limiter.take("a", now: 10) != nil)
    }

    @Test func aChargeIsWaitedOut() {
        let limiter = RateLimiter(rate: 10, burst: 10)
        limiter.charge("a", cost: 30, now: 0)                // 10 - 30 = -20 tokens
        let wait = limiter.take("a", now: 0)
        #expect(wait != nil && abs(wait! - 2.1) < 1e-9)     // back to 1 token after 2.1 s
        #expect(limiter.take("a", now: 2.0) != nil)
        #expect(limiter.take("a", now: 2.1) == nil)
    }

    @Test func offMeansNoLimit() {
        let limiter = RateLimiter(rate: 0, burst: 0)
        for _ in 0..<1000 { #expect(limiter.take("a", now: 0) == nil) }
    }

    /// A full table drops the buckets of quiet keys; when none is quiet, new keys share one.
    @Test func theTableIsBounded() {
        let limiter = RateLimiter(rate: 1, burst: 2, maxKeys: 3)
        for key in ["a", "b", "c"] { #expect(limiter.take(key, cost: 2, now: 0) == nil) }
        // Nobody has refilled: "d" and "e" share the overflow bucket.
        #expect(limiter.take("d", cost: 2, now: 0.5) == nil)
        #expect(limiter.take("e", now: 0.5) != nil)
        // Later everyone has refilled: "f" gets a bucket of its own.
        #expect(limiter.take("f", cost: 2, now: 10) == nil)
        #expect(limiter.take("a", cost: 2, now: 10) == nil)
    }
}

/// Failed authentications have a bucket of their own per address, and tokens seen
/// valid are spared its refusal; the table of those tokens is bounded.
@Suite struct FailedAuthenticationTests {
    /// The largest cost the loader accepts (the whole bucket): an unknown token from a fresh
    /// address is looked up (then `401`), not refused; one cost more would never be affordable,
    /// which is why the loader refuses it (`ConfigurationLoader.together`).
    @Test func aFailureCostingTheWholeBucketIsAffordableOnce() throws {
        let time = PipelineStageTests.ManualClock()
        var limits = Configuration.RateLimits()
        limits.perAddress = 50
        limits.burstSeconds = 2
        limits.failedAuthCost = 100
        try ConfigurationLoader.checkTogether({ var c = Configuration(); c.rateLimits = limits; return c }())
        let rates = RequestRates(limits, metrics: MetricsRegistry(), clock: time.clock)
        #expect(rates.checkAddress("a", token: "never-seen") == nil)
        rates.failedAuthentication("a")
        #expect(rates.checkAddress("a", token: "never-seen")?.status == 429)
        time.advance(seconds: 2)                                     // the bucket full again
        #expect(rates.checkAddress("a", token: "never-seen") == nil)

        limits.failedAuthCost = 101
        let never = RequestRates(limits, metrics: MetricsRegistry(), clock: time.clock)
        #expect(never.checkAddress("b", token: "never-seen")?.status == 429)
        #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.checkTogether({ var c = Configuration(); c.rateLimits = limits; return c }())
        }
    }

    @Test func failuresRefuseUnknownTokensOnlyAndAreWaitedOut() {
        let time = PipelineStageTests.ManualClock()
        var limits = Configuration.RateLimits()
        limits.perAddress = 100
        limits.burstSeconds = 1
        limits.failedAuthCost = 40
        let rates = RequestRates(limits, metrics: MetricsRegistry(), clock: time.clock)
        rates.authenticated("good")
        #expect(rates.checkAddress("a", token: "guess") == nil)
        rates.failedAuthentication("a")
        rates.failedAuthentication("a")            // 100 - 80 = 20: another failure is not affordable
        #expect(rates.checkAddress("a", token: "guess")?.status == 429)
        #expect(rates.checkAddress("a", token: "good") == nil)
        #expect(rates.checkAddress("a", token: nil) == nil)         // no token: no guess
        #expect(rates.checkAddress("b", token: "guess") == nil)     // another address
        time.advance(seconds: 0.2)                                   // 20 + 20 = 40: one more may fail
        #expect(rates.checkAddress("a", token: "guess") == nil)
    }

    @Test func knownTokensAreBoundedAndExpire() {
        let known = KnownTokens(maxEntries: 2, lifetime: 10)
        known.insert("a", now: 0)
        known.insert("b", now: 5)
        #expect(known.contains("a", now: 9) && !known.contains("a", now: 10))
        known.insert("c", now: 12)             // full: "a" has expired and goes
        #expect(known.contains("b", now: 12) && known.contains("c", now: 12))
        known.insert("d", now: 13)             // full and none expired: everything goes
        #expect(known.contains("d", now: 13) && !known.contains("b", now: 13))
    }
}

/// Over a real socket: a flood from one device gets 429 with Retry-After while
/// another device still passes; failed authentications cost their address more, so guessing
/// tokens gets 429 long before ordinary traffic would; both counted in /metrics.
@Suite struct RateLimitTests {
    @Test(arguments: TestEngine.available)
    func oneDevicesFloodDoesNotStopAnother(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine) { c in
            // A burst of 10 refilling at 1 a second: the flood outruns it however slow the machine.
            c.rateLimits.perCaller = 1
            c.rateLimits.burstSeconds = 10
        }
        let account = try server.account()
        let phone = try server.device(account.token, "phone")
        let tablet = try server.device(account.token, "tablet")
        var statuses: [Int] = []
        for _ in 0..<30 { statuses.append(try server.call("GET", "/v1/library/token", token: phone.token).status) }
        #expect(statuses.prefix(10).allSatisfy { $0 == 200 })    // the burst: 1 × 10 s
        #expect(statuses.contains(429))
        let limited = try server.call("GET", "/v1/library/token", token: phone.token)
        #expect(limited.status == 429)
        #expect(limited.raw.header("Retry-After") == "1")
        #expect(limited.raw.body.contains(#""name":"tooManyRequests""#))
        #expect(try server.call("GET", "/v1/library/token", token: tablet.token).status == 200)
        let metrics = try rawRequest(port: server.port, "GET", "/metrics")
        #expect(metrics.body.contains(#"concord_rate_limited_total{scope="caller"}"#))
    }

    @Test func failedAuthenticationsCostTheirAddressMore() throws {
        let server = try APIServer { c in
            // A bucket of 100 that refills slowly (10 a second): no wall-clock race with the refill.
            c.rateLimits.perAddress = 10
            c.rateLimits.burstSeconds = 10
            c.rateLimits.failedAuthCost = 40
        }
        // No token at all is no guess: it costs one request, like any other (of the address's 100).
        for _ in 0..<30 { #expect(try server.call("GET", "/v1/library/token", token: nil).status == 401) }
        // 100 tokens: two unknown tokens (40 each) leave 20; the third is refused before its lookup.
        #expect(try server.call("GET", "/v1/library/token", token: "guess-1").status == 401)
        #expect(try server.call("GET", "/v1/library/token", token: "guess-2").status == 401)
        let third = try server.call("GET", "/v1/library/token", token: "guess-3")
        #expect(third.status == 401 || third.status == 429)
        var refused = third.status == 429
        for i in 4..<10 where !refused { refused = try server.call("GET", "/v1/library/token", token: "guess-\(i)").status == 429 }
        #expect(refused)
        // Service endpoints are not counted: health still answers.
        #expect(try rawRequest(port: server.port, "GET", "/health").status == 200)
        let metrics = try rawRequest(port: server.port, "GET", "/metrics")
        #expect(metrics.body.contains(#"concord_rate_limited_total{scope="address"}"#))
    }
}
