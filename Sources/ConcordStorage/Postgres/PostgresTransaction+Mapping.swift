import ConcordDomain
import Foundation

/// The mapping lookups storage answers itself, and the mapping version, on PostgreSQL (`MappingReads`,
/// `MappingVersionWrites`).
extension PostgresTransaction: MappingReads, MappingVersionWrites {
    func mappingVersion() throws -> Int64 {
        if let known = self.knownMappingVersion { return known }
        return try self.db.scalarInt("SELECT mapping_version FROM accounts WHERE account_id = $1", [.text(self.accountID)]) ?? 0
    }

    func indexSnapshotID() throws -> String? {
        var id: String?
        try self.db.query("SELECT index_snapshot FROM accounts WHERE account_id = $1", [.text(self.accountID)]) { r in id = r.optionalText(0) }
        return id
    }

    func recordIndexSnapshot(id: String, version: Int64) throws -> Bool {
        try self.db.query("UPDATE accounts SET index_snapshot = $1 WHERE account_id = $2 AND mapping_version = $3",
                          [.text(id), .text(self.accountID), .int(version)]) == 1
    }

    func bumpMappingVersion() throws -> Int64 {
        var version: Int64?
        try self.db.query("UPDATE accounts SET mapping_version = mapping_version + 1, index_snapshot = NULL WHERE account_id = $1 RETURNING mapping_version",
                          [.text(self.accountID)]) { r in version = r.int(0) }
        guard let version else { throw DomainError.notFound(message: "No such account.") }
        return version
    }

    /// Bulk reads: each table's rows in binary, fetched from a cursor in batches of `loadBatch`
    /// (one round trip and one result per batch, not per row). Objects come with their links by a
    /// hash join of two sequential scans: a cursor's plan would otherwise favour its first rows (an
    /// ordered walk of both keys, a random heap read per row: five times the CPU), so the
    /// transaction plans for all rows and gives the join's hash table room for a large library.
    func streamMappingTables(devices: (String) throws -> Void, records: (CloudRecord, Int64) throws -> Void,
                             recordKeys: (String, ObjectKey) throws -> Void,
                             objects: (MappingObjectRow) throws -> Void) throws {
        let account = try self.accountKey()
        try self.db.execute("SET LOCAL cursor_tuple_fraction = 1; SET LOCAL work_mem = '128MB'")
        var deviceIDs: [Int64: String] = [:]
        try self.db.query("SELECT device_id, device_key FROM devices WHERE account_id = $1 ORDER BY device_id", [.text(self.accountID)]) { r in
            deviceIDs[r.int(1)] = r.text(0)
            try devices(r.text(0))
        }
        try self.db.batches("SELECT record, type, fingerprint, created_order FROM records WHERE account_key = $1 ORDER BY created_order",
                            [.int(account)], size: Self.loadBatch) { r in
            guard let type = ObjectType(rawValue: Int(r.int(1))) else { return }
            try records(CloudRecord(guid: r.guid(0), type: type, fingerprint: r.fingerprint(2)), r.int(3))
        }
        try self.db.batches("SELECT record, type, key_a FROM record_keys WHERE account_key = $1", [.int(account)], size: Self.loadBatch) { r in
            guard let type = ObjectType(rawValue: Int(r.int(1))) else { return }
            try recordKeys(r.guid(0), ObjectKey(type: type, a: r.text(2)))
        }
        var device: (key: Int64, id: String)?
        try self.db.batches("""
            SELECT o.device_key, o.local_id, o.type, o.fingerprint, l.record, o.key_a, o.creation_second FROM objects o
            LEFT JOIN links l ON l.account_key = o.account_key AND l.device_key = o.device_key AND l.local_id = o.local_id
            WHERE o.account_key = $1
            """, [.int(account)], size: Self.loadBatch) { r in
            let key = r.int(0)
            if device?.key != key { device = deviceIDs[key].map { (key, $0) } }
            guard let deviceID = device?.id, let type = ObjectType(rawValue: Int(r.int(2))) else { return }
            try objects(MappingObjectRow(deviceID: deviceID, localIdentifier: r.text(1), type: type, fingerprint: r.fingerprint(3),
                                         linkedGUID: r.optionalGUID(4), keyA: r.optionalText(5), creationSecond: r.optionalInt(6)))
        }
    }

    /// Rows per fetch of the index load's cursors.
    static let loadBatch = 20_000

    func objects(_ device: DeviceRef, matching keys: [ContentKey]) throws -> [StoredObject] {
        guard !keys.isEmpty else { return [] }
        let owner = try self.keys(device)
        var result: [StoredObject] = []
        // objects_by_content holds objects with a fingerprint only: the query says so.
        let withFingerprint = keys.filter { !$0.fingerprint.isEmpty }
        if !withFingerprint.isEmpty {
            try self.db.query("""
                SELECT \(Self.objectColumns) FROM unnest($3::int8[], $4::bytea[]) AS k(type, fingerprint)
                JOIN objects o ON o.account_key = $1 AND o.device_key = $2 AND o.type = k.type AND o.fingerprint = k.fingerprint
                    AND o.fingerprint <> ''
                \(Self.linkJoin)
                ORDER BY o.local_id
                """, [.int(owner.account), .int(owner.device), .intArray(withFingerprint.map { Int64($0.type.rawValue) }),
                      PostgresCompact.fingerprints(withFingerprint.map(\.fingerprint))]) { r in result.append(PostgresObjectRows.storedObject(r)) }
        }
        let emptyTypes = Set(keys.filter(\.fingerprint.isEmpty).map { Int64($0.type.rawValue) })
        if !emptyTypes.isEmpty {
            try self.db.query("""
                SELECT \(Self.objectColumns) FROM objects o \(Self.linkJoin)
                WHERE o.account_key = $1 AND o.device_key = $2 AND o.fingerprint = '' AND o.type = ANY($3)
                ORDER BY o.local_id
                """, [.int(owner.account), .int(owner.device), .intArray(emptyTypes.sorted())]) { r in
                result.append(PostgresObjectRows.storedObject(r))
            }
            if !withFingerprint.isEmpty { result.sort { $0.object.localIdentifier.utf8.lexicographicallyPrecedes($1.object.localIdentifier.utf8) } }
        }
        return result
    }

    func wantedPage(_ device: DeviceRef, after: String?, limit: Int) throws -> WantedPage {
        let keys = try self.keys(device)
        let parameters: [PGValue] = [.int(keys.account), .int(keys.device)]
        var rows = WantedRows()
        // The record's GUID as text groups the candidate rows (`WantedRows` reads a text column).
        try self.db.query("""
            SELECT r.record::text, r.type, x.creation_second FROM records r
            JOIN links lx ON lx.account_key = $1 AND lx.record = r.record
            JOIN objects x ON x.account_key = $1 AND x.device_key = lx.device_key AND x.local_id = lx.local_id
            WHERE r.account_key = $1 AND r.fingerprint <> ''
              AND NOT EXISTS (SELECT 1 FROM links y WHERE y.account_key = $1 AND y.record = r.record AND y.device_key = $2)
              AND NOT EXISTS (SELECT 1 FROM record_keys k JOIN objects y ON y.account_key = $1 AND y.device_key = $2 AND y.type = k.type AND y.key_a = k.key_a
                              WHERE k.account_key = $1 AND k.record = r.record)
            """, parameters) { rows.addCandidate($0) }
        if rows.candidatesFound() {
            try self.db.query("""
                SELECT o.local_id, o.type, o.creation_second FROM objects o
                WHERE o.account_key = $1 AND o.device_key = $2 AND o.fingerprint = ''
                  AND NOT EXISTS (SELECT 1 FROM links l WHERE l.account_key = $1 AND l.device_key = $2 AND l.local_id = o.local_id)
                """, parameters) { rows.addObject($0) }
        }
        // Keyless objects without a fingerprint linked to a record with neither: wanted for their
        // link (`WantedCandidates.wantedForItsLink`).
        try self.db.query("""
            SELECT o.local_id, o.type FROM links l
            JOIN records r ON r.account_key = $1 AND r.record = l.record
            JOIN objects o ON o.account_key = $1 AND o.device_key = $2 AND o.local_id = l.local_id
            WHERE l.account_key = $1 AND l.device_key = $2 AND r.fingerprint = '' AND o.fingerprint = '' AND o.key_a IS NULL
              AND NOT EXISTS (SELECT 1 FROM record_keys k WHERE k.account_key = $1 AND k.record = r.record)
            """, parameters) { rows.addLinkedToBareRecord($0) }
        return rows.page(after: after, limit: limit)
    }

    func libraryStatus(_ device: DeviceRef) throws -> LibraryStatus {
        let keys = try self.keys(device)
        var status = LibraryStatus(objects: 0, withFingerprint: 0, withKey: 0, linked: 0, wanted: 0)
        // Every link is an object's: links go with their objects.
        try self.db.query("""
            SELECT count(*), count(*) FILTER (WHERE fingerprint <> ''), count(key_a),
                   (SELECT count(*) FROM links WHERE account_key = $1 AND device_key = $2) FROM objects
            WHERE account_key = $1 AND device_key = $2
            """, [.int(keys.account), .int(keys.device)]) { r in
            status = LibraryStatus(objects: Int(r.int(0)), withFingerprint: Int(r.int(1)), withKey: Int(r.int(2)), linked: Int(r.int(3)), wanted: 0)
        }
        status.wanted = try self.wantedPage(device, after: nil, limit: 1).total
        return status
    }
}
