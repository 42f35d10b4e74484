import ConcordBytes
import Foundation

/// The reads the mapping lookups are made of (local → cloud, cloud → local, journal photos, wanted). A
/// storage transaction answers them (from its batch queries, below), and so does the in-memory
/// mapping index (`MappingIndex`), with the same results in the same order; objects from the index
/// carry identity, type, fingerprint, key and link only (all the rules read).
public protocol MappingReads {
    /// One answer per local identifier, in input order.
    func linkLookups(_ device: DeviceRef, localIdentifiers: IdentifierBatch) throws -> LinkLookups
    /// One answer per cloud identifier, in input order (records are the account's only).
    func recordLookups(_ device: DeviceRef, identifiers: [CloudIdentifier]) throws -> [RecordLookup]
    /// Objects of `device` whose (type, fingerprint) is one of `keys`, sorted by local identifier byte order.
    func objects(_ device: DeviceRef, matching keys: [ContentKey]) throws -> [StoredObject]
    /// The device's wanted objects strictly after `after`, at most `limit`.
    func wantedPage(_ device: DeviceRef, after: String?, limit: Int) throws -> WantedPage
    /// Counts over the device's library.
    func libraryStatus(_ device: DeviceRef) throws -> LibraryStatus
    /// Cloud → local answers decided straight from the batch's bytes, where a reader can do that
    /// cheaply (the mapping index); `.undecided` items are resolved in full (`recordLookups` and
    /// on). Nil: resolve every item in full.
    func quickLocalIdentifiers(_ device: DeviceRef, cloudIdentifiers batch: IdentifierBatch, contentMatch: Bool) throws -> QuickLocalIdentifiers?
}

extension MappingReads {
    /// Storage resolves every item in full: its step 2 is one query with step 3's inputs.
    public func quickLocalIdentifiers(_ device: DeviceRef, cloudIdentifiers batch: IdentifierBatch, contentMatch: Bool) throws -> QuickLocalIdentifiers? { nil }
}

extension AccountReadTransaction {
    public func linkLookups(_ device: DeviceRef, localIdentifiers: IdentifierBatch) throws -> LinkLookups {
        let states = try self.linkStates(device, localIdentifiers: localIdentifiers.strings)
        var result = LinkLookups()
        result.reserveCapacity(states.count)
        for state in states {
            guard let state else { result.append(.missing); continue }
            guard let link = state.link else { result.append(.unlinked); continue }
            result.append(bytes: link.cloudIdentifier.utf8)
        }
        return result
    }

    public func recordLookups(_ device: DeviceRef, identifiers: [CloudIdentifier]) throws -> [RecordLookup] {
        var lookups = try self.recordLinks(device, guids: identifiers.map(\.guid)).enumerated().map { i, found -> RecordLookup in
            guard let found, found.record.type == identifiers[i].type else { return RecordLookup() }
            if let local = found.linkedLocalIdentifier { return RecordLookup(linkedLocalIdentifier: local) }
            return RecordLookup(record: found.record)
        }
        // Step 3: the objects carrying one of the keys of records with no link on the device.
        let unlinked = lookups.compactMap { $0.linkedLocalIdentifier == nil ? $0.record?.guid : nil }
        guard !unlinked.isEmpty else { return lookups }
        let matches = try self.keyMatches(device, guids: unlinked)
        for i in lookups.indices where lookups[i].linkedLocalIdentifier == nil {
            guard let r = lookups[i].record, let found = matches[r.guid] else { continue }
            lookups[i].keyMatches = found.filter { $0.object.type == r.type }
        }
        return lookups
    }
}

/// The mapping version, the index snapshot recorded for it, and the tables the mapping index
/// loads from (reads of one account; `MappingTableBytesReads`).
public protocol MappingVersionReads: MappingTableBytesReads {
    /// The account's mapping version: bumped by every write transaction that changes its devices,
    /// objects, links or records (0 for a new or missing account).
    func mappingVersion() throws -> Int64
    /// The ID of the mapping index snapshot recorded as the account's state (nil: none), see
    /// `recordIndexSnapshot`. Recorded means current: `bumpMappingVersion` clears it.
    func indexSnapshotID() throws -> String?
}

/// The mapping version's writes, inside the account's one write transaction.
public protocol MappingVersionWrites: MappingVersionReads {
    /// Records `id` as the account's mapping index snapshot when its mapping version is still
    /// `version` (true), else changes nothing (false: the snapshot is already stale, or the
    /// account is gone). Not a mapping change: the version stays.
    func recordIndexSnapshot(id: String, version: Int64) throws -> Bool
    /// Adds one to the account's mapping version and answers the new value; clears the recorded
    /// index snapshot ID (that snapshot no longer reflects the account).
    func bumpMappingVersion() throws -> Int64
}
