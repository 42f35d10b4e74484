import ConcordBytes
import ConcordDomain
import Foundation

extension ConcordService {
    /// The service on `store` with the mapping index `configuration` asks for wired in
    /// (`MappingIndex.wired`; none when `mappingIndexBytes` is 0): what a server runs, and what the
    /// suites build. See the designated initializer for the parameters.
    public convenience init(store: any ConcordStore, configuration: DomainConfiguration = DomainConfiguration(),
                            clock: @escaping @Sendable () -> Date = WallClock.system.now,
                            newID: @escaping @Sendable () -> String = { Identifiers.newUUID() },
                            webhooks: WebhookEnvironment? = nil) throws(DomainError) {
        try self.init(store: store, configuration: configuration,
                      mappingCache: MappingIndex.wired(store: store, configuration: configuration, clock: clock), clock: clock, newID: newID,
                      webhooks: webhooks)
    }

    /// The service's mapping index (nil when turned off), for its metrics and snapshots.
    public var mappingIndex: MappingIndex? { self.mappingCache as? MappingIndex }
}
