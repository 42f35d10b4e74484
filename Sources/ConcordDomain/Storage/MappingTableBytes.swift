import ConcordBytes

/// The mapping tables as bytes, for a reader that keeps bytes (the mapping index's load): the rows
/// of `streamMappingTables` without a `String` per row, and a link as its record's creation order
/// rather than its GUID. A store that has it is read through it (PostgreSQL); any other through
/// `streamMappingTables`. The bytes passed are valid during the call only.
public protocol MappingTableBytesReads {
    func streamMappingTableBytes(into sink: any MappingTableSink) throws
}

/// What `streamMappingTableBytes` calls, in this order: every device, every record (in creation
/// order), every record key, then each device's objects (device after device).
public protocol MappingTableSink: AnyObject {
    /// A device (number `devices so far`), with about how many objects it has (a hint for sizing).
    func device(_ id: String, objects: Int) throws
    /// About how many records follow (a hint for sizing).
    func expectRecords(_ count: Int)
    /// A record; `order` is its creation order (from 1), `fingerprint` its text's UTF-8.
    func record(guid: UUIDBits, type: ObjectType, fingerprint: UnsafeBufferPointer<UInt8>, order: Int64) throws
    func recordKey(guid: UUIDBits, type: ObjectType, a: UnsafeBufferPointer<UInt8>) throws
    /// An object of device number `device`; `linkedOrder` is its linked record's creation order
    /// (0: no link); `keyA` nil without a key.
    func object(device: Int, localIdentifier: UnsafeBufferPointer<UInt8>, type: ObjectType, fingerprint: UnsafeBufferPointer<UInt8>,
                linkedOrder: Int64, keyA: UnsafeBufferPointer<UInt8>?, creationSecond: Int64?) throws
}
