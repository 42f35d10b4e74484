/// The objects the mapping's write path reads again under the write lock (assigning records to
/// objects, storing links found by content): only what the mapping rules read of each.
public protocol MappingObjectReads: ObjectReads {
    /// Objects of `device` with these local identifiers (any order, missing omitted), with their
    /// links, holding what the mapping rules read: the local identifier, type, fingerprint and
    /// PhotoKit cloud identifier (the object's key). An engine may leave the other fields at their
    /// defaults: these objects go into links and record keys, never back into the library.
    func mappingObjects(_ device: DeviceRef, localIdentifiers: [String]) throws -> [StoredObject]
    /// Whether the write path should take these objects from the mapping index when it holds the
    /// account at the transaction's version (`ServiceCore.mappingObjects`): false for an engine
    /// whose own lookup also finds what its link writes use next (the write path then takes the
    /// index's objects only when each carries its `storageRow`).
    var prefersIndexedMappingObjects: Bool { get }
}

/// What the mapping's write path can take from a `MappingReads` that holds the account (the mapping
/// index) instead of storage, when it is exact for the write transaction (`ServiceCore`).
public protocol WritePathReads {
    /// As `MappingObjectReads.mappingObjects`; nil when this reader cannot answer for these objects,
    /// or (`withStorageRows`) does not know where storage keeps each one (`StoredObject.storageRow`).
    func mappingObjects(_ device: DeviceRef, localIdentifiers: [String], withStorageRows: Bool) throws -> [StoredObject]?
    /// Of `keys`, those some record of the account may carry (by fingerprint; at least every one a
    /// record carries): `unlinkedRecords(_:matching:)` finds nothing for the others. Nil: all.
    func contentsSomeRecordCarries(_ keys: [ContentKey]) throws -> [ContentKey]?
    /// Of `localIdentifiers`, those the device has, in the order given: storage finds no object
    /// for the others. Nil: this reader cannot say.
    func identifiersPresent(_ device: DeviceRef, among localIdentifiers: [String]) throws -> [String]?
}

extension MappingObjectReads {
    public var prefersIndexedMappingObjects: Bool { true }

    /// The whole objects (`objects(_:localIdentifiers:)`): an engine whose full row costs no more.
    public func mappingObjects(_ device: DeviceRef, localIdentifiers: [String]) throws -> [StoredObject] {
        try self.objects(device, localIdentifiers: localIdentifiers)
    }
}
