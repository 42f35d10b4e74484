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

    func streamMappingTables(devices: (String) throws -> Void, records: (CloudRecord, Int64) throws -> Void,
                             recordKeys: (String, ObjectKey) throws -> Void,
                             objects: (MappingObjectRow) throws -> Void) throws {
        try self.db.query("SELECT device_id FROM devices WHERE account_id = $1 ORDER BY device_id", [.text(self.accountID)]) { r in
            try devices(r.text(0))
        }
        // Row by row (single-row mode): a million-row account is never held as one result.
        try self.db.stream("SELECT guid, type, fingerprint, created_order FROM records WHERE account_id = $1 ORDER BY created_order", [.text(self.accountID)]) { r in
            guard let type = ObjectType(rawValue: Int(r.int(1))) else { return }
            try records(CloudRecord(guid: r.text(0), type: type, fingerprint: r.text(2)), r.int(3))
        }

        try self.db.stream("SELECT guid, type, key_a FROM record_keys WHERE account_id = $1", [.text(self.accountID)]) { r in
            guard let type = ObjectType(rawValue: Int(r.int(1))) else { return }
            try recordKeys(r.text(0), ObjectKey(type: type, a: r.text(2)))
        }
        try self.db.stream("SELECT device_id, local_id, type, fingerprint, record_guid, key_a, creation_second FROM objects WHERE account_id = $1",
                          [.text(self.accountID)]) { r in
            guard let type = ObjectType(rawValue: Int(r.int(2))) else { return }
            try objects(MappingObjectRow(deviceID: r.text(0), localIdentifier: r.text(1), type: type, fingerprint: r.text(3), linkedGUID: r.optionalText(4),
                                         keyA: r.optionalText(5), creationSecond: r.isNull(6) ? nil : r.int(6)))
        }
    }

    func objects(_ device: DeviceRef, matching keys: [ContentKey]) throws -> [StoredObject] {
        guard !keys.isEmpty else { return [] }
        var result: [StoredObject] = []
        // objects_by_content holds objects with a fingerprint only (migration 9): the query says so.
        let withFingerprint = keys.filter { !$0.fingerprint.isEmpty }
        if !withFingerprint.isEmpty {
            try self.db.query("""
                SELECT \(Self.objectColumns) FROM unnest($3::int8[], $4::text[]) AS k(type, fingerprint)
                JOIN objects o ON o.account_id = $1 AND o.device_id = $2 AND o.type = k.type AND o.fingerprint = k.fingerprint
                    AND o.fingerprint <> ''
                \(Self.linkJoin)
                ORDER BY o.local_id
                """, [.text(device.accountID), .text(device.deviceID), .intArray(withFingerprint.map { Int64($0.type.rawValue) }),
                      .textArray(withFingerprint.map(\.fingerprint))]) { r in result.append(StorageRows.storedObject(r)) }
        }
        let emptyTypes = Set(keys.filter(\.fingerprint.isEmpty).map { Int64($0.type.rawValue) })
        if !emptyTypes.isEmpty {
            try self.db.query("""
                SELECT \(Self.objectColumns) FROM objects o \(Self.linkJoin)
                WHERE o.account_id = $1 AND o.device_id = $2 AND o.fingerprint = '' AND o.type = ANY($3)
                ORDER BY o.local_id
                """, [.text(device.accountID), .text(device.deviceID), .intArray(emptyTypes.sorted())]) { r in
                result.append(StorageRows.storedObject(r))
            }
            if !withFingerprint.isEmpty { result.sort { $0.object.localIdentifier.utf8.lexicographicallyPrecedes($1.object.localIdentifier.utf8) } }
        }
        return result
    }

    func wantedPage(_ device: DeviceRef, after: String?, limit: Int) throws -> WantedPage {
        var rows = WantedRows()
        try self.db.query("""
            SELECT r.guid, r.type, x.creation_second FROM records r
            JOIN objects x ON x.account_id = $1 AND x.record_guid = r.guid
            WHERE r.account_id = $1 AND r.fingerprint <> ''
              AND EXISTS (SELECT 1 FROM objects y WHERE y.account_id = $1 AND y.record_guid = r.guid AND y.device_id <> $2)
              AND NOT EXISTS (SELECT 1 FROM objects y WHERE y.account_id = $1 AND y.device_id = $2 AND y.record_guid = r.guid)
              AND NOT EXISTS (SELECT 1 FROM record_keys k JOIN objects y ON y.account_id = $1 AND y.device_id = $2 AND y.type = k.type AND y.key_a = k.key_a
                              WHERE k.account_id = $1 AND k.guid = r.guid)
            """, [.text(device.accountID), .text(device.deviceID)]) { rows.addCandidate($0) }
        if rows.candidatesFound() {
            try self.db.query("""
                SELECT local_id, type, creation_second FROM objects
                WHERE account_id = $1 AND device_id = $2 AND fingerprint = '' AND record_guid IS NULL
                """, [.text(device.accountID), .text(device.deviceID)]) { rows.addObject($0) }
        }
        // Keyless objects without a fingerprint linked to a record with neither: wanted for their
        // link (`WantedCandidates.wantedForItsLink`).
        try self.db.query("""
            SELECT o.local_id, o.type FROM records r
            JOIN objects o ON o.account_id = $1 AND o.record_guid = r.guid AND o.device_id = $2
            WHERE r.account_id = $1 AND r.fingerprint = '' AND o.fingerprint = '' AND o.key_a IS NULL
              AND NOT EXISTS (SELECT 1 FROM record_keys k WHERE k.account_id = $1 AND k.guid = r.guid)
            """, [.text(device.accountID), .text(device.deviceID)]) { rows.addLinkedToBareRecord($0) }
        return rows.page(after: after, limit: limit)
    }

    func libraryStatus(_ device: DeviceRef) throws -> LibraryStatus {
        var status = LibraryStatus(objects: 0, withFingerprint: 0, withKey: 0, linked: 0, wanted: 0)
        try self.db.query("""
            SELECT count(*), count(*) FILTER (WHERE fingerprint <> ''), count(key_a), count(record_guid) FROM objects
            WHERE account_id = $1 AND device_id = $2
            """, [.text(device.accountID), .text(device.deviceID)]) { r in
            status = LibraryStatus(objects: Int(r.int(0)), withFingerprint: Int(r.int(1)), withKey: Int(r.int(2)), linked: Int(r.int(3)), wanted: 0)
        }
        status.wanted = try self.wantedPage(device, after: nil, limit: 1).total
        return status
    }
}
