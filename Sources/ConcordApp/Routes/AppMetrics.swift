import ConcordDomain
import ConcordObservability

/// Metrics the API routes add to `/metrics` (API.md §8): mapping outcomes and storage
/// latency. Every series is created up front, so the hot path is a dictionary read and an
/// atomic add, and `/metrics` shows zeros before the first request.
final class AppMetrics: Sendable {
    /// `direction` label values.
    enum Direction: String, CaseIterable, Sendable { case localToCloud, cloudToLocal }
    /// `outcome` label values.
    enum Outcome: String, CaseIterable, Sendable { case found, notFound, multiple, invalid }

    private let mappings: [String: Counter]
    private let registry: MetricsRegistry
    /// Token lookups (`operation="authenticate"`).
    let authenticate: Histogram

    init(registry: MetricsRegistry) {
        var mappings: [String: Counter] = [:]
        for direction in Direction.allCases {
            for outcome in Outcome.allCases {
                mappings[direction.rawValue + "/" + outcome.rawValue] = registry.counter(
                    "concord_mappings_total", help: "Mapping items answered, by direction and outcome.",
                    labels: [("direction", direction.rawValue), ("outcome", outcome.rawValue)])
            }
        }
        self.mappings = mappings
        self.registry = registry
        self.authenticate = Self.histogram(registry, "authenticate")
    }

    /// The histogram of one route's service call, labelled with the operation its declaration names
    /// (created when the route is declared, so `/metrics` shows zeros before the first request).
    func operation(_ name: String) -> Histogram { Self.histogram(self.registry, name) }

    private static func histogram(_ registry: MetricsRegistry, _ operation: String) -> Histogram {
        registry.histogram("concord_storage_duration_seconds", help: "Time spent in each storage (service) call, by operation.",
                           labels: [("operation", operation)])
    }

    /// Counts one answered mapping item.
    func recordMapping(_ direction: Direction, _ result: MappingResult) {
        let outcome: Outcome
        switch result {
        case .found: outcome = .found
        case .error(.identifierNotFound), .error(.persistentChangeDetailsUnavailable): outcome = .notFound
        case .error(.multipleIdentifiersFound): outcome = .multiple
        case .error(.invalidIdentifier): outcome = .invalid
        }
        self.mappings[direction.rawValue + "/" + outcome.rawValue]?.increment()
    }
}
