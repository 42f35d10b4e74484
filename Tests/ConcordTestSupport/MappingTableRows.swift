import ConcordBytes
import ConcordDomain

// The mapping tables as the index's load reads them (`streamMappingTableBytes`), turned into rows of
// strings for tests to compare. Nothing here is in the server.

extension MappingTableBytesReads {
    /// Every object row of the account's mapping tables, its link as the linked record's GUID, and
    /// whether the stream marked any row it could not carry (`markInexact`).
    public func mappingObjectRows() throws -> (rows: [MappingObjectRow], inexact: Bool) {
        let sink = MappingRowCollector()
        try self.streamMappingTableBytes(into: sink)
        return (sink.rows, sink.inexact)
    }
}

/// Collects what `streamMappingTableBytes` hands out as `MappingObjectRow`s.
private final class MappingRowCollector: MappingTableSink {
    var deviceIDs: [String] = []
    /// GUIDs by creation order (from 1; a gap is nil).
    var guidByOrder: [String?] = [nil]
    var rows: [MappingObjectRow] = []
    var inexact = false

    func device(_ id: String, objects: Int) throws { self.deviceIDs.append(id) }

    func expectRecords(_ count: Int) {}

    func markInexact() { self.inexact = true }

    func record(guid: UUIDBits, type: ObjectType, fingerprint: UnsafeBufferPointer<UInt8>, fingerprintKey: UnsafeRawBufferPointer, order: Int64) throws {
        guard order > 0, order < Int64(Int32.max) else { return }
        while self.guidByOrder.count <= Int(order) { self.guidByOrder.append(nil) }
        self.guidByOrder[Int(order)] = guid.string
    }

    func recordKey(guid: UUIDBits, type: ObjectType, a: UnsafeBufferPointer<UInt8>) throws {}

    func object(device: Int, localIdentifier: UnsafeBufferPointer<UInt8>, type: ObjectType, fingerprint: UnsafeBufferPointer<UInt8>,
                fingerprintKey: UnsafeRawBufferPointer, linkedOrder: Int64, laterLinkedOrder: Int64, keyA: UnsafeBufferPointer<UInt8>?,
                creationSecond: Int64?, storageRow: Int64) throws {
        let linked = linkedOrder > 0 && linkedOrder < Int64(self.guidByOrder.count) ? self.guidByOrder[Int(linkedOrder)] : nil
        self.rows.append(MappingObjectRow(deviceID: self.deviceIDs[device], localIdentifier: String(decoding: localIdentifier, as: UTF8.self),
                                          type: type, fingerprint: String(decoding: fingerprint, as: UTF8.self), linkedGUID: linked,
                                          keyA: keyA.map { String(decoding: $0, as: UTF8.self) }, creationSecond: creationSecond))
    }
}
