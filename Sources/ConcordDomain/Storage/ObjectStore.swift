import Foundation

/// Reads of one device's library (its objects, with their links).
public protocol ObjectReads {
    /// Objects of `device` with these local identifiers (any order, missing omitted), with their links.
    func objects(_ device: DeviceRef, localIdentifiers: [String]) throws -> [StoredObject]
    /// Every object of `device`.
    func allObjects(_ device: DeviceRef) throws -> [StoredObject]
    /// Objects of every type strictly after `after`, in local identifier byte order, with their
    /// links: a whole library read a page at a time (`PUT /v1/library` and an upload's commit).
    func storedObjectPage(_ device: DeviceRef, after: String?, limit: Int) throws -> [StoredObject]
    /// Objects of one type strictly after `after`, in local identifier byte order.
    func objectPage(_ device: DeviceRef, type: ObjectType, after: String?, limit: Int) throws -> [LibraryObject]
}

/// Writes of one device's library.
public protocol ObjectWrites: ObjectReads {
    /// Inserts or replaces objects with the given link (nil: unlinked).
    func putObjects(_ device: DeviceRef, _ objects: [StoredObject]) throws
    /// `putObjects` for objects the caller knows the device does not have, each identifier once (a
    /// whole library's new objects): an engine may skip looking for stored rows.
    func insertNewObjects(_ device: DeviceRef, _ objects: [StoredObject]) throws
    func deleteObjects(_ device: DeviceRef, localIdentifiers: [String]) throws
}

extension ObjectWrites {
    public func insertNewObjects(_ device: DeviceRef, _ objects: [StoredObject]) throws {
        try self.putObjects(device, objects)
    }
}
