import ConcordBytes
import ConcordDomain

/// The mapping index's load from the tables (`MappingTableBytesReads`, and `streamMappingTables`
/// on top of it). Each table is one `COPY (query) TO STDOUT (FORMAT binary)`: PostgreSQL streams the
/// rows as it reads them while this side decodes each in place (no result object per row or per
/// batch, no `String` per row), so its work and ours overlap. No join in SQL: records come in
/// creation order, links give each object number its record's order (an array per device, by
/// object number), and each device's objects come in number order (its primary key) and find their
/// link there. The statements run in the read's snapshot (COPY of a query uses the transaction's).
extension PostgresTransaction: MappingTableBytesReads {
    func streamMappingTableBytes(into sink: any MappingTableSink) throws {
        let account = try self.accountKey()
        var devices: [(key: Int64, objectNumbers: Int)] = []
        try self.db.query("SELECT device_id, device_key, next_object_no, object_count FROM devices WHERE account_id = $1 ORDER BY device_id",
                          [.text(self.accountID)]) { r in
            devices.append((r.int(1), Int(max(r.int(2), 1))))
            try sink.device(r.text(0), objects: Int(max(r.int(3), 0)))
        }
        sink.expectRecords(try self.recordCount())
        // Keys are integers this process read: spelled into the COPY statements, which bind no parameters.
        try self.db.copyRows("SELECT record, type, fingerprint, created_order FROM records WHERE account_key = \(account) ORDER BY created_order") { r in
            guard let type = ObjectType(rawValue: Int(r.int(1))) else { return }
            let guid = UUIDBits(bigEndianBytes: r.bytes(0))
            let order = r.int(3)
            try FingerprintBytes.withText(r.bytes(2)) { try sink.record(guid: guid, type: type, fingerprint: $0, order: order) }
        }
        try self.db.copyRows("SELECT record, type, key_a FROM record_keys WHERE account_key = \(account)") { r in
            guard let type = ObjectType(rawValue: Int(r.int(1))) else { return }
            try sink.recordKey(guid: UUIDBits(bigEndianBytes: r.bytes(0)), type: type, a: r.utf8(2))
        }
        // Each device's links: record order by object number (0: none).
        var linkOrders: [Int64: [Int64]] = [:]
        for d in devices { linkOrders[d.key] = [Int64](repeating: 0, count: d.objectNumbers) }
        try self.db.copyRows("SELECT device_key, object_no, record_order FROM links WHERE account_key = \(account)") { r in
            let device = r.int(0), number = r.int(1)
            guard number >= 0, number < Int64(linkOrders[device]?.count ?? 0) else { return }
            linkOrders[device]![Int(number)] = r.int(2)
        }
        for (i, d) in devices.enumerated() {
            let orders = linkOrders.removeValue(forKey: d.key) ?? []
            try orders.withUnsafeBufferPointer { orders in
                try self.db.copyRows("""
                    SELECT object_no, local_id, type, fingerprint, key_a, creation_second FROM objects WHERE device_key = \(d.key) ORDER BY object_no
                    """) { r in
                    guard let type = ObjectType(rawValue: Int(r.int(2))) else { return }
                    let number = r.int(0)
                    let linked = number >= 0 && number < Int64(orders.count) ? orders[Int(number)] : 0
                    try FingerprintBytes.withText(r.bytes(3)) { fingerprint in
                        try sink.object(device: i, localIdentifier: r.utf8(1), type: type, fingerprint: fingerprint, linkedOrder: linked,
                                        keyA: r.isNull(4) ? nil : r.utf8(4), creationSecond: r.isNull(5) ? nil : r.int(5))
                    }
                }
            }
        }
    }

    /// The same rows as strings (`MappingVersionReads`): records' GUIDs kept by creation order give
    /// each linked object its record's GUID.
    func streamMappingTables(devices: (String) throws -> Void, records: (CloudRecord, Int64) throws -> Void,
                             recordKeys: (String, ObjectKey) throws -> Void,
                             objects: (MappingObjectRow) throws -> Void) throws {
        try withoutActuallyEscaping(devices) { devices in
            try withoutActuallyEscaping(records) { records in
                try withoutActuallyEscaping(recordKeys) { recordKeys in
                    try withoutActuallyEscaping(objects) { objects in
                        try self.streamMappingTableBytes(into: MappingRowStrings(devices: devices, records: records, recordKeys: recordKeys, objects: objects))
                    }
                }
            }
        }
    }
}

/// `MappingTableSink` handing rows on as strings (`streamMappingTables`).
private final class MappingRowStrings: MappingTableSink {
    let devices: (String) throws -> Void, records: (CloudRecord, Int64) throws -> Void
    let recordKeys: (String, ObjectKey) throws -> Void, objects: (MappingObjectRow) throws -> Void
    var deviceIDs: [String] = []
    /// GUIDs by creation order (from 1; a gap is nil).
    var guidByOrder: [String?] = [nil]

    init(devices: @escaping (String) throws -> Void, records: @escaping (CloudRecord, Int64) throws -> Void,
         recordKeys: @escaping (String, ObjectKey) throws -> Void, objects: @escaping (MappingObjectRow) throws -> Void) {
        self.devices = devices
        self.records = records
        self.recordKeys = recordKeys
        self.objects = objects
    }

    func device(_ id: String, objects: Int) throws {
        self.deviceIDs.append(id)
        try self.devices(id)
    }

    func expectRecords(_ count: Int) { self.guidByOrder.reserveCapacity(count + 1) }

    func record(guid: UUIDBits, type: ObjectType, fingerprint: UnsafeBufferPointer<UInt8>, order: Int64) throws {
        let record = CloudRecord(guid: guid.string, type: type, fingerprint: String(decoding: fingerprint, as: UTF8.self))
        if order >= 0, order < Int64(Int32.max) {
            while self.guidByOrder.count < Int(order) { self.guidByOrder.append(nil) }
            if self.guidByOrder.count == Int(order) { self.guidByOrder.append(record.guid) } else { self.guidByOrder[Int(order)] = record.guid }
        }
        try self.records(record, order)
    }

    func recordKey(guid: UUIDBits, type: ObjectType, a: UnsafeBufferPointer<UInt8>) throws {
        try self.recordKeys(guid.string, ObjectKey(type: type, a: String(decoding: a, as: UTF8.self)))
    }

    func object(device: Int, localIdentifier: UnsafeBufferPointer<UInt8>, type: ObjectType, fingerprint: UnsafeBufferPointer<UInt8>,
                linkedOrder: Int64, keyA: UnsafeBufferPointer<UInt8>?, creationSecond: Int64?) throws {
        let linked = linkedOrder > 0 && linkedOrder < Int64(self.guidByOrder.count) ? self.guidByOrder[Int(linkedOrder)] : nil
        try self.objects(MappingObjectRow(deviceID: self.deviceIDs[device], localIdentifier: String(decoding: localIdentifier, as: UTF8.self),
                                          type: type, fingerprint: String(decoding: fingerprint, as: UTF8.self), linkedGUID: linked,
                                          keyA: keyA.map { String(decoding: $0, as: UTF8.self) }, creationSecond: creationSecond))
    }
}

extension FingerprintBytes {
    /// `body` with the text of a stored fingerprint (`text(_:)`) as UTF-8, spelled into a buffer of
    /// the stack rather than a `String`.
    static func withText<T>(_ stored: UnsafeRawBufferPointer, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T {
        guard let first = stored.first else { return try body(UnsafeBufferPointer(start: nil, count: 0)) }
        if first == 0 { return try body(UnsafeRawBufferPointer(rebasing: stored[1...]).bindMemory(to: UInt8.self)) }
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Base64URL.encodedCount(stored.count)) { out in
            try body(UnsafeBufferPointer(rebasing: out[..<Base64URL.encode(stored, into: out)]))
        }
    }
}
