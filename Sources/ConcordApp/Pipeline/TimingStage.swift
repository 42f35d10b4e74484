import ConcordObservability

/// Stage 5: times what runs inside it into `concord_storage_duration_seconds{operation}`, and turns
/// whatever it throws into the contract's answer (`ErrorMapper`).
struct TimingStage: Sendable {
    let histogram: Histogram
    let operation: String
    let clock: AppClock

    func handle<T>(_ request: RequestContext, _ body: () throws -> T) throws(APIError) -> T {
        let start = self.clock.nanoseconds()
        defer { self.histogram.observe(Double(self.clock.nanoseconds() - start) / 1e9) }
        do {
            return try body()
        } catch {
            throw ErrorMapper.apiError(error, request, operation: self.operation)
        }
    }
}
