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

    func objects(_ device: DeviceRef, matching keys: [ContentKey]) throws -> [StoredObject] {
        guard !keys.isEmpty else { return [] }
        try self.planGenerically()
        let owner = try self.keys(device)
        var result: [StoredObject] = []
        // objects_by_content holds objects with a fingerprint only: the query says so.
        let withFingerprint = keys.filter { !$0.fingerprint.isEmpty }
        if !withFingerprint.isEmpty {
            try self.db.query(Self.objectsByContent, [.int(owner.account), .int(owner.device), .intArray(withFingerprint.map { Int64($0.type.rawValue) }),
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
            if !withFingerprint.isEmpty { result = result.inLocalIdentifierOrder() }
        }
        return result
    }

    /// Objects of device `$2` with these fingerprints (`$3` types, `$4` fingerprints, none empty), with
    /// their links: through `objects_by_content`, the device and the fingerprint's first 3 bytes,
    /// which the statement spells as the index does (`PostgresNarrowSchemaTests` checks the plan).
    static let objectsByContent = """
        SELECT \(objectColumns) FROM unnest($3::int8[], $4::bytea[]) AS k(type, fingerprint)
        JOIN objects o ON o.device_key = $2 AND substring(o.fingerprint from 1 for 3) = substring(k.fingerprint from 1 for 3)
            AND o.fingerprint = k.fingerprint AND o.fingerprint <> '' AND o.type = k.type AND o.account_key = $1
        \(linkJoin)
        ORDER BY o.local_id
        """

    func wantedPage(_ device: DeviceRef, after: String?, limit: Int) throws -> WantedPage {
        let keys = try self.keys(device)
        let parameters: [PGValue] = [.int(keys.account), .int(keys.device)]
        var rows = WantedRows()
        // The record's GUID as text groups the candidate rows (`WantedRows` reads a text column).
        try self.db.query("""
            SELECT r.record::text, r.type, x.creation_second FROM records r
            JOIN links lx ON lx.account_key = $1 AND lx.record_order = r.created_order
            JOIN objects x ON x.device_key = lx.device_key AND x.object_no = lx.object_no
            WHERE r.account_key = $1 AND r.fingerprint <> ''
              AND NOT EXISTS (SELECT 1 FROM links y WHERE y.account_key = $1 AND y.record_order = r.created_order AND y.device_key = $2)
              AND NOT EXISTS (SELECT 1 FROM record_keys k JOIN objects y ON y.device_key = $2 AND y.type = k.type AND y.key_a = k.key_a
                              WHERE k.account_key = $1 AND k.record = r.record)
            """, parameters) { rows.addCandidate($0) }
        if rows.candidatesFound() {
            try self.db.query("""
                SELECT o.local_id, o.type, o.creation_second FROM objects o
                WHERE o.account_key = $1 AND o.device_key = $2 AND o.fingerprint = ''
                  AND NOT EXISTS (SELECT 1 FROM links l WHERE l.device_key = $2 AND l.object_no = o.object_no)
                """, parameters) { rows.addObject($0) }
        }
        // Keyless objects without a fingerprint linked to a record with neither: wanted for their
        // link (`WantedCandidates.wantedForItsLink`).
        try self.db.query("""
            SELECT o.local_id, o.type FROM links l
            JOIN records r ON r.account_key = $1 AND r.created_order = l.record_order
            JOIN objects o ON o.device_key = $2 AND o.object_no = l.object_no
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
                   (SELECT count(*) FROM links WHERE device_key = $2) FROM objects
            WHERE account_key = $1 AND device_key = $2
            """, [.int(keys.account), .int(keys.device)]) { r in
            status = LibraryStatus(objects: Int(r.int(0)), withFingerprint: Int(r.int(1)), withKey: Int(r.int(2)), linked: Int(r.int(3)), wanted: 0)
        }
        status.wanted = try self.wantedPage(device, after: nil, limit: 1).total
        return status
    }
}

/// The objects the mapping's write path reads again (`MappingObjectReads`): the lookup by local
/// identifier of `objects(_:localIdentifiers:)` with only the columns the mapping rules read — no
/// dates, title or members to send and decode for each of a batch's thousand objects — and each
/// object's number for the links that follow (`UnlinkedObjectNumbers`).
extension PostgresTransaction: MappingObjectReads {
    /// This lookup also finds the objects' numbers, which the links inserted next take as they are:
    /// answered by the mapping index without them (a number it does not know: one past 32 bits, or
    /// an object a log entry without numbers put), each link would look its object up again. With
    /// them, the index answers (`ServiceCore.mappingObjects`).
    var prefersIndexedMappingObjects: Bool { false }

    func mappingObjects(_ device: DeviceRef, localIdentifiers: [String]) throws -> [StoredObject] {
        guard !localIdentifiers.isEmpty else { return [] }
        try self.planGenerically()
        let keys = try self.keys(device)
        var result: [StoredObject] = []
        result.reserveCapacity(localIdentifiers.count)
        let found = self.unlinkedObjects.lookup(device: keys.device, observers: self.observers)
        try self.db.query(Self.mappingObjectsByLocalID, [.int(keys.account), .int(keys.device), .textArray(localIdentifiers)]) { r in
            var link: CloudRecord?
            if !r.isNull(4), !r.isNull(5), let type = ObjectType(rawValue: Int(r.int(5))) {
                link = CloudRecord(guid: r.guid(4), type: type, fingerprint: r.fingerprint(6))
            }
            let object = LibraryObject(localIdentifier: r.text(0), type: ObjectType(rawValue: Int(r.int(1))) ?? .asset, fingerprint: r.fingerprint(2),
                                       photoKitCloudIdentifier: r.optionalText(3))
            if r.bool(8) { found.add(object.localIdentifier, number: r.int(7)) }
            result.append(StoredObject(object: object, link: link, storageRow: r.int(7)))
        }
        return result
    }

    /// Objects of device `$2` by local identifier (`$3`): identifier, type, fingerprint, PhotoKit
    /// cloud identifier, the linked record (GUID, type, fingerprint), the object's number, and
    /// whether it has no link.
    static let mappingObjectsByLocalID = """
        SELECT o.local_id, o.type, o.fingerprint, o.pk_identifier, r.record, r.type, r.fingerprint, o.object_no, l.object_no IS NULL
        FROM objects o \(linkJoin)
        WHERE o.account_key = $1 AND o.device_key = $2 AND o.local_id = ANY($3)
        """
}
