import Foundation

/// Reads of the account's cloud records, their keys, and the links of a device's objects to them.
public protocol RecordReads {
    /// Type, fingerprint and link of the objects with these local identifiers: one entry per input,
    /// in input order (nil: not in the library). The hot path of local → cloud: no hashing needed.
    func linkStates(_ device: DeviceRef, localIdentifiers: [String]) throws -> [ObjectLinkState?]
    /// For each GUID, in input order: the account's record with that GUID (nil: none) and the local
    /// identifier of the object of `device` linked to it (nil: none). The hot path of cloud → local.
    func recordLinks(_ device: DeviceRef, guids: [String]) throws -> [(record: CloudRecord, linkedLocalIdentifier: String?)?]
    /// How many cloud records the account holds (records go only with the account).
    func recordCount() throws -> Int
    /// Records of the account with these GUIDs (upper case), oldest first.
    func records(guids: [String]) throws -> [CloudRecord]
    /// For each of these records: the objects of `device` carrying one of its keys,
    /// sorted by local identifier byte order, each once, with its link. Records without any: omitted.
    func keyMatches(_ device: DeviceRef, guids: [String]) throws -> [String: [StoredObject]]
    /// The keys the record carries, in no particular order.
    func recordKeys(guids: [String]) throws -> [String: [ObjectKey]]
    /// For each GUID linked to an object of `device`: that object's local identifier.
    func linkedObjects(_ device: DeviceRef, guids: [String]) throws -> [(guid: String, localIdentifier: String)]
}

/// Writes of records and links (and the reads only a writer makes), inside the account's one
/// write transaction.
public protocol RecordWrites: RecordReads {
    /// Records of the account matching `keys` that no object of `device` links to, oldest first.
    func unlinkedRecords(_ device: DeviceRef, matching keys: [ContentKey]) throws -> [CloudRecord]
    /// Records of the account carrying one of `keys` that no object of `device` links to, oldest
    /// first, each with the key it was found by (a record carrying two of them: once per key).
    func unlinkedRecords(_ device: DeviceRef, carrying keys: [ObjectKey]) throws -> [(record: CloudRecord, key: ObjectKey)]
    /// Those of `guids` whose record carries a key some object of `device` carries.
    func recordsCarryingKeys(of device: DeviceRef, guids: [String]) throws -> Set<String>
    /// The records take these keys (kept for good); a key a record carries already is ignored.
    func addRecordKeys(_ keys: [(guid: String, key: ObjectKey)]) throws
    /// Records without a fingerprint take these (once; a record with one keeps it).
    func fillRecordFingerprints(_ fills: [(guid: String, fingerprint: String)]) throws
    /// Creates records; they are newer than every existing record, in array order.
    func insertRecords(_ records: [CloudRecord], createdAt: Date) throws
    /// Links each object to a record (replacing the object's link). The caller has dropped any
    /// other link of those records on this device first.
    func setLinks(_ device: DeviceRef, _ links: [(localIdentifier: String, guid: String)]) throws
    /// `setLinks`, with each object's `StoredObject.storageRow` where the caller has it (nil where
    /// not; one per link): a store may find the rows by them. A row that is not the object's is
    /// found out and the object found by its identifier, so a stale one costs time, never a link.
    func setLinks(_ device: DeviceRef, _ links: [(localIdentifier: String, guid: String)], rows: [Int64?]) throws
    /// Drops the links of these records on `device`.
    func dropLinks(_ device: DeviceRef, guids: [String]) throws
    /// Drops every link of `device` (a reset library).
    func dropAllLinks(_ device: DeviceRef) throws
}

extension RecordWrites {
    /// A store that keeps no row numbers finds the objects by their identifiers.
    public func setLinks(_ device: DeviceRef, _ links: [(localIdentifier: String, guid: String)], rows: [Int64?]) throws {
        try self.setLinks(device, links)
    }
}
