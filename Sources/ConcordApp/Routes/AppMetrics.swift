import ConcordDomain
import ConcordObservability

/// Metrics the API routes add to `/metrics`: mapping outcomes and storage
/// latency. Every series is created up front, so the hot path is a dictionary read and an
/// atomic add, and `/metrics` shows zeros before the first request.
final class AppMetrics: Sendable {
    /// `direction` label values.
    enum Direction: Int, CaseIterable, Sendable {
        case localToCloud, cloudToLocal
        var label: String { self == .localToCloud ? "localToCloud" : "cloudToLocal" }
    }
    /// `outcome` label values.
    enum Outcome: Int, CaseIterable, Sendable {
        case found, notFound, multiple, invalid
        var label: String { ["found", "notFound", "multiple", "invalid"][self.rawValue] }

        init(_ result: MappingResult) {
            switch result {
            case .found: self = .found
            case .error(.identifierNotFound), .error(.persistentChangeDetailsUnavailable): self = .notFound
            case .error(.multipleIdentifiersFound): self = .multiple
            case .error(.invalidIdentifier): self = .invalid
            }
        }
    }

    /// `mappings[direction][outcome]`.
    private let mappings: [[Counter]]
    private let registry: MetricsRegistry
    /// Token lookups (`operation="authenticate"`).
    let authenticate: Histogram

    init(registry: MetricsRegistry) {
        self.mappings = Direction.allCases.map { direction in
            Outcome.allCases.map { outcome in
                registry.counter("concord_mappings_total", help: "Mapping items answered, by direction and outcome.",
                                 labels: [("direction", direction.label), ("outcome", outcome.label)])
            }
        }
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

    /// Counts a request's answered mapping items: `tally[outcome]` items of each outcome.
    func recordMappings(_ direction: Direction, _ tally: [Int]) {
        for (outcome, n) in tally.enumerated() where n > 0 { self.mappings[direction.rawValue][outcome].increment(by: n) }
    }
}
