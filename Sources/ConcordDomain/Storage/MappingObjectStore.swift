/// The objects the mapping's write path reads again under the write lock (assigning records to
/// objects, storing links found by content): only what the mapping rules read of each.
public protocol MappingObjectReads: ObjectReads {
    /// Objects of `device` with these local identifiers (any order, missing omitted), with their
    /// links, holding what the mapping rules read: the local identifier, type, fingerprint and
    /// PhotoKit cloud identifier (the object's key). An engine may leave the other fields at their
    /// defaults: these objects go into links and record keys, never back into the library.
    func mappingObjects(_ device: DeviceRef, localIdentifiers: [String]) throws -> [StoredObject]
}

extension MappingObjectReads {
    /// The whole objects (`objects(_:localIdentifiers:)`): an engine whose full row costs no more.
    public func mappingObjects(_ device: DeviceRef, localIdentifiers: [String]) throws -> [StoredObject] {
        try self.objects(device, localIdentifiers: localIdentifiers)
    }
}
