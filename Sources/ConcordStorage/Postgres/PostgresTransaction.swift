import ConcordDomain
import Foundation

/// The store's operations on one PostgreSQL connection inside one transaction. Every list is bound
/// as one array parameter (`= ANY($n)`, `unnest(...)`), so a batch is one statement and one round trip.
/// Serialising writers is `PostgresStore`'s job: it takes the account's (or the settings') advisory
/// lock once, before the body runs, so no method here needs to remember it.
final class PostgresTransaction: AccountWriteTransaction, ServerWriteTransaction {
    let db: PGConnection
    /// The account this transaction is scoped to ("" for a server-wide one).
    let accountID: String
    /// Told of each mapping change and feed append (`TransactionObservers`).
    let observers = TransactionObservers()
    /// Rows of `objects` and `records` this transaction wrote (`TableStatistics`).
    private(set) var objectRowsWritten = 0, recordRowsWritten = 0

    init(_ db: PGConnection, accountID: String) {
        self.db = db
        self.accountID = accountID
    }

    func add(observer: any TransactionObserver) { self.observers.add(observer) }

    /// Key space of the advisory locks: (class, hash) pairs, so account and settings locks never collide.
    private static let accountLockClass: Int64 = 1, settingsLockClass: Int64 = 2

    /// Serialises this write transaction with every other writer of its account, on this instance or
    /// another (held until commit); each statement after it sees what earlier writers committed.
    func lockAccount() throws {
        try self.db.query("SELECT pg_advisory_xact_lock($1::int4, hashtext($2))", [.int(Self.accountLockClass), .text(self.accountID)])
    }

    /// Serialises server-wide writes (settings, new accounts) with each other.
    func lockSettings() throws {
        try self.db.query("SELECT pg_advisory_xact_lock($1::int4, 0)", [.int(Self.settingsLockClass)])
    }

    // MARK: - Settings, tokens, accounts, devices

    func setting(_ key: String) throws -> [UInt8]? {
        var value: [UInt8]?
        try self.db.query("SELECT value FROM settings WHERE key = $1", [.text(key)]) { r in value = r.blob(0) }
        return value
    }

    func setSetting(_ key: String, _ value: [UInt8]) throws {
        try self.db.query("INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                          [.text(key), .bytes(value)])
    }

    func tokenOwner(tokenHash: [UInt8]) throws -> TokenOwner? {
        var result: TokenOwner?
        try self.db.query("SELECT kind, account_id, device_id, last_used_at FROM tokens WHERE token_hash = $1", [.bytes(tokenHash)]) { r in
            guard let principal = StorageRows.principal(r, kind: 0, accountID: 1, deviceID: 2) else { return }
            result = TokenOwner(principal: principal, lastUsedAt: r.isNull(3) ? nil : r.double(3))
        }
        return result
    }

    func touchToken(tokenHash: [UInt8], at time: Double) throws {
        try self.db.query("UPDATE tokens SET last_used_at = $1 WHERE token_hash = $2", [.double(time), .bytes(tokenHash)])
    }

    // MARK: - Idempotency keys

    func idempotencyRecord(owner: [UInt8], key: String) throws -> IdempotencyRecord? {
        var record: IdempotencyRecord?
        try self.db.query("SELECT fingerprint, answer, applied, instance, created_at FROM idempotency_keys WHERE owner_hash = $1 AND key = $2",
                          [.bytes(owner), .text(key)]) { r in
            record = IdempotencyRecord(fingerprint: r.blob(0), answer: r.isNull(1) ? nil : r.blob(1), applied: r.bool(2),
                                       instance: r.text(3), createdAt: r.double(4))
        }
        return record
    }

    func putIdempotencyRecord(owner: [UInt8], key: String, accountID: String?, _ record: IdempotencyRecord) throws {
        try self.db.query("""
            INSERT INTO idempotency_keys (owner_hash, key, account_id, fingerprint, answer, applied, instance, created_at)
            VALUES ($1, $2, $3, $4, $5, $6::boolean, $7, $8)
            ON CONFLICT (owner_hash, key) DO UPDATE SET account_id = excluded.account_id, fingerprint = excluded.fingerprint,
                answer = excluded.answer, applied = excluded.applied, instance = excluded.instance, created_at = excluded.created_at
            """, [.bytes(owner), .text(key), .optionalText(accountID), .bytes(record.fingerprint),
                  record.answer.map { .bytes($0) } ?? .null(PGValue.byteaOID), .text(record.applied ? "true" : "false"),
                  .text(record.instance), .double(record.createdAt)])
    }

    func setIdempotencyAnswer(owner: [UInt8], key: String, answer: [UInt8]) throws {
        try self.db.query("UPDATE idempotency_keys SET answer = $1 WHERE owner_hash = $2 AND key = $3", [.bytes(answer), .bytes(owner), .text(key)])
    }

    func markIdempotencyApplied(owner: [UInt8], key: String) throws {
        try self.db.query("UPDATE idempotency_keys SET applied = true WHERE owner_hash = $1 AND key = $2", [.bytes(owner), .text(key)])
    }

    func deleteIdempotencyRecord(owner: [UInt8], key: String) throws {
        try self.db.query("DELETE FROM idempotency_keys WHERE owner_hash = $1 AND key = $2 AND NOT applied", [.bytes(owner), .text(key)])
    }

    func deleteIdempotencyRecords(createdBefore time: Double) throws {
        try self.db.query("DELETE FROM idempotency_keys WHERE created_at < $1", [.double(time)])
    }

    func deviceTokenTimes() throws -> [String: TokenTimes] {
        var result: [String: TokenTimes] = [:]
        try self.db.query("SELECT device_id, created_at, last_used_at FROM tokens WHERE account_id = $1 AND kind = $2",
                          [.text(self.accountID), .int(TokenKind.device.rawValue)]) { r in
            result[r.text(0)] = TokenTimes(createdAt: r.isNull(1) ? nil : r.double(1), lastUsedAt: r.isNull(2) ? nil : r.double(2))
        }
        return result
    }

    func replaceAccountToken(tokenHash: [UInt8], createdAt: Date) throws -> Bool {
        guard try self.accountExists() else { return false }
        try self.db.query("""
            WITH old AS (DELETE FROM tokens WHERE account_id = $1 AND kind = $2)
            INSERT INTO tokens (token_hash, kind, account_id, device_id, created_at) VALUES ($3, $2, $1, NULL, $4)
            """, [.text(self.accountID), .int(TokenKind.account.rawValue), .bytes(tokenHash), .double(createdAt.timeIntervalSince1970)])
        return true
    }

    func replaceDeviceToken(_ device: DeviceRef, tokenHash: [UInt8], createdAt: Date) throws -> Bool {
        guard try self.device(device) != nil else { return false }
        try self.db.query("""
            WITH old AS (DELETE FROM tokens WHERE account_id = $1 AND device_id = $2)
            INSERT INTO tokens (token_hash, kind, account_id, device_id, created_at) VALUES ($3, $4, $1, $2, $5)
            """, [.text(device.accountID), .text(device.deviceID), .bytes(tokenHash), .int(TokenKind.device.rawValue),
                  .double(createdAt.timeIntervalSince1970)])
        self.observers.tokenRevoked(device)
        return true
    }

    func deleteAccount() throws -> Bool {
        guard try self.accountExists() else { return false }
        try self.db.query("SELECT device_id FROM devices WHERE account_id = $1", [.text(self.accountID)]) { r in
            self.observers.tokenRevoked(DeviceRef(accountID: self.accountID, deviceID: r.text(0)))
        }
        for table in Self.accountTables {
            try self.db.query("DELETE FROM \(table) WHERE account_id = $1", [.text(self.accountID)])
        }
        return true
    }

    /// Every table holding an account's rows, `accounts` last.
    static let accountTables = ["upload_objects", "upload_parts", "uploads", "idempotency_keys", "journal_changes", "journal_feeds", "journal_entries", "journals", "changes", "objects",
                                "record_keys", "records",
                                "tokens", "devices", "accounts"]

    func accountExists() throws -> Bool {
        return try self.db.scalarInt("SELECT 1::int8 FROM accounts WHERE account_id = $1", [.text(self.accountID)]) != nil
    }

    func insertAccount(accountID: String, name: String, tokenHash: [UInt8], createdAt: Date) throws {
        try self.db.query("""
            WITH a AS (INSERT INTO accounts (account_id, name, created_at) VALUES ($1, $2, $3))
            INSERT INTO tokens (token_hash, kind, account_id, device_id, created_at) VALUES ($4, $5, $1, NULL, $3)
            """, [.text(accountID), .text(name), .double(createdAt.timeIntervalSince1970), .bytes(tokenHash), .int(TokenKind.account.rawValue)])
    }

    private static let deviceColumns = StorageRows.deviceColumns.replacingOccurrences(of: "%AUTH%", with: "authorization_status")

    func device(_ device: DeviceRef) throws -> DeviceState? {
        var result: DeviceState?
        try self.db.query("SELECT \(Self.deviceColumns) FROM devices WHERE account_id = $1 AND device_id = $2",
                          [.text(device.accountID), .text(device.deviceID)]) { r in result = StorageRows.deviceState(r, accountID: device.accountID) }
        return result
    }

    func devices() throws -> [DeviceState] {
        var result: [DeviceState] = []
        try self.db.query("SELECT \(Self.deviceColumns) FROM devices WHERE account_id = $1 ORDER BY created_at, device_id",
                          [.text(self.accountID)]) { r in result.append(StorageRows.deviceState(r, accountID: self.accountID)) }
        return result
    }

    func insertDevice(_ device: DeviceRef, name: String, platform: String?, tokenHash: [UInt8], createdAt: Date) throws {
        try self.db.query("""
            WITH d AS (INSERT INTO devices (account_id, device_id, name, platform, created_at) VALUES ($1, $2, $3, $4, $5))
            INSERT INTO tokens (token_hash, kind, account_id, device_id, created_at) VALUES ($6, $7, $1, $2, $5)
            """, [.text(device.accountID), .text(device.deviceID), .text(name), .optionalText(platform),
                  .double(createdAt.timeIntervalSince1970), .bytes(tokenHash), .int(TokenKind.device.rawValue)])
        self.observers.didChange(.insertDevice(device.deviceID))
    }

    // MARK: - The mapping index's reads

    func mappingVersion() throws -> Int64 {
        try self.db.scalarInt("SELECT mapping_version FROM accounts WHERE account_id = $1", [.text(self.accountID)]) ?? 0
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

    func deleteDevice(_ device: DeviceRef) throws -> Bool {
        let key: [PGValue] = [.text(device.accountID), .text(device.deviceID)]
        let n = try self.db.query("DELETE FROM devices WHERE account_id = $1 AND device_id = $2", key)
        guard n > 0 else { return false }
        try self.db.query("""
            WITH o AS (DELETE FROM objects WHERE account_id = $1 AND device_id = $2),
                 c AS (DELETE FROM changes WHERE account_id = $1 AND device_id = $2)
            DELETE FROM tokens WHERE account_id = $1 AND device_id = $2
            """, key)
        try self.deleteUploads(of: device)
        try self.db.query("""
            WITH s AS (UPDATE devices SET replaces = NULL WHERE account_id = $1 AND replaces = $2)
            UPDATE devices SET replaced_by = NULL WHERE account_id = $1 AND replaced_by = $2
            """, key)
        self.observers.didChange(.deleteDevice(device.deviceID))
        self.observers.tokenRevoked(device)
        return true
    }

    func setSuccessor(_ successor: DeviceRef, of predecessor: DeviceRef) throws {
        try self.db.query("""
            WITH s AS (UPDATE devices SET replaces = $3 WHERE account_id = $1 AND device_id = $2),
                 p AS (UPDATE devices SET replaced_by = $2 WHERE account_id = $1 AND device_id = $3)
            DELETE FROM tokens WHERE account_id = $1 AND device_id = $3
            """, [.text(self.accountID), .text(successor.deviceID), .text(predecessor.deviceID)])
        self.observers.tokenRevoked(predecessor)
    }

    func setAuthorization(_ device: DeviceRef, _ status: AuthorizationStatus) throws {
        let code = StorageRows.authorizationCode(status)
        try self.db.query("UPDATE devices SET authorization_status = $1 WHERE account_id = $2 AND device_id = $3",
                          [.int(code), .text(device.accountID), .text(device.deviceID)])
    }

    func updateDeviceCounters(_ device: DeviceRef, lastChangeSeq: Int64, objectCount: Int) throws {
        try self.db.query("UPDATE devices SET last_change_seq = $1, object_count = $2 WHERE account_id = $3 AND device_id = $4",
                          [.int(lastChangeSeq), .int(Int64(objectCount)), .text(device.accountID), .text(device.deviceID)])
    }

    // MARK: - Objects

    private static let objectColumns = StorageRows.objectColumns
    static let linkJoin = "LEFT JOIN records r ON r.account_id = o.account_id AND r.guid = o.record_guid"

    func objects(_ device: DeviceRef, localIdentifiers: [String]) throws -> [StoredObject] {
        guard !localIdentifiers.isEmpty else { return [] }
        var result: [StoredObject] = []
        result.reserveCapacity(localIdentifiers.count)
        try self.db.query("""
            SELECT \(Self.objectColumns) FROM objects o \(Self.linkJoin)
            WHERE o.account_id = $1 AND o.device_id = $2 AND o.local_id = ANY($3)
            """, [.text(device.accountID), .text(device.deviceID), .textArray(localIdentifiers)]) { r in result.append(StorageRows.storedObject(r)) }
        return result
    }

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

    func allObjects(_ device: DeviceRef) throws -> [StoredObject] {
        var result: [StoredObject] = []
        try self.db.query("""
            SELECT \(Self.objectColumns) FROM objects o \(Self.linkJoin)
            WHERE o.account_id = $1 AND o.device_id = $2
            """, [.text(device.accountID), .text(device.deviceID)]) { r in result.append(StorageRows.storedObject(r)) }
        return result
    }

    func objectPage(_ device: DeviceRef, type: ObjectType, after: String?, limit: Int) throws -> [LibraryObject] {
        var result: [LibraryObject] = []
        try self.db.query("""
            SELECT \(Self.objectColumns) FROM objects o \(Self.linkJoin)
            WHERE o.account_id = $1 AND o.device_id = $2 AND o.type = $3 AND o.local_id > $4 \(type == .asset ? "" : "AND o.type <> 1")
            ORDER BY o.local_id LIMIT $5
            """, [.text(device.accountID), .text(device.deviceID), .int(Int64(type.rawValue)), .text(after ?? ""), .int(Int64(limit))]) { r in
            result.append(StorageRows.libraryObject(r))
        }
        return result
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

    func putObjects(_ device: DeviceRef, _ objects: [StoredObject]) throws {
        self.observers.didChange(.putting(objects, on: device))
        guard !objects.isEmpty else { return }
        self.objectRowsWritten += objects.count
        // One statement for the whole batch; a later duplicate of an identifier wins, as row-by-row would.
        // Duplicates by bytes (API.md §2): Swift's String == would merge an NFC and an NFD spelling.
        var index: [[UInt8]: Int] = [:]
        var rows: [StoredObject] = []
        rows.reserveCapacity(objects.count)
        for s in objects {
            let key = Array(s.object.localIdentifier.utf8)
            if let i = index[key] { rows[i] = s } else { index[key] = rows.count; rows.append(s) }
        }
        try self.db.query("""
            INSERT INTO objects (account_id, device_id, local_id, type, fingerprint, media_type, creation_date, modification_date,
                                 has_adjustments, is_favorite, title, members, app_created, record_guid,
                                 pk_identifier, key_a, creation_second)
            SELECT $1, $2, u.l, u.t, u.f, u.m, u.cd, u.md, u.ha, u.fa, u.ti, u.me, u.ac, u.rg, u.pk, u.ka, u.cs::bigint
            FROM unnest($3::text[], $4::int8[], $5::text[], $6::text[], $7::text[], $8::text[],
                        $9::bool[], $10::bool[], $11::text[], $12::text[], $13::bool[], $14::text[],
                        $15::text[], $16::text[], $17::text[]) AS u(l, t, f, m, cd, md, ha, fa, ti, me, ac, rg, pk, ka, cs)
            ON CONFLICT (account_id, device_id, local_id) DO UPDATE SET \(StorageRows.objectUpsertSet)
            """, [
                .text(device.accountID), .text(device.deviceID),
                .textArray(rows.map(\.object.localIdentifier)), .intArray(rows.map { Int64($0.object.type.rawValue) }),
                .textArray(rows.map(\.object.fingerprint)), .textArray(rows.map(\.object.mediaType.rawValue)),
                .textArray(rows.map(\.object.creationDate)), .textArray(rows.map(\.object.modificationDate)),
                .boolArray(rows.map(\.object.hasAdjustments)), .boolArray(rows.map(\.object.isFavorite)),
                .textArray(rows.map(\.object.title)), .textArray(rows.map { $0.object.members.joined(separator: "\n") }),
                .boolArray(rows.map(\.object.appCreated)), .textArray(rows.map { $0.link?.guid }),
                .textArray(rows.map(\.object.photoKitCloudIdentifier)), .textArray(rows.map { $0.object.key?.a }),
                .textArray(rows.map { $0.object.creationSecond.map(String.init) }),
            ])
    }

    func deleteObjects(_ device: DeviceRef, localIdentifiers: [String]) throws {
        self.observers.didChange(.deleteObjects(device: device.deviceID, localIdentifiers: localIdentifiers))
        guard !localIdentifiers.isEmpty else { return }
        self.objectRowsWritten += localIdentifiers.count
        try self.db.query("DELETE FROM objects WHERE account_id = $1 AND device_id = $2 AND local_id = ANY($3)",
                          [.text(device.accountID), .text(device.deviceID), .textArray(localIdentifiers)])
    }

    // MARK: - Records and links

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
        let fills = fills.filter { !$0.fingerprint.isEmpty }
        guard !fills.isEmpty else { return }
        // The first fill of a record wins, as row by row would.
        var seen = Set<String>()
        let first = fills.filter { seen.insert($0.guid).inserted }
        try self.db.query("""
            UPDATE records r SET fingerprint = u.fingerprint FROM unnest($2::text[], $3::text[]) AS u(guid, fingerprint)
            WHERE r.account_id = $1 AND r.guid = u.guid AND r.fingerprint = ''
            """, [.text(self.accountID), .textArray(first.map(\.guid)), .textArray(first.map(\.fingerprint))])
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
        guard rows.candidatesFound() else { return WantedPage(objects: [], next: nil, total: 0) }
        try self.db.query("""
            SELECT local_id, type, creation_second FROM objects
            WHERE account_id = $1 AND device_id = $2 AND fingerprint = '' AND record_guid IS NULL
            """, [.text(device.accountID), .text(device.deviceID)]) { rows.addObject($0) }
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
        // UPDATE … FROM applies one arbitrary row of several for the same object: an identifier given
        // twice takes its last link, as on SQLite (and as one statement per link did).
        var last: [[UInt8]: Int] = [:]
        for (i, l) in links.enumerated() { last[Array(l.localIdentifier.utf8)] = i }
        let links = links.enumerated().filter { last[Array($0.element.localIdentifier.utf8)] == $0.offset }.map(\.element)
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

    // MARK: - History

    func appendChange(_ device: DeviceRef, seq: Int64, createdAt: Double, details: ChangeDetails?) throws {
        self.observers.didAppend(to: .library(device))
        try self.db.query("INSERT INTO changes (account_id, device_id, seq, created_at, details) VALUES ($1, $2, $3, $4, $5)",
                          [.text(device.accountID), .text(device.deviceID), .int(seq), .double(createdAt),
                           .optionalText(details.map { ChangeDetailsCodec.encode($0) })])
    }

    func changes(_ device: DeviceRef, after seq: Int64, limit: Int) throws -> [StoredChange] {
        var result: [StoredChange] = []
        try self.db.query("""
            SELECT seq, created_at, details FROM changes
            WHERE account_id = $1 AND device_id = $2 AND seq > $3 ORDER BY seq LIMIT $4
            """, [.text(device.accountID), .text(device.deviceID), .int(seq), .int(Int64(limit))]) { r in
            result.append(StoredChange(seq: r.int(0), createdAt: r.double(1), details: r.isNull(2) ? nil : ChangeDetailsCodec.decode(r.text(2))))
        }
        return result
    }

    func latestChangeSeq(_ device: DeviceRef, createdAtOrBefore time: Double) throws -> Int64? {
        return try self.db.scalarInt("SELECT max(seq) FROM changes WHERE account_id = $1 AND device_id = $2 AND created_at <= $3",
                                     [.text(device.accountID), .text(device.deviceID), .double(time)])
    }

    func pruneChanges(_ device: DeviceRef, throughSeq: Int64) throws {
        try self.db.query("""
            WITH c AS (DELETE FROM changes WHERE account_id = $2 AND device_id = $3 AND seq <= $1)
            UPDATE devices SET pruned_through_seq = greatest(pruned_through_seq, $1) WHERE account_id = $2 AND device_id = $3
            """, [.int(throughSeq), .text(device.accountID), .text(device.deviceID)])
    }
}
