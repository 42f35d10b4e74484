/// Stage 3: the caller's rate (`rateLimits.perCaller`), once the caller is known.
struct CallerRateStage: Sendable {
    /// Nil: no limits.
    let rates: RequestRates?

    /// `429` when the caller is over its rate.
    func handle(_ caller: AuthenticatedCaller) throws(APIError) {
        if let refusal = self.rates?.checkCaller(caller.rateKey) { throw refusal }
    }
}
