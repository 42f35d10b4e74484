import ConcordDomain
import ConcordObservability

/// The service calls the routes make, by name: the `operation` label of the storage
/// latency histogram.
enum StorageOperation: String, CaseIterable, Sendable {
    case authenticate, createAccount, createDevice, listDevices, deleteDevice
    case applyChanges, replaceLibrary, getObject, listObjects, setAuthorization
    case cloudIdentifiers, localIdentifiers, link
    case currentChangeToken, changes
    case createJournal, listJournals, getJournal, renameJournal, deleteJournal
    case putEntry, deleteEntry, selection, currentJournalChangeToken, journalChanges
}

/// Metrics the API routes add to `/metrics` (API.md §8): mapping outcomes and storage
/// latency. Every series is created up front, so the hot path is a dictionary read and an
/// atomic add, and `/metrics` shows zeros before the first request.
final class AppMetrics: Sendable {
    /// `direction` label values.
    enum Direction: String, CaseIterable, Sendable { case localToCloud, cloudToLocal }
    /// `outcome` label values.
    enum Outcome: String, CaseIterable, Sendable { case found, notFound, multiple, invalid }

    private let mappings: [String: Counter]
    private let storage: [StorageOperation: Histogram]

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
        var storage: [StorageOperation: Histogram] = [:]
        for operation in StorageOperation.allCases {
            storage[operation] = registry.histogram(
                "concord_storage_duration_seconds", help: "Time spent in each storage (service) call, by operation.",
                labels: [("operation", operation.rawValue)])
        }
        self.storage = storage
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

    func recordStorage(_ operation: StorageOperation, nanoseconds: Int64) {
        self.storage[operation]?.observe(Double(nanoseconds) / 1e9)
    }
}

extension AppContext {
    /// Runs one service call: timed into the storage histogram by `operation`, its
    /// `DomainError` mapped to the contract's answer. An internal error is logged with the
    /// route (its text never reaches the client).
    func call<T>(_ operation: StorageOperation, _ request: RequestContext, _ body: () throws(DomainError) -> T) throws(APIError) -> T {
        let start = MonotonicClock.nanoseconds()
        defer { self.appMetrics.recordStorage(operation, nanoseconds: MonotonicClock.nanoseconds() - start) }
        do {
            return try body()
        } catch {
            if case .internalError(let message) = error {
                request.logger.error("storage failed", metadata: [
                    "route": .string(request.routePattern), "operation": .string(operation.rawValue), "error": .string(message),
                ])
            }
            throw APIError(error)
        }
    }
}
