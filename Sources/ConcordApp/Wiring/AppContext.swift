import ConcordDomain
import ConcordObservability

/// What route handlers share: configuration, logging, metrics, the admin token and
/// storage. Built once by `ConcordApp.start` and captured by the route closures.
public final class AppContext: Sendable {
    public let configuration: Configuration
    public let logger: Logger
    /// Register module metrics here; `/metrics` exposes the whole registry.
    public let metrics: MetricsRegistry
    /// The effective admin token (configured, or generated and kept in the data directory).
    public let adminToken: String
    /// The storage hook: the service, readiness and shutdown (see `StorageHook`).
    public let storage: StorageHook
    /// Mapping outcomes and storage latency (see `AppMetrics`).
    let appMetrics: AppMetrics

    /// The one domain service every route calls (on the worker pool, never on a loop).
    public var service: ConcordService { self.storage.service }

    public init(configuration: Configuration, logger: Logger, metrics: MetricsRegistry, adminToken: String, storage: StorageHook) {
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        self.adminToken = adminToken
        self.storage = storage
        self.appMetrics = AppMetrics(registry: metrics)
    }

    /// Whether `token` is the admin token, compared in constant time.
    public func isAdminToken(_ token: String?) -> Bool {
        guard let token else { return false }
        return constantTimeEquals(token, self.adminToken)
    }
}

/// Compares two strings in time that depends only on their lengths, not on where
/// they differ, so a token cannot be guessed byte by byte from response times.
public func constantTimeEquals(_ a: String, _ b: String) -> Bool {
    let x = Array(a.utf8)
    let y = Array(b.utf8)
    var difference = UInt8(truncatingIfNeeded: x.count ^ y.count) | (x.count == y.count ? 0 : 1)
    let n = max(x.count, y.count)
    for i in 0..<n {
        let p = i < x.count ? x[i] : 0
        let q = i < y.count ? y[i] : 0
        difference |= p ^ q
    }
    return difference == 0
}
