import ConcordDomain
import Foundation

/// The mapping lookups storage answers itself, and the mapping version, on SQLite (`MappingReads`,
/// `MappingVersionWrites`).
extension SQLiteTransaction: MappingReads, MappingVersionWrites {
    /// The wanted candidates: records with a fingerprint, linked on another device, not on this
    /// one, carrying no key this device's objects carry; each with its linked objects' seconds.
    static let wantedCandidatesSQL = """
        SELECT r.guid, r.type, coalesce(x.creation_second, x.creation_date) FROM records r
        CROSS JOIN objects x INDEXED BY objects_by_link ON x.account_key = ?1 AND x.record_guid = r.guid
        WHERE r.account_key = ?1 AND r.fingerprint <> ''
          AND EXISTS (SELECT 1 FROM objects y INDEXED BY objects_by_link WHERE y.account_key = ?1 AND y.record_guid = r.guid AND y.device_key <> ?2)
          AND NOT EXISTS (SELECT 1 FROM objects y INDEXED BY objects_by_link WHERE y.account_key = ?1 AND y.device_key = ?2 AND y.record_guid = r.guid)
          AND NOT EXISTS (SELECT 1 FROM record_keys k CROSS JOIN objects y INDEXED BY objects_by_key
                          ON y.account_key = ?1 AND y.device_key = ?2 AND y.type = k.type AND y.key_a = k.key_a
                          WHERE k.account_key = ?1 AND k.guid = r.guid)
        """

    /// The device's keyless objects without a fingerprint linked to a record with neither
    /// fingerprint nor key: wanted for their link (`WantedCandidates.wantedForItsLink`). From the
    /// account's records without a fingerprint, each one's link on the device by objects_by_link.
    static let linkedToBareRecordsSQL = """
        SELECT o.local_id, o.type FROM records r
        CROSS JOIN objects o INDEXED BY objects_by_link ON o.account_key = ?1 AND o.record_guid = r.guid AND o.device_key = ?2
        WHERE r.account_key = ?1 AND r.fingerprint = '' AND o.fingerprint = '' AND o.key_a IS NULL
          AND NOT EXISTS (SELECT 1 FROM record_keys k WHERE k.account_key = ?1 AND k.guid = r.guid)
        """

    /// By non-empty fingerprints: objects_by_content holds only objects with one (migration 9), by
    /// the first 4 bytes of it (migration 12): the index finds the prefix, the row the whole.
    static let objectsByContentSQL = """
        SELECT \(SQLiteTransaction.objectColumns) FROM json_each(?3) j
        CROSS JOIN objects o INDEXED BY objects_by_content ON o.account_key = ?1 AND o.device_key = ?2
            AND o.type = json_extract(j.value, '$[0]') AND substr(o.fingerprint, 1, 4) = substr(concord_compact(json_extract(j.value, '$[1]')), 1, 4)
            AND o.fingerprint = concord_compact(json_extract(j.value, '$[1]')) AND o.fingerprint <> ''
        \(SQLiteTransaction.linkJoin)
        ORDER BY o.local_id
        """

    /// Objects without a fingerprint of the given types (no index holds them by content).
    static let objectsWithoutFingerprintSQL = """
        SELECT \(SQLiteTransaction.objectColumns) FROM objects o \(SQLiteTransaction.linkJoin)
        WHERE o.account_key = ?1 AND o.device_key = ?2 AND o.fingerprint = '' AND o.type IN (SELECT value FROM json_each(?3))
        ORDER BY o.local_id
        """

    func mappingVersion() throws -> Int64 {
        try self.db.scalarInt("SELECT mapping_version FROM accounts WHERE account_id = ?", [.text(self.accountID)]) ?? 0
    }

    func indexSnapshotID() throws -> String? {
        var id: String?
        try self.db.query("SELECT index_snapshot FROM accounts WHERE account_id = ?", [.text(self.accountID)]) { s in id = s.optionalText(0) }
        return id
    }

    func recordIndexSnapshot(id: String, version: Int64) throws -> Bool {
        try self.db.run("UPDATE accounts SET index_snapshot = ? WHERE account_id = ? AND mapping_version = ?",
                        [.text(id), .text(self.accountID), .int(version)]) == 1
    }

    func bumpMappingVersion() throws -> Int64 {
        guard let a = try self.accountKey(self.accountID) else { throw DomainError.notFound(message: "No such account.") }
        // The snapshot recorded for the old version is of no use now: a recorded ID means "current".
        try self.db.run("UPDATE accounts SET mapping_version = mapping_version + 1, index_snapshot = NULL WHERE account_key = ?", [.int(a)])
        return try self.db.scalarInt("SELECT mapping_version FROM accounts WHERE account_key = ?", [.int(a)]) ?? 0
    }

    func objects(_ device: DeviceRef, matching keys: [ContentKey]) throws -> [StoredObject] {
        guard !keys.isEmpty, let k = try self.keys(device) else { return [] }
        var result: [StoredObject] = []
        let withFingerprint = keys.filter { !$0.fingerprint.isEmpty }
        if !withFingerprint.isEmpty {
            try self.db.query(Self.objectsByContentSQL, [.int(k.account), .int(k.device), .text(Self.typedPairsJSON(withFingerprint.map { ($0.type, $0.fingerprint) }, sorted: true))]) { s in
                result.append(StorageRows.storedObject(s))
            }
        }
        let emptyTypes = Set(keys.filter(\.fingerprint.isEmpty).map(\.type.rawValue))
        if !emptyTypes.isEmpty {
            try self.db.query(Self.objectsWithoutFingerprintSQL, [.int(k.account), .int(k.device), .text("[" + emptyTypes.sorted().map(String.init).joined(separator: ",") + "]")]) { s in
                result.append(StorageRows.storedObject(s))
            }
            if !withFingerprint.isEmpty { result = result.inLocalIdentifierOrder() }
        }
        return result
    }

    func wantedPage(_ device: DeviceRef, after: String?, limit: Int) throws -> WantedPage {
        guard let k = try self.keys(device) else { return WantedPage(objects: [], next: nil, total: 0) }
        var rows = WantedRows()
        try self.db.query(Self.wantedCandidatesSQL, [.int(k.account), .int(k.device)]) { rows.addCandidate($0) }
        if rows.candidatesFound() {
            try self.db.query("""
                SELECT local_id, type, coalesce(creation_second, creation_date) FROM objects
                WHERE account_key = ? AND device_key = ? AND fingerprint = '' AND record_guid IS NULL
                """, [.int(k.account), .int(k.device)]) { rows.addObject($0) }
        }
        try self.db.query(Self.linkedToBareRecordsSQL, [.int(k.account), .int(k.device)]) { rows.addLinkedToBareRecord($0) }
        return rows.page(after: after, limit: limit)
    }

    func libraryStatus(_ device: DeviceRef) throws -> LibraryStatus {
        guard let k = try self.keys(device) else { return LibraryStatus(objects: 0, withFingerprint: 0, withKey: 0, linked: 0, wanted: 0) }
        var status = LibraryStatus(objects: 0, withFingerprint: 0, withKey: 0, linked: 0, wanted: 0)
        try self.db.query("""
            SELECT count(*), coalesce(sum(fingerprint <> ''), 0), count(key_a), count(record_guid) FROM objects
            WHERE account_key = ? AND device_key = ?
            """, [.int(k.account), .int(k.device)]) { s in
            status = LibraryStatus(objects: Int(s.int(0)), withFingerprint: Int(s.int(1)), withKey: Int(s.int(2)), linked: Int(s.int(3)), wanted: 0)
        }
        status.wanted = try self.wantedPage(device, after: nil, limit: 1).total
        return status
    }
}
