import ConcordTransport

/// Stage 1 of a request: its client address's rate (`rateLimits.perAddress`), before anything is
/// looked up. Service endpoints (`anyone`) are not counted, nor a request whose head was already
/// counted when the transport asked before reading its body (`admitted`).
struct AddressRateStage: Sendable {
    /// Nil: no limits (the transport's own tests).
    let rates: RequestRates?

    /// `429` when the address is over its rate, or has spent what failed authentications may cost
    /// and `token` is not one seen valid lately; nil: go on.
    func refusal(_ route: Route, _ connection: ConnectionContext, admitted: Bool = false, token: @autoclosure () -> String? = nil) -> APIError? {
        guard route.caller != .anyone, !admitted else { return nil }
        return self.rates?.checkAddress(connection.remoteAddress, token: token())
    }
}
