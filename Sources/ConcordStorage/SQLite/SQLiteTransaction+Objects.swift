import ConcordBytes
import ConcordDomain
import Foundation

/// A device's library on SQLite (`ObjectWrites`).
extension SQLiteTransaction: ObjectWrites {
    static let objectsByLocalIDsSQL = """
        SELECT \(SQLiteTransaction.objectColumns) FROM json_each(?3) j
        CROSS JOIN objects o ON o.account_key = ?1 AND o.device_key = ?2 AND o.local_id = j.value
        \(SQLiteTransaction.linkJoin)
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

    /// A page of the library in local identifier byte order, through `objects_by_local_id`.
    static let objectPageSQL = """
        SELECT \(SQLiteTransaction.objectColumns) FROM objects o \(SQLiteTransaction.linkJoin)
        WHERE o.account_key = ?1 AND o.device_key = ?2 AND o.local_id > ?3
        ORDER BY o.local_id LIMIT ?4
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

    /// Assets (most of a library) page through the local identifier's unique index (migration 19),
    /// in local identifier order already, skipping the few albums and folders; those have an index
    /// of their own (migration 9).
    static let assetPageSQL = """
        SELECT \(SQLiteTransaction.objectColumns) FROM objects o \(SQLiteTransaction.linkJoin)
        WHERE o.account_key = ?1 AND o.device_key = ?2 AND o.local_id > ?4 AND o.type = ?3
        ORDER BY o.local_id LIMIT ?5
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
        self.observers.didChange(.putting(objects, on: device))
        guard !objects.isEmpty else { return }
        let k = try self.requireKeys(device)
        // Multi-row statements (`runRows`): a later duplicate of an identifier updates the row the
        // earlier one inserted, as row by row. In byte order of the identifiers, so the unique index's
        // leaf pages are visited once each, in order, however large the library; new rows append.
        var rows: [SQLValue] = []
        rows.reserveCapacity(objects.count * 15)
        for s in Self.inByteOrder(objects) {
            let o = s.object
            // A canonical creation date is stored as its seconds, which then stand for creation_second.
            let creation = o.creationDate.flatMap(CompactDate.seconds)
            rows.append(.text(o.localIdentifier)); rows.append(.int(Int64(o.type.rawValue)))
            rows.append(.compact(o.fingerprint)); rows.append(.mediaType(o.mediaType))
            rows.append(creation.map { .blob(CompactDate.blob($0)) } ?? o.creationDate.map { .text($0) } ?? .null)
            rows.append(.date(o.modificationDate))
            rows.append(.int(o.hasAdjustments ? 1 : 0)); rows.append(.int(o.isFavorite ? 1 : 0))
            rows.append(o.title.map { .text($0) } ?? .null); rows.append(.text(o.members.joined(separator: "\n")))
            rows.append(.int(o.appCreated ? 1 : 0)); rows.append(s.link.map { .compact($0.guid) } ?? .null)
            rows.append(o.photoKitCloudIdentifier.map { .text($0) } ?? .null); rows.append(o.key.map { .text($0.a) } ?? .null)
            rows.append(creation != nil ? .null : o.creationSecond.map { .int($0) } ?? .null)
        }
        try self.db.runRows("""
            INSERT INTO objects (account_key, device_key, local_id, type, fingerprint, media_type, creation_date, modification_date,
                                 has_adjustments, is_favorite, title, members, app_created, record_guid,
                                 pk_identifier, key_a, creation_second)
            SELECT ?1, ?2, v.* FROM (
            """, width: 15, tail: """
            ) AS v WHERE true
            ON CONFLICT (account_key, device_key, local_id) DO UPDATE SET \(StorageRows.objectUpsertSet)
            """, fixed: [.int(k.account), .int(k.device)], rows)
    }

    /// `objects` stably sorted by local identifier bytes (duplicates keep their order).
    private static func inByteOrder(_ objects: [StoredObject]) -> [StoredObject] {
        ByteOrder.positions(of: objects.map(\.object.localIdentifier)).map { objects[$0] }
    }

    func deleteObjects(_ device: DeviceRef, localIdentifiers: [String]) throws {
        self.observers.didChange(.deleteObjects(device: device.deviceID, localIdentifiers: localIdentifiers))
        guard !localIdentifiers.isEmpty else { return }
        let k = try self.requireKeys(device)
        try self.db.run("DELETE FROM objects WHERE account_key = ?1 AND device_key = ?2 AND local_id IN (SELECT value FROM json_each(?3))",
                        [.int(k.account), .int(k.device), .text(jsonArray(Self.inKeyOrder(localIdentifiers)))])
    }
}
