import ConcordBytes
import ConcordDomain
import CSQLite
import Foundation

/// The mapping index's load from SQLite's tables as bytes (`MappingTableBytesReads`): no `String`
/// per identifier, fingerprint or GUID. A GUID or fingerprint stored in its binary form
/// (`CompactText`) goes to the index as it is, a fingerprint spelled out in a buffer of the stack;
/// a link comes as its record's creation order, from a table of the account's record GUIDs built
/// while the records stream. One reader, one table scan per table.
///
/// What the bytes cannot carry makes the index inexact (`markInexact`): a GUID stored as text (only
/// a non-canonical spelling stays text, and no record has one), and a link to a GUID no record has
/// (storage allows it; the service never makes one).
extension SQLiteTransaction: MappingTableBytesReads {
    func streamMappingTableBytes(into sink: any MappingTableSink) throws {
        guard let a = try self.accountKey(self.accountID) else { return }
        var devices: [(key: Int64, id: String)] = []
        try self.db.query("SELECT device_key, device_id FROM devices WHERE account_key = ?", [.int(a)]) { s in devices.append((s.int(0), s.text(1))) }
        devices.sort { $0.id < $1.id }   // in ID order, as PostgreSQL's come
        var objectCount: Int64 = 0
        for d in devices {
            let count = try self.db.scalarInt("SELECT count(*) FROM objects WHERE account_key = ?1 AND device_key = ?2", [.int(a), .int(d.key)]) ?? 0
            objectCount += count
            try sink.device(d.id, objects: Int(count))
        }
        let recordCount = Int(try self.db.scalarInt("SELECT next_record_order - 1 FROM accounts WHERE account_key = ?", [.int(a)]) ?? 0)
        sink.expectRecords(recordCount)
        var orderOfGUID = [UUIDBits: Int64](minimumCapacity: recordCount)
        try self.db.query("SELECT guid, type, fingerprint, created_order FROM records WHERE account_key = ? ORDER BY created_order", [.int(a)]) { s in
            guard let type = ObjectType(rawValue: Int(s.int(1))) else { return }
            guard let guid = Self.storedGUID(s, 0) else { sink.markInexact(); return }
            let order = s.int(3)
            orderOfGUID[guid] = order
            try Self.withFingerprint(s, 2) { text, key in try sink.record(guid: guid, type: type, fingerprint: text, fingerprintKey: key, order: order) }
        }
        try self.db.query("SELECT guid, type, key_a FROM record_keys WHERE account_key = ?", [.int(a)]) { s in
            guard let type = ObjectType(rawValue: Int(s.int(1))), let guid = Self.storedGUID(s, 0) else { return }
            try s.withUTF8(2) { try sink.recordKey(guid: guid, type: type, a: $0) }
        }
        try sink.beginObjects()
        // A device's number in the sink's order, by storage key: an account may have many devices,
        // and rows of one device mostly follow each other (the last one found is tried first).
        let deviceNumbers = Dictionary(uniqueKeysWithValues: devices.enumerated().map { ($0.element.key, $0.offset) })
        var last: (key: Int64, number: Int)?
        // Objects in the table's order, devices interleaved (one scan of the account's rows, not one
        // per device through an index): each device's objects still come one after the other.
        // Rows are stored in the order they came (`putObjects`), not in the account index's order:
        // through the index each row would be a seek to a page anywhere (2.3 times the load's time
        // at 300 000 × 2). So the table is read in its own order, other accounts' rows skipped,
        // when it has at most `tableScanSlack` rows per object of the account (its largest row
        // number bounds its rows, and costs one seek).
        let columns = "device_key, local_id, type, fingerprint, record_guid, key_a, coalesce(creation_second, creation_date), rowid"
        let tableRows = try self.db.scalarInt("SELECT max(rowid) FROM objects") ?? 0
        let sql = tableRows <= Self.tableScanSlack * objectCount
            ? "SELECT \(columns) FROM objects NOT INDEXED WHERE account_key = ?1"
            : "SELECT \(columns) FROM objects WHERE account_key = ?1"
        try self.db.query(sql, [.int(a)]) { s in
            let key = s.int(0)
            if key != last?.key { last = deviceNumbers[key].map { (key, $0) } }
            guard let device = last?.number, let type = ObjectType(rawValue: Int(s.int(2))) else { return }
            var linkedOrder: Int64 = 0
            if !s.isNull(4) {
                if let guid = Self.storedGUID(s, 4), let order = orderOfGUID[guid] { linkedOrder = order } else { sink.markInexact() }
            }
            let creationSecond = s.creationSecond(6), row = s.int(7)
            try s.withUTF8(1) { localIdentifier in
                try Self.withFingerprint(s, 3) { text, fingerprintKey in
                    if s.isNull(5) {
                        try sink.object(device: device, localIdentifier: localIdentifier, type: type, fingerprint: text, fingerprintKey: fingerprintKey,
                                        linkedOrder: linkedOrder, laterLinkedOrder: 0, keyA: nil, creationSecond: creationSecond, storageRow: row)
                    } else {
                        try s.withUTF8(5) { keyA in
                            try sink.object(device: device, localIdentifier: localIdentifier, type: type, fingerprint: text, fingerprintKey: fingerprintKey,
                                            linkedOrder: linkedOrder, laterLinkedOrder: 0, keyA: keyA, creationSecond: creationSecond, storageRow: row)
                        }
                    }
                }
            }
        }
    }

    /// The load reads the whole objects table when it holds at most this many rows per object of
    /// the account (the others are read and skipped).
    static let tableScanSlack: Int64 = 4

    /// A GUID column's value: its 16 stored bytes; nil for text (a spelling that is not canonical,
    /// which `UUIDBits` does not parse either) and NULL.
    private static func storedGUID(_ s: Statement, _ column: Int32) -> UUIDBits? {
        guard s.isBlob(column) else { return nil }
        return s.withBlob(column) { $0.count == 16 ? UUIDBits(bigEndianBytes: $0) : nil }
    }

    /// `body` with a fingerprint column's text (UTF-8) and a key equal exactly when two fingerprints
    /// are: the stored value, tagged 1 when it is the binary form and 0 when text (`CompactText` is
    /// one-to-one, so equal fingerprints are stored alike).
    private static func withFingerprint<T>(_ s: Statement, _ column: Int32,
                                           _ body: (UnsafeBufferPointer<UInt8>, UnsafeRawBufferPointer) throws -> T) throws -> T {
        if s.isBlob(column) {
            return try s.withBlob(column) { stored in
                try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Base64URL.encodedCount(stored.count) + stored.count + 1) { buffer in
                    let textCount = Base64URL.encode(stored, into: buffer)
                    let key = UnsafeMutableBufferPointer(rebasing: buffer[textCount...])
                    key[0] = 1
                    if stored.count > 0 { UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(key)[1...]).copyMemory(from: stored) }
                    return try body(UnsafeBufferPointer(rebasing: buffer[..<textCount]), UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(key)[..<(stored.count + 1)]))
                }
            }
        }
        return try s.withUTF8(column) { text in
            try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: text.count + 1) { key in
                key[0] = 0
                if text.count > 0 { UnsafeMutableBufferPointer(rebasing: key[1...]).baseAddress!.update(from: text.baseAddress!, count: text.count) }
                return try body(text, UnsafeRawBufferPointer(key))
            }
        }
    }
}
