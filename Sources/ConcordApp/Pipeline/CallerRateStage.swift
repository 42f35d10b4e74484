/// Stage 3: the caller's rate (`rateLimits.perCaller`), once the caller is known.
struct CallerRateStage: Sendable {
    /// Nil: no limits.
    let rates: RequestRates?

    /// `429` when the caller is over its rate. `token` authenticated it: remembered, so that
    /// failed authentications from its address do not refuse it (`RequestRates.checkAddress`).
    func handle(_ caller: AuthenticatedCaller, token: String? = nil) throws(APIError) {
        if let token { self.rates?.authenticated(token) }
        if let refusal = self.rates?.checkCaller(caller.rateKey) { throw refusal }
    }
}
