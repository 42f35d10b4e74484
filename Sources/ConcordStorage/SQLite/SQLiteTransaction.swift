import ConcordDomain
import Foundation

/// The store's operations on one connection inside one transaction. Lists of identifiers are
/// bound as one JSON array and expanded with `json_each`, so a batch is one statement.
/// Account and device UUIDs are turned into their integer storage keys once per transaction.
final class SQLiteTransaction: AccountWriteTransaction, ServerWriteTransaction {
    let db: Connection
    /// The account this transaction is scoped to ("" for a server-wide one).
    let accountID: String
    private var accountKeys: [String: Int64] = [:]
    private var deviceKeys: [DeviceRef: Int64] = [:]
    /// Told of each mapping change and feed append (`TransactionObservers`).
    let observers = TransactionObservers()

    init(_ db: Connection, accountID: String) {
        self.db = db
        self.accountID = accountID
    }

    func add(observer: any TransactionObserver) { self.observers.add(observer) }

    // MARK: - Batch queries (json_each drives the join: CROSS JOIN fixes it as the outer loop, so
    // each identifier is one index lookup instead of a scan of the library). Without ANALYZE
    // statistics the planner prefers the primary key's (account, device) prefix over the content
    // index when all columns are read, hence INDEXED BY (checked by QueryPlanTests).

    static let objectsByLocalIDsSQL = """
        SELECT \(SQLiteTransaction.objectColumns) FROM json_each(?3) j
        CROSS JOIN objects o ON o.account_key = ?1 AND o.device_key = ?2 AND o.local_id = j.value
        \(SQLiteTransaction.linkJoin)
        """

    static let linkStatesSQL = """
        SELECT j.key, o.type, o.fingerprint, o.record_guid, r.fingerprint FROM json_each(?3) j
        CROSS JOIN objects o ON o.account_key = ?1 AND o.device_key = ?2 AND o.local_id = j.value
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

    /// §5's wanted candidates: records with a fingerprint, linked on another device, not on this
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

    static let recordLinksSQL = """
        SELECT j.key, r.guid, r.type, r.fingerprint, o.local_id FROM json_each(?3) j
        CROSS JOIN records r ON r.account_key = ?1 AND r.guid = concord_compact(j.value)
        LEFT JOIN objects o INDEXED BY objects_by_link ON o.account_key = ?1 AND o.device_key = ?2 AND o.record_guid = r.guid
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

    // MARK: - Keys

    /// The account's storage key, nil if there is no such account.
    func accountKey(_ accountID: String) throws -> Int64? {
        if let k = self.accountKeys[accountID] { return k }
        guard let k = try self.db.scalarInt("SELECT account_key FROM accounts WHERE account_id = ?", [.text(accountID)]) else { return nil }
        self.accountKeys[accountID] = k
        return k
    }

    /// The device's (account, device) storage keys, nil if there is no such device in that account.
    func keys(_ device: DeviceRef) throws -> (account: Int64, device: Int64)? {
        guard let a = try self.accountKey(device.accountID) else { return nil }
        if let d = self.deviceKeys[device] { return (a, d) }
        guard let d = try self.db.scalarInt("SELECT device_key FROM devices WHERE account_key = ? AND device_id = ?",
                                            [.int(a), .text(device.deviceID)]) else { return nil }
        self.deviceKeys[device] = d
        return (a, d)
    }

    /// Keys for a write: a missing device is `notFound` (deleted while the request ran).
    private func requireKeys(_ device: DeviceRef) throws -> (account: Int64, device: Int64) {
        guard let k = try self.keys(device) else { throw DomainError.notFound(message: "No such device.") }
        return k
    }

    // MARK: - Settings, tokens, accounts, devices

    func setting(_ key: String) throws -> [UInt8]? {
        var value: [UInt8]?
        try self.db.query("SELECT value FROM settings WHERE key = ?", [.text(key)]) { s in value = s.blob(0) }
        return value
    }

    func setSetting(_ key: String, _ value: [UInt8]) throws {
        try self.db.run("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        [.text(key), .blob(value)])
    }

    func tokenOwner(tokenHash: [UInt8]) throws -> TokenOwner? {
        var result: TokenOwner?
        try self.db.query("""
            SELECT t.kind, a.account_id, d.device_id, t.last_used_at FROM tokens t
            JOIN accounts a ON a.account_key = t.account_key
            LEFT JOIN devices d ON d.account_key = t.account_key AND d.device_key = t.device_key
            WHERE t.token_hash = ?
            """, [.blob(tokenHash)]) { s in
            guard let principal = StorageRows.principal(s, kind: 0, accountID: 1, deviceID: 2) else { return }
            result = TokenOwner(principal: principal, lastUsedAt: s.isNull(3) ? nil : s.double(3))
        }
        return result
    }

    func touchToken(tokenHash: [UInt8], at time: Double) throws {
        try self.db.run("UPDATE tokens SET last_used_at = ? WHERE token_hash = ?", [.double(time), .blob(tokenHash)])
    }

    // MARK: - Idempotency keys

    func idempotencyRecord(owner: [UInt8], key: String) throws -> IdempotencyRecord? {
        var record: IdempotencyRecord?
        try self.db.query("SELECT fingerprint, answer, applied, instance, created_at FROM idempotency_keys WHERE owner_hash = ? AND key = ?",
                          [.blob(owner), .text(key)]) { s in
            record = IdempotencyRecord(fingerprint: s.blob(0), answer: s.isNull(1) ? nil : s.blob(1), applied: s.int(2) != 0,
                                       instance: s.text(3), createdAt: s.double(4))
        }
        return record
    }

    func putIdempotencyRecord(owner: [UInt8], key: String, accountID: String?, _ record: IdempotencyRecord) throws {
        let account: SQLValue = try accountID.flatMap { try self.accountKey($0) }.map { .int($0) } ?? .null
        try self.db.run("""
            INSERT OR REPLACE INTO idempotency_keys (owner_hash, key, account_key, fingerprint, answer, applied, instance, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, [.blob(owner), .text(key), account, .blob(record.fingerprint), record.answer.map { .blob($0) } ?? .null,
                  .int(record.applied ? 1 : 0), .text(record.instance), .double(record.createdAt)])
    }

    func setIdempotencyAnswer(owner: [UInt8], key: String, answer: [UInt8]) throws {
        try self.db.run("UPDATE idempotency_keys SET answer = ? WHERE owner_hash = ? AND key = ?", [.blob(answer), .blob(owner), .text(key)])
    }

    func markIdempotencyApplied(owner: [UInt8], key: String) throws {
        try self.db.run("UPDATE idempotency_keys SET applied = 1 WHERE owner_hash = ? AND key = ?", [.blob(owner), .text(key)])
    }

    func deleteIdempotencyRecord(owner: [UInt8], key: String) throws {
        try self.db.run("DELETE FROM idempotency_keys WHERE owner_hash = ? AND key = ? AND applied = 0", [.blob(owner), .text(key)])
    }

    func deleteIdempotencyRecords(createdBefore time: Double) throws {
        try self.db.run("DELETE FROM idempotency_keys WHERE created_at < ?", [.double(time)])
    }

    func deviceTokenTimes() throws -> [String: TokenTimes] {
        guard let a = try self.accountKey(self.accountID) else { return [:] }
        var result: [String: TokenTimes] = [:]
        try self.db.query("""
            SELECT d.device_id, t.created_at, t.last_used_at FROM tokens t
            JOIN devices d ON d.account_key = t.account_key AND d.device_key = t.device_key
            WHERE t.account_key = ? AND t.kind = 2
            """, [.int(a)]) { s in
            result[s.text(0)] = TokenTimes(createdAt: s.isNull(1) ? nil : s.double(1), lastUsedAt: s.isNull(2) ? nil : s.double(2))
        }
        return result
    }

    func replaceAccountToken(tokenHash: [UInt8], createdAt: Date) throws -> Bool {
        guard let a = try self.accountKey(self.accountID) else { return false }
        try self.db.run("DELETE FROM tokens WHERE account_key = ? AND kind = ?", [.int(a), .int(TokenKind.account.rawValue)])
        try self.db.run("INSERT INTO tokens (token_hash, kind, account_key, device_key, created_at) VALUES (?, ?, ?, NULL, ?)",
                        [.blob(tokenHash), .int(TokenKind.account.rawValue), .int(a), .double(createdAt.timeIntervalSince1970)])
        return true
    }

    func replaceDeviceToken(_ device: DeviceRef, tokenHash: [UInt8], createdAt: Date) throws -> Bool {
        guard let k = try self.keys(device) else { return false }
        try self.db.run("DELETE FROM tokens WHERE account_key = ? AND device_key = ?", [.int(k.account), .int(k.device)])
        try self.db.run("INSERT INTO tokens (token_hash, kind, account_key, device_key, created_at) VALUES (?, ?, ?, ?, ?)",
                        [.blob(tokenHash), .int(TokenKind.device.rawValue), .int(k.account), .int(k.device), .double(createdAt.timeIntervalSince1970)])
        self.observers.tokenRevoked(device)
        return true
    }

    func deleteAccount() throws -> Bool {
        guard let a = try self.accountKey(self.accountID) else { return false }
        try self.db.query("SELECT device_id FROM devices WHERE account_key = ?", [.int(a)]) { s in
            self.observers.tokenRevoked(DeviceRef(accountID: self.accountID, deviceID: s.text(0)))
        }
        for table in Self.accountTables {
            try self.db.run("DELETE FROM \(table) WHERE account_key = ?", [.int(a)])
        }
        self.accountKeys[self.accountID] = nil
        self.deviceKeys = self.deviceKeys.filter { $0.key.accountID != self.accountID }
        return true
    }

    /// Every table holding an account's rows, `accounts` last.
    static let accountTables = ["upload_objects", "upload_parts", "uploads", "idempotency_keys", "journal_changes", "journal_feeds", "journal_entries", "journals", "changes", "objects",
                                "record_keys", "records",
                                "tokens", "devices", "accounts"]

    func accountExists() throws -> Bool {
        try self.accountKey(self.accountID) != nil
    }

    func insertAccount(accountID: String, name: String, tokenHash: [UInt8], createdAt: Date) throws {
        try self.db.run("INSERT INTO accounts (account_id, name, created_at) VALUES (?, ?, ?)",
                        [.text(accountID), .text(name), .double(createdAt.timeIntervalSince1970)])
        let key = sqlite3LastInsertRowID(self.db)
        self.accountKeys[accountID] = key
        try self.db.run("INSERT INTO tokens (token_hash, kind, account_key, device_key, created_at) VALUES (?, ?, ?, NULL, ?)",
                        [.blob(tokenHash), .int(TokenKind.account.rawValue), .int(key), .double(createdAt.timeIntervalSince1970)])
    }

    private static let deviceColumns = StorageRows.deviceColumns.replacingOccurrences(of: "%AUTH%", with: "authorization")

    func device(_ device: DeviceRef) throws -> DeviceState? {
        guard let a = try self.accountKey(device.accountID) else { return nil }
        var result: DeviceState?
        try self.db.query("SELECT \(Self.deviceColumns), device_key FROM devices WHERE account_key = ? AND device_id = ?",
                          [.int(a), .text(device.deviceID)]) { s in
            result = StorageRows.deviceState(s, accountID: device.accountID)
            self.deviceKeys[device] = s.int(10)
        }
        return result
    }

    func devices() throws -> [DeviceState] {
        guard let a = try self.accountKey(self.accountID) else { return [] }
        var result: [DeviceState] = []
        try self.db.query("SELECT \(Self.deviceColumns) FROM devices WHERE account_key = ? ORDER BY created_at, device_id",
                          [.int(a)]) { s in result.append(StorageRows.deviceState(s, accountID: self.accountID)) }
        return result
    }

    func insertDevice(_ device: DeviceRef, name: String, platform: String?, tokenHash: [UInt8], createdAt: Date) throws {
        guard let a = try self.accountKey(device.accountID),
              let d = try self.db.scalarInt("SELECT next_device_key FROM accounts WHERE account_key = ?", [.int(a)]) else {
            throw DomainError.notFound(message: "No such account.")
        }
        try self.db.run("UPDATE accounts SET next_device_key = ? WHERE account_key = ?", [.int(d + 1), .int(a)])
        try self.db.run("INSERT INTO devices (account_key, device_key, device_id, name, platform, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                        [.int(a), .int(d), .text(device.deviceID), .text(name), platform.map { .text($0) } ?? .null,
                         .double(createdAt.timeIntervalSince1970)])
        try self.db.run("INSERT INTO tokens (token_hash, kind, account_key, device_key, created_at) VALUES (?, ?, ?, ?, ?)",
                        [.blob(tokenHash), .int(TokenKind.device.rawValue), .int(a), .int(d), .double(createdAt.timeIntervalSince1970)])
        self.deviceKeys[device] = d
        self.observers.didChange(.insertDevice(device.deviceID))
    }

    // MARK: - The mapping index's reads

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

    func streamMappingTables(devices: (String) throws -> Void, records: (CloudRecord, Int64) throws -> Void,
                             recordKeys: (String, ObjectKey) throws -> Void,
                             objects: (MappingObjectRow) throws -> Void) throws {
        guard let a = try self.accountKey(self.accountID) else { return }
        var deviceIDs: [Int64: String] = [:]
        try self.db.query("SELECT device_key, device_id FROM devices WHERE account_key = ?", [.int(a)]) { s in
            deviceIDs[s.int(0)] = s.text(1)
        }
        for id in deviceIDs.values.sorted() { try devices(id) }
        try self.db.query("SELECT guid, type, fingerprint, created_order FROM records WHERE account_key = ? ORDER BY created_order", [.int(a)]) { s in
            guard let type = ObjectType(rawValue: Int(s.int(1))) else { return }
            try records(CloudRecord(guid: s.text(0), type: type, fingerprint: s.text(2)), s.int(3))
        }

        try self.db.query("SELECT guid, type, key_a FROM record_keys WHERE account_key = ?", [.int(a)]) { s in
            guard let type = ObjectType(rawValue: Int(s.int(1))) else { return }
            try recordKeys(s.text(0), ObjectKey(type: type, a: s.text(2)))
        }
        try self.db.query("SELECT device_key, local_id, type, fingerprint, record_guid, key_a, coalesce(creation_second, creation_date) FROM objects WHERE account_key = ?",
                          [.int(a)]) { s in
            guard let device = deviceIDs[s.int(0)], let type = ObjectType(rawValue: Int(s.int(2))) else { return }
            try objects(MappingObjectRow(deviceID: device, localIdentifier: s.text(1), type: type, fingerprint: s.text(3), linkedGUID: s.optionalText(4),
                                         keyA: s.optionalText(5), creationSecond: s.creationSecond(6)))
        }
    }

    func deleteDevice(_ device: DeviceRef) throws -> Bool {
        guard let k = try self.keys(device) else { return false }
        let key: [SQLValue] = [.int(k.account), .int(k.device)]
        try self.db.run("DELETE FROM devices WHERE account_key = ? AND device_key = ?", key)
        try self.db.run("DELETE FROM objects WHERE account_key = ? AND device_key = ?", key)
        try self.db.run("DELETE FROM changes WHERE account_key = ? AND device_key = ?", key)
        try self.db.run("DELETE FROM tokens WHERE account_key = ? AND device_key = ?", key)
        try self.deleteUploads(deviceKey: k.device, accountKey: k.account)
        try self.db.run("UPDATE devices SET replaces = NULL WHERE account_key = ? AND replaces = ?", [.int(k.account), .text(device.deviceID)])
        try self.db.run("UPDATE devices SET replaced_by = NULL WHERE account_key = ? AND replaced_by = ?", [.int(k.account), .text(device.deviceID)])
        self.deviceKeys[device] = nil
        self.observers.didChange(.deleteDevice(device.deviceID))
        self.observers.tokenRevoked(device)
        return true
    }

    func setSuccessor(_ successor: DeviceRef, of predecessor: DeviceRef) throws {
        let s = try self.requireKeys(successor), p = try self.requireKeys(predecessor)
        try self.db.run("UPDATE devices SET replaces = ? WHERE account_key = ? AND device_key = ?",
                        [.text(predecessor.deviceID), .int(s.account), .int(s.device)])
        try self.db.run("UPDATE devices SET replaced_by = ? WHERE account_key = ? AND device_key = ?",
                        [.text(successor.deviceID), .int(p.account), .int(p.device)])
        try self.db.run("DELETE FROM tokens WHERE account_key = ? AND device_key = ?", [.int(p.account), .int(p.device)])
        self.observers.tokenRevoked(predecessor)
    }

    func setAuthorization(_ device: DeviceRef, _ status: AuthorizationStatus) throws {
        let k = try self.requireKeys(device)
        let code = StorageRows.authorizationCode(status)
        try self.db.run("UPDATE devices SET authorization = ? WHERE account_key = ? AND device_key = ?",
                        [.int(code), .int(k.account), .int(k.device)])
    }

    func updateDeviceCounters(_ device: DeviceRef, lastChangeSeq: Int64, objectCount: Int) throws {
        let k = try self.requireKeys(device)
        try self.db.run("UPDATE devices SET last_change_seq = ?, object_count = ? WHERE account_key = ? AND device_key = ?",
                        [.int(lastChangeSeq), .int(Int64(objectCount)), .int(k.account), .int(k.device)])
    }

    // MARK: - Objects

    /// Columns of an object row followed by its linked record's type and fingerprint (LEFT JOIN).
    static let objectColumns = StorageRows.objectColumns
    static let linkJoin = "LEFT JOIN records r ON r.account_key = o.account_key AND r.guid = o.record_guid"

    func objects(_ device: DeviceRef, localIdentifiers: [String]) throws -> [StoredObject] {
        guard !localIdentifiers.isEmpty, let k = try self.keys(device) else { return [] }
        var result: [StoredObject] = []
        result.reserveCapacity(localIdentifiers.count)
        try self.db.query(Self.objectsByLocalIDsSQL, [.int(k.account), .int(k.device), .text(jsonArray(Self.inKeyOrder(localIdentifiers)))]) { s in
            result.append(StorageRows.storedObject(s))
        }
        return result
    }

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

    func allObjects(_ device: DeviceRef) throws -> [StoredObject] {
        guard let k = try self.keys(device) else { return [] }
        var result: [StoredObject] = []
        try self.db.query("""
            SELECT \(Self.objectColumns) FROM objects o \(Self.linkJoin)
            WHERE o.account_key = ?1 AND o.device_key = ?2
            """, [.int(k.account), .int(k.device)]) { s in result.append(StorageRows.storedObject(s)) }
        return result
    }

    /// Assets (most of a library) page through the primary key, in local identifier order already,
    /// skipping the few albums and folders; those have an index of their own (migration 9).
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

    /// `[[type, text], ...]` as JSON: (type, fingerprint) content keys, (type, A) object keys.
    /// `sorted`: in (type, text) order, for queries whose answer does not depend on the input's order.
    private static func typedPairsJSON(_ pairs: [(type: ObjectType, text: String)], sorted: Bool = false) -> String {
        let pairs = sorted ? pairs.sorted { ($0.type.rawValue, $0.text) < ($1.type.rawValue, $1.text) } : pairs
        var out = "["
        for (i, p) in pairs.enumerated() {
            if i > 0 { out += "," }
            out += "[\(p.type.rawValue)," + jsonArray([p.text]).dropFirst().dropLast() + "]"
        }
        return out + "]"
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
            if !withFingerprint.isEmpty { result.sort { $0.object.localIdentifier.utf8.lexicographicallyPrecedes($1.object.localIdentifier.utf8) } }
        }
        return result
    }

    func putObjects(_ device: DeviceRef, _ objects: [StoredObject]) throws {
        self.observers.didChange(.putting(objects, on: device))
        guard !objects.isEmpty else { return }
        let k = try self.requireKeys(device)
        // Multi-row statements (`runRows`): a later duplicate of an identifier updates the row the
        // earlier one inserted, as row by row. In byte order of the identifiers, so the primary key's
        // leaf pages are visited once each, in order, however large the library.
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

    /// Keys in (about) the order of the B-trees they are looked up in, for lookups whose answer does
    /// not depend on the input's order: a batch then visits each page once, in order, instead of
    /// jumping about a library larger than the page cache. `<` is byte order for ASCII (what
    /// identifiers mostly are); anything else only costs locality, never an answer.
    static func inKeyOrder(_ keys: [String]) -> [String] { keys.sorted(by: <) }

    /// `objects` stably sorted by local identifier bytes (duplicates keep their order).
    private static func inByteOrder(_ objects: [StoredObject]) -> [StoredObject] {
        let keys = objects.map { Array($0.object.localIdentifier.utf8) }
        let order = keys.indices.sorted { a, b in
            keys[a].lexicographicallyPrecedes(keys[b]) || (keys[a] == keys[b] && a < b)
        }
        return order.map { objects[$0] }
    }

    func deleteObjects(_ device: DeviceRef, localIdentifiers: [String]) throws {
        self.observers.didChange(.deleteObjects(device: device.deviceID, localIdentifiers: localIdentifiers))
        guard !localIdentifiers.isEmpty else { return }
        let k = try self.requireKeys(device)
        try self.db.run("DELETE FROM objects WHERE account_key = ?1 AND device_key = ?2 AND local_id IN (SELECT value FROM json_each(?3))",
                        [.int(k.account), .int(k.device), .text(jsonArray(Self.inKeyOrder(localIdentifiers)))])
    }

    // MARK: - Records and links

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
        for (guid, key) in keys.sorted(by: { $0.guid < $1.guid }) { rows.append(.compact(guid)); rows.append(.int(Int64(key.type.rawValue))); rows.append(.text(key.a)) }
        try self.db.runRows("INSERT OR IGNORE INTO record_keys (account_key, guid, type, key_a) SELECT ?1, v.* FROM (",
                            width: 3, tail: ") AS v", fixed: [.int(a)], rows)
    }

    func fillRecordFingerprints(_ fills: [(guid: String, fingerprint: String)]) throws {
        self.observers.didChange(.fillRecordFingerprints(fills))
        guard !fills.isEmpty, let a = try self.accountKey(self.accountID) else { return }
        // The first fill of a record wins, as row by row would (the later ones find it filled).
        var seen = Set<String>()
        var rows: [SQLValue] = []
        var first: [(guid: String, fingerprint: String)] = []
        for (guid, fingerprint) in fills where !fingerprint.isEmpty && seen.insert(guid).inserted { first.append((guid, fingerprint)) }
        for (guid, fingerprint) in first.sorted(by: { $0.guid < $1.guid }) { rows.append(.compact(guid)); rows.append(.compact(fingerprint)) }
        guard !rows.isEmpty else { return }
        try self.db.runRows("UPDATE records SET fingerprint = v.column2 FROM (", width: 2,
                            tail: ") AS v WHERE records.account_key = ?1 AND records.guid = v.column1 AND records.fingerprint = ''",
                            fixed: [.int(a)], rows)
    }

    func wantedPage(_ device: DeviceRef, after: String?, limit: Int) throws -> WantedPage {
        guard let k = try self.keys(device) else { return WantedPage(objects: [], next: nil, total: 0) }
        var rows = WantedRows()
        try self.db.query(Self.wantedCandidatesSQL, [.int(k.account), .int(k.device)]) { rows.addCandidate($0) }
        guard rows.candidatesFound() else { return WantedPage(objects: [], next: nil, total: 0) }
        try self.db.query("""
            SELECT local_id, type, coalesce(creation_second, creation_date) FROM objects
            WHERE account_key = ? AND device_key = ? AND fingerprint = '' AND record_guid IS NULL
            """, [.int(k.account), .int(k.device)]) { rows.addObject($0) }
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
        // Creation orders follow the batch's order; the rows go in GUID order (locality, as above).
        for (i, r) in records.enumerated().sorted(by: { $0.element.guid < $1.element.guid }) {
            rows.append(.compact(r.guid)); rows.append(.int(Int64(r.type.rawValue))); rows.append(.compact(r.fingerprint)); rows.append(.int(first + Int64(i)))
        }
        // No creation time: the GUID carries it (migration 15).
        try self.db.runRows("INSERT INTO records (account_key, guid, type, fingerprint, created_order) SELECT ?1, v.* FROM (",
                            width: 4, tail: ") AS v", fixed: [.int(a)], rows)
        try self.db.run("UPDATE accounts SET next_record_order = ? WHERE account_key = ?", [.int(first + Int64(records.count)), .int(a)])
    }

    func setLinks(_ device: DeviceRef, _ links: [(localIdentifier: String, guid: String)]) throws {
        self.observers.didChange(.setLinks(device: device.deviceID, links))
        guard !links.isEmpty else { return }
        let k = try self.requireKeys(device)
        // One UPDATE … FROM per chunk, the VALUES list driving primary-key lookups. An identifier
        // given twice takes its last link, as row by row would.
        var last: [[UInt8]: Int] = [:]
        for (i, l) in links.enumerated() { last[Array(l.localIdentifier.utf8)] = i }
        var rows: [SQLValue] = []
        rows.reserveCapacity(links.count * 2)
        for (i, l) in links.enumerated().sorted(by: { $0.element.localIdentifier < $1.element.localIdentifier })
        where last[Array(l.localIdentifier.utf8)] == i {
            rows.append(.text(l.localIdentifier)); rows.append(.compact(l.guid))
        }
        try self.db.runRows("UPDATE objects SET record_guid = v.column2 FROM (", width: 2,
                            tail: ") AS v WHERE objects.account_key = ?1 AND objects.device_key = ?2 AND objects.local_id = v.column1",
                            fixed: [.int(k.account), .int(k.device)], rows)
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

    // MARK: - History

    func appendChange(_ device: DeviceRef, seq: Int64, createdAt: Double, details: ChangeDetails?) throws {
        let k = try self.requireKeys(device)
        self.observers.didAppend(to: .library(device))
        try self.db.run("INSERT INTO changes (account_key, device_key, seq, created_at, details, details_bytes) VALUES (?, ?, ?, ?, ?, ?)",
                        [.int(k.account), .int(k.device), .int(seq), .double(createdAt),
                         details.map { .blob(ChangeDetailsBinary.encode($0)) } ?? .null,
                         details.map { .int(Int64(ChangeDetailsCodec.encodedByteCount($0))) } ?? .null])
    }

    func changes(_ device: DeviceRef, after seq: Int64, limit: Int) throws -> [StoredChange] {
        guard let k = try self.keys(device) else { return [] }
        var result: [StoredChange] = []
        try self.db.query("""
            SELECT seq, created_at, details FROM changes
            WHERE account_key = ? AND device_key = ? AND seq > ? ORDER BY seq LIMIT ?
            """, [.int(k.account), .int(k.device), .int(seq), .int(Int64(limit))]) { s in
            result.append(StoredChange(seq: s.int(0), createdAt: s.double(1), details: try Self.changeDetails(s, 2)))
        }
        return result
    }

    /// A history entry's details: nil (unavailable), binary (since migration 13) or text (before).
    private static func changeDetails(_ s: Statement, _ column: Int32) throws -> ChangeDetails? {
        if s.isNull(column) { return nil }
        guard s.isBlob(column) else { return ChangeDetailsCodec.decode(s.text(column)) }
        guard let details = s.withBlob(column, ChangeDetailsBinary.decode) else {
            throw SQLiteStoreError(message: "a history entry's details are damaged")
        }
        return details
    }

    func latestChangeSeq(_ device: DeviceRef, createdAtOrBefore time: Double) throws -> Int64? {
        guard let k = try self.keys(device) else { return nil }
        return try self.db.scalarInt("SELECT max(seq) FROM changes WHERE account_key = ? AND device_key = ? AND created_at <= ?",
                                     [.int(k.account), .int(k.device), .double(time)])
    }

    func pruneChanges(_ device: DeviceRef, throughSeq: Int64) throws {
        let k = try self.requireKeys(device)
        try self.db.run("DELETE FROM changes WHERE account_key = ? AND device_key = ? AND seq <= ?",
                        [.int(k.account), .int(k.device), .int(throughSeq)])
        try self.db.run("UPDATE devices SET pruned_through_seq = max(pruned_through_seq, ?) WHERE account_key = ? AND device_key = ?",
                        [.int(throughSeq), .int(k.account), .int(k.device)])
    }
}
