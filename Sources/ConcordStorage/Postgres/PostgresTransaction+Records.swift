import ConcordDomain
import Foundation

/// Cloud records, their keys and links on PostgreSQL (`RecordWrites`).
extension PostgresTransaction: RecordWrites {
    func linkStates(_ device: DeviceRef, localIdentifiers: [String]) throws -> [ObjectLinkState?] {
        var result = [ObjectLinkState?](repeating: nil, count: localIdentifiers.count)
        guard !localIdentifiers.isEmpty else { return result }
        // WITH ORDINALITY numbers the inputs: each row lands at its input position (duplicates included).
        try self.db.query("""
            SELECT u.ord - 1, o.type, o.fingerprint, o.record_guid, r.fingerprint FROM unnest($3::text[]) WITH ORDINALITY AS u(id, ord)
            JOIN objects o ON o.account_id = $1 AND o.device_id = $2 AND o.local_id = u.id
            LEFT JOIN records r ON r.account_id = $1 AND r.guid = o.record_guid
            """, [.text(device.accountID), .text(device.deviceID), .textArray(localIdentifiers)]) { r in
            let i = Int(r.int(0))
            guard i >= 0, i < result.count, let type = ObjectType(rawValue: Int(r.int(1))) else { return }
            result[i] = ObjectLinkState(localIdentifier: localIdentifiers[i], type: type, fingerprint: r.text(2), linkedGUID: r.optionalText(3),
                                        linkedFingerprint: r.optionalText(4))
        }
        return result
    }

    func recordLinks(_ device: DeviceRef, guids: [String]) throws -> [(record: CloudRecord, linkedLocalIdentifier: String?)?] {
        var result = [(record: CloudRecord, linkedLocalIdentifier: String?)?](repeating: nil, count: guids.count)
        guard !guids.isEmpty else { return result }
        try self.db.query("""
            SELECT u.ord - 1, r.guid, r.type, r.fingerprint, o.local_id FROM unnest($3::text[]) WITH ORDINALITY AS u(guid, ord)
            JOIN records r ON r.account_id = $1 AND r.guid = u.guid
            LEFT JOIN objects o ON o.account_id = $1 AND o.device_id = $2 AND o.record_guid = r.guid
            """, [.text(device.accountID), .text(device.deviceID), .textArray(guids)]) { r in
            let i = Int(r.int(0))
            guard i >= 0, i < result.count, let type = ObjectType(rawValue: Int(r.int(2))) else { return }
            result[i] = (CloudRecord(guid: r.text(1), type: type, fingerprint: r.text(3)), r.optionalText(4))
        }
        return result
    }

    func recordCount() throws -> Int {
        // Every record takes the next creation order, from 1, and records go only with the account.
        Int(try self.db.scalarInt("SELECT next_record_order - 1 FROM accounts WHERE account_id = $1", [.text(self.accountID)]) ?? 0)
    }

    func records(guids: [String]) throws -> [CloudRecord] {
        guard !guids.isEmpty else { return [] }
        var result: [CloudRecord] = []
        try self.db.query("SELECT guid, type, fingerprint FROM records WHERE account_id = $1 AND guid = ANY($2) ORDER BY created_order",
                          [.text(self.accountID), .textArray(guids)]) { r in
            if let type = ObjectType(rawValue: Int(r.int(1))) { result.append(CloudRecord(guid: r.text(0), type: type, fingerprint: r.text(2))) }
        }
        return result
    }

    func linkedObjects(_ device: DeviceRef, guids: [String]) throws -> [(guid: String, localIdentifier: String)] {
        guard !guids.isEmpty else { return [] }
        var result: [(guid: String, localIdentifier: String)] = []
        try self.db.query("SELECT record_guid, local_id FROM objects WHERE account_id = $1 AND device_id = $2 AND record_guid = ANY($3)",
                          [.text(device.accountID), .text(device.deviceID), .textArray(guids)]) { r in result.append((r.text(0), r.text(1))) }
        return result
    }

    func unlinkedRecords(_ device: DeviceRef, matching keys: [ContentKey]) throws -> [CloudRecord] {
        guard !keys.isEmpty else { return [] }
        var result: [CloudRecord] = []
        try self.db.query("""
            SELECT r.guid, r.type, r.fingerprint FROM unnest($3::int8[], $4::text[]) AS k(type, fingerprint)
            JOIN records r ON r.account_id = $1 AND r.type = k.type AND r.fingerprint = k.fingerprint
            WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.account_id = $1 AND o.device_id = $2 AND o.record_guid = r.guid)
            ORDER BY r.created_order
            """, [.text(device.accountID), .text(device.deviceID), .intArray(keys.map { Int64($0.type.rawValue) }),
                  .textArray(keys.map(\.fingerprint))]) { r in
            if let type = ObjectType(rawValue: Int(r.int(1))) { result.append(CloudRecord(guid: r.text(0), type: type, fingerprint: r.text(2))) }
        }
        return result
    }

    func keyMatches(_ device: DeviceRef, guids: [String]) throws -> [String: [StoredObject]] {
        guard !guids.isEmpty else { return [:] }
        var result: [String: [StoredObject]] = [:]
        try self.db.query("""
            SELECT DISTINCT k.guid, \(Self.objectColumns) FROM record_keys k
            JOIN objects o ON o.account_id = $1 AND o.device_id = $2 AND o.type = k.type AND o.key_a = k.key_a
            \(Self.linkJoin)
            WHERE k.account_id = $1 AND k.guid = ANY($3)
            ORDER BY k.guid, o.local_id
            """, [.text(device.accountID), .text(device.deviceID), .textArray(guids)]) { r in
            result[r.text(0), default: []].append(StorageRows.storedObject(ShiftedRow(row: r, by: 1)))
        }
        return result
    }

    func recordKeys(guids: [String]) throws -> [String: [ObjectKey]] {
        guard !guids.isEmpty else { return [:] }
        var result: [String: [ObjectKey]] = [:]
        try self.db.query("SELECT guid, type, key_a FROM record_keys WHERE account_id = $1 AND guid = ANY($2)",
                          [.text(self.accountID), .textArray(guids)]) { r in
            if let type = ObjectType(rawValue: Int(r.int(1))) { result[r.text(0), default: []].append(ObjectKey(type: type, a: r.text(2))) }
        }
        return result
    }

    func unlinkedRecords(_ device: DeviceRef, carrying keys: [ObjectKey]) throws -> [(record: CloudRecord, key: ObjectKey)] {
        guard !keys.isEmpty else { return [] }
        let columns = ObjectKey.columns(keys)
        var result: [(record: CloudRecord, key: ObjectKey)] = []
        try self.db.query("""
            SELECT r.guid, r.type, r.fingerprint, k.key_a FROM unnest($3::int8[], $4::text[]) AS q(type, key_a)
            JOIN record_keys k ON k.account_id = $1 AND k.type = q.type AND k.key_a = q.key_a
            JOIN records r ON r.account_id = $1 AND r.guid = k.guid
            WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.account_id = $1 AND o.device_id = $2 AND o.record_guid = r.guid)
            ORDER BY r.created_order
            """, [.text(device.accountID), .text(device.deviceID), .intArray(columns.types), .textArray(columns.a)]) { r in
            guard let type = ObjectType(rawValue: Int(r.int(1))) else { return }
            result.append((CloudRecord(guid: r.text(0), type: type, fingerprint: r.text(2)), ObjectKey(type: type, a: r.text(3))))
        }
        return result
    }

    func recordsCarryingKeys(of device: DeviceRef, guids: [String]) throws -> Set<String> {
        guard !guids.isEmpty else { return [] }
        var result = Set<String>()
        try self.db.query("""
            SELECT DISTINCT k.guid FROM record_keys k
            WHERE k.account_id = $1 AND k.guid = ANY($3)
              AND EXISTS (SELECT 1 FROM objects o WHERE o.account_id = $1 AND o.device_id = $2 AND o.type = k.type AND o.key_a = k.key_a)
            """, [.text(device.accountID), .text(device.deviceID), .textArray(guids)]) { r in result.insert(r.text(0)) }
        return result
    }

    func addRecordKeys(_ keys: [(guid: String, key: ObjectKey)]) throws {
        self.observers.didChange(.addRecordKeys(keys))
        guard !keys.isEmpty else { return }
        let columns = ObjectKey.columns(keys.map(\.key))
        try self.db.query("""
            INSERT INTO record_keys (account_id, guid, type, key_a)
            SELECT $1, u.guid, u.type, u.key_a FROM unnest($2::text[], $3::int8[], $4::text[]) AS u(guid, type, key_a)
            ON CONFLICT DO NOTHING
            """, [.text(self.accountID), .textArray(keys.map(\.guid)), .intArray(columns.types), .textArray(columns.a)])
    }

    func fillRecordFingerprints(_ fills: [(guid: String, fingerprint: String)]) throws {
        self.observers.didChange(.fillRecordFingerprints(fills))
        let first = RowByRow.firstFillPerRecord(fills)
        guard !first.isEmpty else { return }
        try self.db.query("""
            UPDATE records r SET fingerprint = u.fingerprint FROM unnest($2::text[], $3::text[]) AS u(guid, fingerprint)
            WHERE r.account_id = $1 AND r.guid = u.guid AND r.fingerprint = ''
            """, [.text(self.accountID), .textArray(first.map(\.guid)), .textArray(first.map(\.fingerprint))])
    }

    func insertRecords(_ records: [CloudRecord], createdAt: Date) throws {
        self.observers.didChange(.insertRecords(records))
        guard !records.isEmpty else { return }
        self.recordRowsWritten += records.count
        // Reserve a block of creation orders on the account row and insert the batch: one statement.
        let n = try self.db.query("""
            WITH a AS (
                UPDATE accounts SET next_record_order = next_record_order + $5 WHERE account_id = $1
                RETURNING next_record_order - $5 AS first
            )
            INSERT INTO records (account_id, guid, type, fingerprint, created_order, created_at)
            SELECT $1, u.guid, u.type, u.fingerprint, a.first + u.ord - 1, $6
            FROM a, unnest($2::text[], $3::int8[], $4::text[]) WITH ORDINALITY AS u(guid, type, fingerprint, ord)
            """, [.text(self.accountID), .textArray(records.map(\.guid)), .intArray(records.map { Int64($0.type.rawValue) }),
                  .textArray(records.map(\.fingerprint)), .int(Int64(records.count)), .double(createdAt.timeIntervalSince1970)])
        guard n == records.count else { throw DomainError.notFound(message: "No such account.") }
    }

    func setLinks(_ device: DeviceRef, _ links: [(localIdentifier: String, guid: String)]) throws {
        self.observers.didChange(.setLinks(device: device.deviceID, links))
        guard !links.isEmpty else { return }
        self.objectRowsWritten += links.count
        // UPDATE … FROM applies one arbitrary row of several for the same object: only the last is given.
        let links = RowByRow.lastLinkPerObject(links)
        try self.db.query("""
            UPDATE objects o SET record_guid = l.guid
            FROM unnest($3::text[], $4::text[]) AS l(local_id, guid)
            WHERE o.account_id = $1 AND o.device_id = $2 AND o.local_id = l.local_id
            """, [.text(device.accountID), .text(device.deviceID), .textArray(links.map(\.localIdentifier)), .textArray(links.map(\.guid))])
    }

    func dropLinks(_ device: DeviceRef, guids: [String]) throws {
        self.observers.didChange(.dropLinks(device: device.deviceID, guids: guids))
        guard !guids.isEmpty else { return }
        try self.db.query("UPDATE objects SET record_guid = NULL WHERE account_id = $1 AND device_id = $2 AND record_guid = ANY($3)",
                          [.text(device.accountID), .text(device.deviceID), .textArray(guids)])
    }

    func dropAllLinks(_ device: DeviceRef) throws {
        self.observers.didChange(.dropAllLinks(device: device.deviceID))
        try self.db.query("UPDATE objects SET record_guid = NULL WHERE account_id = $1 AND device_id = $2 AND record_guid IS NOT NULL",
                          [.text(device.accountID), .text(device.deviceID)])
    }
}
