import ConcordBytes

/// The mapping tables as bytes, for a reader that keeps bytes (the mapping index's load): one
/// query per table, no `String` per row, and a link as its record's creation order rather than its
/// GUID. The bytes passed are valid during the call only.
public protocol MappingTableBytesReads {
    /// Streams the account's devices, records (in creation order), record keys and objects into `sink`.
    func streamMappingTableBytes(into sink: any MappingTableSink) throws
}

/// What `streamMappingTableBytes` calls, in this order: every device, every record (in creation
/// order), every record key, `beginObjects`, then each device's objects (on one thread, device after
/// device or devices interleaved; or, when the sink `takesDevicesConcurrently`, several devices at
/// once on different threads, each device's objects on one of them).
public protocol MappingTableSink: AnyObject {
    /// A device (number `devices so far`), with about how many objects it has (a hint for sizing).
    func device(_ id: String, objects: Int) throws
    /// About how many records follow (a hint for sizing).
    func expectRecords(_ count: Int)
    /// A record; `order` is its creation order (from 1), `fingerprint` its text's UTF-8 and
    /// `fingerprintKey` bytes that are equal exactly when two fingerprints are (storage's form).
    func record(guid: UUIDBits, type: ObjectType, fingerprint: UnsafeBufferPointer<UInt8>, fingerprintKey: UnsafeRawBufferPointer,
                order: Int64) throws
    func recordKey(guid: UUIDBits, type: ObjectType, a: UnsafeBufferPointer<UInt8>) throws
    /// Every record and record key came; objects follow.
    func beginObjects() throws
    /// A row came that the bytes cannot carry (a GUID that is not a UUID's stored form, a link to a
    /// GUID no record has): the index of this load is not exact, and the rows were skipped or left unlinked.
    func markInexact()
    /// Whether objects of different devices may come at the same time on different threads (each
    /// device's objects on one thread, one after the other).
    var takesDevicesConcurrently: Bool { get }
    /// An object of device number `device`; `linkedOrder` is its linked record's creation order
    /// (0: no link); `keyA` nil without a key. `fingerprintKey` as for records. `laterLinkedOrder`:
    /// the linked order of an object a few rows on (0: none), a hint to fetch its record meanwhile.
    /// `storageRow`: the store's number for the row (`StoredObject.storageRow`), 0 when it keeps none.
    func object(device: Int, localIdentifier: UnsafeBufferPointer<UInt8>, type: ObjectType, fingerprint: UnsafeBufferPointer<UInt8>,
                fingerprintKey: UnsafeRawBufferPointer, linkedOrder: Int64, laterLinkedOrder: Int64, keyA: UnsafeBufferPointer<UInt8>?,
                creationSecond: Int64?, storageRow: Int64) throws
}

extension MappingTableSink {
    public func beginObjects() throws {}
    public var takesDevicesConcurrently: Bool { false }
}
