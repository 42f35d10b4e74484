import ConcordBytes
import ConcordDomain
import Foundation

/// A device's library on SQLite (`ObjectWrites`).
extension SQLiteTransaction: ObjectWrites {
    /// `row`'s local identifier is `value`: objects_by_local_id holds its first and last 8
    /// characters (migration 20), the row the whole. The planner uses that index only for these
    /// very expressions.
    static func localIDIs(_ row: String, _ value: String) -> String {
        "substr(\(row).local_id, 1, 8) = substr(\(value), 1, 8) AND substr(\(row).local_id, -8) = substr(\(value), -8) AND \(row).local_id = \(value)"
    }

    static let objectsByLocalIDsSQL = """
        SELECT \(SQLiteTransaction.objectColumns) FROM json_each(?3) j
        CROSS JOIN objects o ON o.account_key = ?1 AND o.device_key = ?2 AND \(SQLiteTransaction.localIDIs("o", "j.value"))
        \(SQLiteTransaction.linkJoin)
        """

    /// The row numbers of a device's objects among the given local identifiers.
    static let rowsByLocalIDsSQL = """
        SELECT j.value, o.rowid FROM json_each(?3) j
        CROSS JOIN objects o ON o.account_key = ?1 AND o.device_key = ?2 AND \(SQLiteTransaction.localIDIs("o", "j.value"))
        """

    func objects(_ device: DeviceRef, localIdentifiers: [String]) throws -> [StoredObject] {
        guard !localIdentifiers.isEmpty, let k = try self.keys(device) else { return [] }
        var result: [StoredObject] = []
        result.reserveCapacity(localIdentifiers.count)
        try self.db.query(Self.objectsByLocalIDsSQL, [.int(k.account), .int(k.device), .text(jsonArray(Self.inKeyOrder(localIdentifiers)))]) { s in
            result.append(StorageRows.storedObject(s))
        }
        return result
    }

    func allObjects(_ device: DeviceRef) throws -> [StoredObject] {
        guard let k = try self.keys(device) else { return [] }
        var result: [StoredObject] = []
        try self.db.query("""
            SELECT \(Self.objectColumns) FROM objects o \(Self.linkJoin)
            WHERE o.account_key = ?1 AND o.device_key = ?2
            """, [.int(k.account), .int(k.device)]) { s in result.append(StorageRows.storedObject(s)) }
        return result
    }

    /// A page of the library in local identifier byte order, through `objects_by_local_id`: in the
    /// order of the identifiers' first 8 characters, which the byte order keeps, each run of equal
    /// ones sorted whole (`after`'s own run is where the page starts).
    static let objectPageSQL = """
        SELECT \(SQLiteTransaction.objectColumns) FROM objects o \(SQLiteTransaction.linkJoin)
        WHERE o.account_key = ?1 AND o.device_key = ?2 AND substr(o.local_id, 1, 8) >= substr(?3, 1, 8) AND o.local_id > ?3
        ORDER BY substr(o.local_id, 1, 8), o.local_id LIMIT ?4
        """

    func storedObjectPage(_ device: DeviceRef, after: String?, limit: Int) throws -> [StoredObject] {
        guard let k = try self.keys(device) else { return [] }
        var result: [StoredObject] = []
        result.reserveCapacity(min(limit, 4096))
        try self.db.query(Self.objectPageSQL, [.int(k.account), .int(k.device), .text(after ?? ""), .int(Int64(limit))]) { s in
            result.append(StorageRows.storedObject(s))
        }
        return result
    }

    /// Assets (most of a library) page through the local identifier's index as `objectPageSQL`
    /// does, skipping the few albums and folders; those have an index of their own (migration 9).
    static let assetPageSQL = """
        SELECT \(SQLiteTransaction.objectColumns) FROM objects o \(SQLiteTransaction.linkJoin)
        WHERE o.account_key = ?1 AND o.device_key = ?2 AND substr(o.local_id, 1, 8) >= substr(?4, 1, 8) AND o.local_id > ?4 AND o.type = ?3
        ORDER BY substr(o.local_id, 1, 8), o.local_id LIMIT ?5
        """
    static let containerPageSQL = """
        SELECT \(SQLiteTransaction.objectColumns) FROM objects o INDEXED BY objects_by_type \(SQLiteTransaction.linkJoin)
        WHERE o.account_key = ?1 AND o.device_key = ?2 AND o.type = ?3 AND o.type <> 1 AND o.local_id > ?4
        ORDER BY o.local_id LIMIT ?5
        """

    func objectPage(_ device: DeviceRef, type: ObjectType, after: String?, limit: Int) throws -> [LibraryObject] {
        guard let k = try self.keys(device) else { return [] }
        var result: [LibraryObject] = []
        try self.db.query(type == .asset ? Self.assetPageSQL : Self.containerPageSQL, [.int(k.account), .int(k.device), .int(Int64(type.rawValue)), .text(after ?? ""), .int(Int64(limit))]) { s in
            result.append(StorageRows.libraryObject(s))
        }
        return result
    }

    func putObjects(_ device: DeviceRef, _ objects: [StoredObject]) throws {
        guard !objects.isEmpty else { return self.observers.didChange(.putting(objects, on: device)) }
        let k = try self.requireKeys(device)
        // objects_by_local_id is not unique (migration 20): the objects already stored are found by
        // row number and updated, the others inserted. Of duplicates in the batch the last one
        // counts, as row by row. They are looked up in byte order of the identifiers, so the index's
        // leaf pages are visited once each, in order, however large the library; new rows append in
        // the order given (a change batch's order; a whole library's new objects come through
        // `insertNewObjects`), and the index takes their entries in that order.
        // Keyed by bytes: Swift's String equality would make an NFC and an NFD identifier one object.
        // (`ByteKey` hashes the bytes in place; an array of them was a copy hashed byte by byte.)
        var last: [ByteKey: Int] = [:]
        last.reserveCapacity(objects.count)
        for (i, s) in objects.enumerated() { last[ByteKey(s.object.localIdentifier)] = i }
        var stored: [ByteKey: Int64] = [:]
        try self.db.query(Self.rowsByLocalIDsSQL, [.int(k.account), .int(k.device), .text(jsonArray(Self.inKeyOrder(objects.map(\.object.localIdentifier))))]) { s in
            stored[ByteKey(s.text(0))] = s.int(1)
        }
        var inserts: [SQLValue] = [], updates: [SQLValue] = []
        inserts.reserveCapacity(max(0, objects.count - stored.count) * 15)
        updates.reserveCapacity(stored.count * 15)
        // Each object's row for the mapping index (`StoredObject.storageRow`): an earlier duplicate's
        // is the last one's, which replaces it there too.
        var rows = [Int64](repeating: 0, count: objects.count)
        var inserted: [Int] = [], earlier: [(at: Int, last: Int)] = []
        for (i, s) in objects.enumerated() {
            let o = s.object, bytes = ByteKey(o.localIdentifier), l = last[bytes]!   // every identifier is in `last`
            guard l == i else { earlier.append((i, l)); continue }
            if let row = stored[bytes] {
                Self.appendColumns(of: s, rowKey: .int(row), to: &updates)
                rows[i] = row
            } else {
                Self.appendColumns(of: s, rowKey: .text(o.localIdentifier), to: &inserts)
                inserted.append(i)
            }
        }
        if !updates.isEmpty {
            try self.db.runRows("UPDATE objects SET \(Self.objectUpdateSet) FROM (", width: 15,
                                tail: ") AS v WHERE objects.rowid = v.column1", updates)
        }
        if let first = try self.insertRows(inserts, count: inserted.count, keys: k) {
            for (n, i) in inserted.enumerated() { rows[i] = first + Int64(n) }
        }
        for (i, l) in earlier { rows[i] = rows[l] }
        self.observers.didChange(.putting(objects, on: device, rows: rows))
    }

    /// New objects go straight to the insert: the lookup `putObjects` makes first would find none
    /// of them (a seek in objects_by_local_id each, a million for a first upload). Nothing here
    /// refuses an identifier the device has (the index is not unique): the caller guarantees it.
    func insertNewObjects(_ device: DeviceRef, _ objects: [StoredObject]) throws {
        guard !objects.isEmpty else { return self.observers.didChange(.putting(objects, on: device)) }
        let k = try self.requireKeys(device)
        var inserts: [SQLValue] = []
        inserts.reserveCapacity(objects.count * 15)
        for s in objects { Self.appendColumns(of: s, rowKey: .text(s.object.localIdentifier), to: &inserts) }
        let first = try self.insertRows(inserts, count: objects.count, keys: k)
        self.observers.didChange(.putting(objects, on: device, rows: first.map { first in (0..<Int64(objects.count)).map { first + $0 } }))
    }

    /// Inserts `count` rows of `appendColumns`' values, in their order. Returns the first one's row
    /// number when they took consecutive ones (as SQLite numbers a row: one past the largest, so
    /// always but when the largest is the largest integer); nil when not, or none was inserted.
    private func insertRows(_ inserts: [SQLValue], count: Int, keys k: (account: Int64, device: Int64)) throws -> Int64? {
        guard count > 0 else { return nil }
        let before = try self.db.scalarInt("SELECT max(rowid) FROM objects") ?? 0
        try self.db.runRows("""
            INSERT INTO objects (account_key, device_key, local_id, type, fingerprint, media_type, creation_date, modification_date,
                                 has_adjustments, is_favorite, title, members, app_created, record_guid,
                                 pk_identifier, key_a, creation_second)
            SELECT ?1, ?2, v.* FROM (
            """, width: 15, tail: ") AS v", fixed: [.int(k.account), .int(k.device)], inserts)
        let last = sqlite3LastInsertRowID(self.db)
        return before <= Int64.max - Int64(count) && last == before + Int64(count) ? before + 1 : nil
    }

    /// The columns an update by row number sets, from `VALUES` in `appendColumns`' order.
    private static let objectUpdateSet = """
        type = v.column2, fingerprint = v.column3, media_type = v.column4, creation_date = v.column5,
        modification_date = v.column6, has_adjustments = v.column7, is_favorite = v.column8, title = v.column9,
        members = v.column10, app_created = v.column11, record_guid = v.column12, pk_identifier = v.column13,
        key_a = v.column14, creation_second = v.column15
        """

    /// An object's 15 values: `rowKey` (its local identifier, or its row number for an update), then its columns.
    private static func appendColumns(of s: StoredObject, rowKey: SQLValue, to rows: inout [SQLValue]) {
        let o = s.object
        // A canonical creation date is stored as its seconds, which then stand for creation_second.
        let creation = o.creationDate.flatMap(CompactDate.seconds)
        rows.append(rowKey); rows.append(.int(Int64(o.type.rawValue)))
        rows.append(.compact(o.fingerprint)); rows.append(.mediaType(o.mediaType))
        rows.append(creation.map { .blob(CompactDate.blob($0)) } ?? o.creationDate.map { .text($0) } ?? .null)
        rows.append(.date(o.modificationDate))
        rows.append(.int(o.hasAdjustments ? 1 : 0)); rows.append(.int(o.isFavorite ? 1 : 0))
        rows.append(o.title.map { .text($0) } ?? .null); rows.append(.text(o.members.joined(separator: "\n")))
        rows.append(.int(o.appCreated ? 1 : 0)); rows.append(s.link.map { .compact($0.guid) } ?? .null)
        rows.append(o.photoKitCloudIdentifier.map { .text($0) } ?? .null); rows.append(o.key.map { .text($0.a) } ?? .null)
        rows.append(creation != nil ? .null : o.creationSecond.map { .int($0) } ?? .null)
    }

    func deleteObjects(_ device: DeviceRef, localIdentifiers: [String]) throws {
        self.observers.didChange(.deleteObjects(device: device.deviceID, localIdentifiers: localIdentifiers))
        guard !localIdentifiers.isEmpty else { return }
        let k = try self.requireKeys(device)
        try self.db.run("""
            DELETE FROM objects WHERE rowid IN (SELECT o.rowid FROM json_each(?3) j
                CROSS JOIN objects o ON o.account_key = ?1 AND o.device_key = ?2 AND \(Self.localIDIs("o", "j.value")))
            """,
                        [.int(k.account), .int(k.device), .text(jsonArray(Self.inKeyOrder(localIdentifiers)))])
    }
}

/// The objects the mapping's write path reads again (`MappingObjectReads`): the lookup by local
/// identifier of `objects(_:localIdentifiers:)` with only the columns the mapping rules read. The
/// full row's dates, title and members cost more to decode than the rest (a date is formatted
/// back to text), and a batch of 10 000 reads 10 000 of them only to drop those fields.
extension SQLiteTransaction: MappingObjectReads {
    static let mappingObjectsByLocalIDsSQL = """
        SELECT o.local_id, o.type, o.fingerprint, o.pk_identifier, o.record_guid, r.type, r.fingerprint, o.rowid FROM json_each(?3) j
        CROSS JOIN objects o ON o.account_key = ?1 AND o.device_key = ?2 AND \(SQLiteTransaction.localIDIs("o", "j.value"))
        \(SQLiteTransaction.linkJoin)
        """

    func mappingObjects(_ device: DeviceRef, localIdentifiers: [String]) throws -> [StoredObject] {
        guard !localIdentifiers.isEmpty, let k = try self.keys(device) else { return [] }
        var result: [StoredObject] = []
        result.reserveCapacity(localIdentifiers.count)
        try self.db.query(Self.mappingObjectsByLocalIDsSQL, [.int(k.account), .int(k.device), .text(jsonArray(Self.inKeyOrder(localIdentifiers)))]) { s in
            var link: CloudRecord?
            if let guid = s.optionalText(4), !s.isNull(5), let type = ObjectType(rawValue: Int(s.int(5))) {
                link = CloudRecord(guid: guid, type: type, fingerprint: s.text(6))
            }
            let object = LibraryObject(localIdentifier: s.text(0), type: ObjectType(rawValue: Int(s.int(1))) ?? .asset, fingerprint: s.text(2),
                                       photoKitCloudIdentifier: s.optionalText(3))
            result.append(StoredObject(object: object, link: link, storageRow: s.int(7)))
        }
        return result
    }
}
