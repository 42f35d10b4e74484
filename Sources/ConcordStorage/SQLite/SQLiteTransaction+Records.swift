import ConcordBytes
import ConcordDomain
import Foundation

/// Cloud records, their keys and links on SQLite (`RecordWrites`).
extension SQLiteTransaction: RecordWrites {
    static let linkStatesSQL = """
        SELECT j.key, o.type, o.fingerprint, o.record_guid, r.fingerprint FROM json_each(?3) j
        CROSS JOIN objects o ON o.account_key = ?1 AND o.device_key = ?2 AND \(SQLiteTransaction.localIDIs("o", "j.value"))
        LEFT JOIN records r ON r.account_key = ?1 AND r.guid = o.record_guid
        """

    static let keyMatchesSQL = """
        SELECT DISTINCT k.guid, \(SQLiteTransaction.objectColumns) FROM json_each(?3) j
        CROSS JOIN record_keys k ON k.account_key = ?1 AND k.guid = concord_compact(j.value)
        CROSS JOIN objects o INDEXED BY objects_by_key ON o.account_key = ?1 AND o.device_key = ?2 AND o.type = k.type AND o.key_a = k.key_a
        \(SQLiteTransaction.linkJoin)
        ORDER BY k.guid, o.local_id
        """

    static let unlinkedRecordsByKeySQL = """
        SELECT r.guid, r.type, r.fingerprint, k.key_a FROM json_each(?3) j
        CROSS JOIN record_keys k INDEXED BY record_keys_by_key ON k.account_key = ?1
            AND k.type = json_extract(j.value, '$[0]') AND k.key_a = json_extract(j.value, '$[1]')
        CROSS JOIN records r ON r.account_key = ?1 AND r.guid = k.guid
        WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.account_key = ?1 AND o.device_key = ?2 AND o.record_guid = r.guid)
        ORDER BY r.created_order
        """

    static let recordsCarryingKeysSQL = """
        SELECT DISTINCT k.guid FROM json_each(?3) j
        CROSS JOIN record_keys k ON k.account_key = ?1 AND k.guid = concord_compact(j.value)
        WHERE EXISTS (SELECT 1 FROM objects o INDEXED BY objects_by_key
                      WHERE o.account_key = ?1 AND o.device_key = ?2 AND o.type = k.type AND o.key_a = k.key_a)
        """

    static let recordLinksSQL = """
        SELECT j.key, r.guid, r.type, r.fingerprint, o.local_id FROM json_each(?3) j
        CROSS JOIN records r ON r.account_key = ?1 AND r.guid = concord_compact(j.value)
        LEFT JOIN objects o INDEXED BY objects_by_link ON o.account_key = ?1 AND o.device_key = ?2 AND o.record_guid = r.guid
        """

    static let recordsByGUIDSQL = """
        SELECT r.guid, r.type, r.fingerprint FROM json_each(?2) j
        CROSS JOIN records r ON r.account_key = ?1 AND r.guid = concord_compact(j.value)
        ORDER BY r.created_order
        """

    static let linkedObjectsSQL = """
        SELECT o.record_guid, o.local_id FROM json_each(?3) j
        CROSS JOIN objects o ON o.account_key = ?1 AND o.device_key = ?2 AND o.record_guid = concord_compact(j.value)
        """

    static let unlinkedRecordsSQL = """
        SELECT r.guid, r.type, r.fingerprint FROM json_each(?3) j
        CROSS JOIN records r INDEXED BY records_by_content ON r.account_key = ?1
            AND r.type = json_extract(j.value, '$[0]') AND substr(r.fingerprint, 1, 4) = substr(concord_compact(json_extract(j.value, '$[1]')), 1, 4)
            AND r.fingerprint = concord_compact(json_extract(j.value, '$[1]'))
        WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.account_key = ?1 AND o.device_key = ?2 AND o.record_guid = r.guid)
        ORDER BY r.created_order
        """

    func linkStates(_ device: DeviceRef, localIdentifiers: [String]) throws -> [ObjectLinkState?] {
        var result = [ObjectLinkState?](repeating: nil, count: localIdentifiers.count)
        guard !localIdentifiers.isEmpty, let k = try self.keys(device) else { return result }
        try self.db.query(Self.linkStatesSQL, [.int(k.account), .int(k.device), .text(jsonArray(localIdentifiers))]) { s in
            let i = Int(s.int(0))
            guard i >= 0, i < result.count, let type = ObjectType(rawValue: Int(s.int(1))) else { return }
            result[i] = ObjectLinkState(localIdentifier: localIdentifiers[i], type: type, fingerprint: s.text(2), linkedGUID: s.optionalText(3),
                                        linkedFingerprint: s.optionalText(4))
        }
        return result
    }

    func recordLinks(_ device: DeviceRef, guids: [String]) throws -> [(record: CloudRecord, linkedLocalIdentifier: String?)?] {
        var result = [(record: CloudRecord, linkedLocalIdentifier: String?)?](repeating: nil, count: guids.count)
        guard !guids.isEmpty, let a = try self.accountKey(device.accountID) else { return result }
        // An unknown device links nothing; records are still the account's.
        let d = try self.keys(device)?.device ?? -1
        try self.db.query(Self.recordLinksSQL, [.int(a), .int(d), .text(jsonArray(guids))]) { s in
            let i = Int(s.int(0))
            guard i >= 0, i < result.count, let type = ObjectType(rawValue: Int(s.int(2))) else { return }
            result[i] = (CloudRecord(guid: s.text(1), type: type, fingerprint: s.text(3)), s.optionalText(4))
        }
        return result
    }

    func recordCount() throws -> Int {
        // Every record takes the next creation order, from 1, and records go only with the account.
        guard let a = try self.accountKey(self.accountID) else { return 0 }
        return Int(try self.db.scalarInt("SELECT next_record_order - 1 FROM accounts WHERE account_key = ?", [.int(a)]) ?? 0)
    }

    func records(guids: [String]) throws -> [CloudRecord] {
        guard !guids.isEmpty, let a = try self.accountKey(self.accountID) else { return [] }
        var result: [CloudRecord] = []
        result.reserveCapacity(guids.count)
        try self.db.query(Self.recordsByGUIDSQL, [.int(a), .text(jsonArray(Self.inKeyOrder(guids)))]) { s in
            if let type = ObjectType(rawValue: Int(s.int(1))) { result.append(CloudRecord(guid: s.text(0), type: type, fingerprint: s.text(2))) }
        }
        return result
    }

    func linkedObjects(_ device: DeviceRef, guids: [String]) throws -> [(guid: String, localIdentifier: String)] {
        guard !guids.isEmpty, let k = try self.keys(device) else { return [] }
        var result: [(guid: String, localIdentifier: String)] = []
        result.reserveCapacity(guids.count)
        try self.db.query(Self.linkedObjectsSQL, [.int(k.account), .int(k.device), .text(jsonArray(Self.inKeyOrder(guids)))]) { s in
            result.append((s.text(0), s.text(1)))
        }
        return result
    }

    func unlinkedRecords(_ device: DeviceRef, matching keys: [ContentKey]) throws -> [CloudRecord] {
        guard !keys.isEmpty, let k = try self.keys(device) else { return [] }
        var result: [CloudRecord] = []
        try self.db.query(Self.unlinkedRecordsSQL, [.int(k.account), .int(k.device), .text(Self.typedPairsJSON(keys.map { ($0.type, $0.fingerprint) }, sorted: true))]) { s in
            if let type = ObjectType(rawValue: Int(s.int(1))) { result.append(CloudRecord(guid: s.text(0), type: type, fingerprint: s.text(2))) }
        }
        return result
    }

    func keyMatches(_ device: DeviceRef, guids: [String]) throws -> [String: [StoredObject]] {
        guard !guids.isEmpty, let k = try self.keys(device) else { return [:] }
        var result: [String: [StoredObject]] = [:]
        try self.db.query(Self.keyMatchesSQL, [.int(k.account), .int(k.device), .text(jsonArray(Self.inKeyOrder(guids)))]) { s in
            result[s.text(0), default: []].append(StorageRows.storedObject(ShiftedRow(row: s, by: 1)))
        }
        return result
    }

    func recordKeys(guids: [String]) throws -> [String: [ObjectKey]] {
        guard !guids.isEmpty, let a = try self.accountKey(self.accountID) else { return [:] }
        var result: [String: [ObjectKey]] = [:]
        try self.db.query("SELECT k.guid, k.type, k.key_a FROM json_each(?2) j CROSS JOIN record_keys k ON k.account_key = ?1 AND k.guid = concord_compact(j.value)",
                          [.int(a), .text(jsonArray(Self.inKeyOrder(guids)))]) { s in
            if let type = ObjectType(rawValue: Int(s.int(1))) { result[s.text(0), default: []].append(ObjectKey(type: type, a: s.text(2))) }
        }
        return result
    }

    func unlinkedRecords(_ device: DeviceRef, carrying keys: [ObjectKey]) throws -> [(record: CloudRecord, key: ObjectKey)] {
        guard !keys.isEmpty, let k = try self.keys(device) else { return [] }
        var result: [(record: CloudRecord, key: ObjectKey)] = []
        try self.db.query(Self.unlinkedRecordsByKeySQL, [.int(k.account), .int(k.device), .text(Self.typedPairsJSON(keys.map { ($0.type, $0.a) }))]) { s in
            guard let type = ObjectType(rawValue: Int(s.int(1))) else { return }
            result.append((CloudRecord(guid: s.text(0), type: type, fingerprint: s.text(2)), ObjectKey(type: type, a: s.text(3))))
        }
        return result
    }

    func recordsCarryingKeys(of device: DeviceRef, guids: [String]) throws -> Set<String> {
        guard !guids.isEmpty, let k = try self.keys(device) else { return [] }
        var result = Set<String>()
        try self.db.query(Self.recordsCarryingKeysSQL, [.int(k.account), .int(k.device), .text(jsonArray(Self.inKeyOrder(guids)))]) { s in result.insert(s.text(0)) }
        return result
    }

    func addRecordKeys(_ keys: [(guid: String, key: ObjectKey)]) throws {
        self.observers.didChange(.addRecordKeys(keys))
        guard !keys.isEmpty, let a = try self.accountKey(self.accountID) else { return }
        var rows: [SQLValue] = []
        rows.reserveCapacity(keys.count * 3)
        for i in ByteOrder.positions(of: keys.map(\.guid)) {
            let (guid, key) = keys[i]
            rows.append(.compact(guid)); rows.append(.int(Int64(key.type.rawValue))); rows.append(.text(key.a))
        }
        try self.db.runRows("INSERT OR IGNORE INTO record_keys (account_key, guid, type, key_a) SELECT ?1, v.* FROM (",
                            width: 3, tail: ") AS v", fixed: [.int(a)], rows)
    }

    func fillRecordFingerprints(_ fills: [(guid: String, fingerprint: String)]) throws {
        self.observers.didChange(.fillRecordFingerprints(fills))
        guard !fills.isEmpty, let a = try self.accountKey(self.accountID) else { return }
        var rows: [SQLValue] = []
        let firstFills = RowByRow.firstFillPerRecord(fills)
        for i in ByteOrder.positions(of: firstFills.map(\.guid)) {
            rows.append(.compact(firstFills[i].guid)); rows.append(.compact(firstFills[i].fingerprint))
        }
        guard !rows.isEmpty else { return }
        try self.db.runRows("UPDATE records SET fingerprint = v.column2 FROM (", width: 2,
                            tail: ") AS v WHERE records.account_key = ?1 AND records.guid = v.column1 AND records.fingerprint = ''",
                            fixed: [.int(a)], rows)
    }

    func insertRecords(_ records: [CloudRecord], createdAt: Date) throws {
        self.observers.didChange(.insertRecords(records))
        guard !records.isEmpty else { return }
        // Writes are serialised, so reading and bumping the account's counter cannot interleave.
        guard let a = try self.accountKey(self.accountID),
              let first = try self.db.scalarInt("SELECT next_record_order FROM accounts WHERE account_key = ?", [.int(a)]) else {
            throw DomainError.notFound(message: "No such account.")
        }
        var rows: [SQLValue] = []
        rows.reserveCapacity(records.count * 4)
        // Creation orders follow the batch's order; the rows go in GUID order (locality, as `inKeyOrder` says).
        for i in ByteOrder.positions(of: records.map(\.guid)) {
            let r = records[i]
            rows.append(.compact(r.guid)); rows.append(.int(Int64(r.type.rawValue))); rows.append(.compact(r.fingerprint)); rows.append(.int(first + Int64(i)))
        }
        // No creation time: the GUID carries it (migration 15).
        try self.db.runRows("INSERT INTO records (account_key, guid, type, fingerprint, created_order) SELECT ?1, v.* FROM (",
                            width: 4, tail: ") AS v", fixed: [.int(a)], rows)
        try self.db.run("UPDATE accounts SET next_record_order = ? WHERE account_key = ?", [.int(first + Int64(records.count)), .int(a)])
    }

    func setLinks(_ device: DeviceRef, _ links: [(localIdentifier: String, guid: String)]) throws {
        try self.setLinks(device, links, rows: [])
    }

    /// Objects whose row number the caller gives are found by it, in row order: a seek in the
    /// table each, where finding one by its identifier is a seek in objects_by_local_id at a
    /// random place first (a first mapping's batch of 10 000 identifiers goes through most of that
    /// index's pages). Each such row must still hold the object (account, device, identifier); if
    /// fewer rows than given were changed, a number was stale, and all of them are found again by
    /// identifier (setting a link twice to the same record changes nothing more).
    func setLinks(_ device: DeviceRef, _ links: [(localIdentifier: String, guid: String)], rows: [Int64?]) throws {
        self.observers.didChange(.setLinks(device: device.deviceID, links))
        guard !links.isEmpty else { return }
        let k = try self.requireKeys(device)
        let fixed: [SQLValue] = [.int(k.account), .int(k.device)]
        let positions = RowByRow.lastLinkPositions(links) ?? Array(links.indices)
        var byRow: [(row: Int64, at: Int)] = []
        var byIdentifier: [Int] = []
        if rows.count == links.count {
            byRow.reserveCapacity(positions.count)
            for i in positions {
                if let row = rows[i] { byRow.append((row, i)) } else { byIdentifier.append(i) }
            }
        } else {
            byIdentifier = positions
        }
        if !byRow.isEmpty {
            byRow.sort { $0.row < $1.row }
            var values: [SQLValue] = []
            values.reserveCapacity(byRow.count * 3)
            for (row, i) in byRow { values.append(.int(row)); values.append(.compact(links[i].guid)); values.append(.text(links[i].localIdentifier)) }
            let changed = try self.db.runRows("UPDATE objects SET record_guid = v.column2 FROM (", width: 3,
                                              tail: ") AS v WHERE objects.rowid = v.column1 AND objects.account_key = ?1 AND objects.device_key = ?2 AND objects.local_id = v.column3",
                                              fixed: fixed, values)
            if changed == byRow.count { self.linksSetByRow += changed } else { byIdentifier += byRow.map(\.at) }
        }
        guard !byIdentifier.isEmpty else { return }
        // One UPDATE … FROM per chunk, the VALUES list driving lookups by local identifier.
        var values: [SQLValue] = []
        values.reserveCapacity(byIdentifier.count * 2)
        for j in ByteOrder.positions(of: byIdentifier.map { links[$0].localIdentifier }) {
            values.append(.text(links[byIdentifier[j]].localIdentifier)); values.append(.compact(links[byIdentifier[j]].guid))
        }
        try self.db.runRows("UPDATE objects SET record_guid = v.column2 FROM (", width: 2,
                            tail: ") AS v WHERE objects.account_key = ?1 AND objects.device_key = ?2 AND \(Self.localIDIs("objects", "v.column1"))",
                            fixed: fixed, values)
    }

    func dropLinks(_ device: DeviceRef, guids: [String]) throws {
        self.observers.didChange(.dropLinks(device: device.deviceID, guids: guids))
        guard !guids.isEmpty else { return }
        let k = try self.requireKeys(device)
        try self.db.run("""
            UPDATE objects SET record_guid = NULL
            WHERE account_key = ?1 AND device_key = ?2 AND record_guid IN (SELECT concord_compact(value) FROM json_each(?3))
            """, [.int(k.account), .int(k.device), .text(jsonArray(Self.inKeyOrder(guids)))])
    }

    func dropAllLinks(_ device: DeviceRef) throws {
        self.observers.didChange(.dropAllLinks(device: device.deviceID))
        let k = try self.requireKeys(device)
        try self.db.run("UPDATE objects SET record_guid = NULL WHERE account_key = ? AND device_key = ? AND record_guid IS NOT NULL",
                        [.int(k.account), .int(k.device)])
    }
}
