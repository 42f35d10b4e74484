import ConcordDomain
import Foundation

/// Server settings, tokens, accounts and devices on PostgreSQL (`TokenWrites`, `DeviceWrites`).
extension PostgresTransaction: TokenWrites, DeviceWrites {
    /// A device token's device row and its account's mapping version come in the same statement
    /// (`DeviceCheck`): a warm mapping request then asks PostgreSQL nothing else.
    func tokenOwner(tokenHash: [UInt8]) throws -> TokenOwner? {
        var result: TokenOwner?
        try self.db.query(Self.tokenOwnerWithDevice, [.bytes(tokenHash)]) { r in
            guard let principal = StorageRows.principal(r, kind: 10, accountID: 11, deviceID: 12) else { return }
            var check: DeviceCheck?
            if case .device(let ref) = principal, !r.isNull(0), !r.isNull(14) {
                check = DeviceCheck(device: StorageRows.deviceState(r, accountID: ref.accountID), mappingVersion: r.int(14))
            }
            result = TokenOwner(principal: principal, lastUsedAt: r.isNull(13) ? nil : r.double(13), deviceCheck: check)
        }
        return result
    }

    /// The device's columns (as `device(_:)` reads them), then the token's, then the mapping version.
    private static let tokenOwnerWithDevice = """
        SELECT \(prefixed(StorageRows.deviceColumns.replacingOccurrences(of: "%AUTH%", with: "authorization_status"), "d")),
               t.kind, t.account_id, t.device_id, t.last_used_at, a.mapping_version
        FROM tokens t
        LEFT JOIN devices d ON d.account_id = t.account_id AND d.device_id = t.device_id
        LEFT JOIN accounts a ON a.account_id = t.account_id AND t.device_id IS NOT NULL
        WHERE t.token_hash = $1
        """

    /// `columns` ("a, b, c") each qualified by `table`.
    private static func prefixed(_ columns: String, _ table: String) -> String {
        columns.split(separator: ", ").map { "\(table).\($0)" }.joined(separator: ", ")
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
        try self.dropAccountUploadStaging()
        let account = try self.accountKey()
        // objects' indexes begin with the device (migration 17): its rows go by the account's devices.
        try self.db.query("DELETE FROM objects WHERE device_key IN (SELECT device_key FROM devices WHERE account_id = $1)", [.text(self.accountID)])
        for table in Self.accountKeyTables where table != "objects" {
            try self.db.query("DELETE FROM \(table) WHERE account_key = $1", [.int(account)])
        }
        for table in Self.accountTables {
            try self.db.query("DELETE FROM \(table) WHERE account_id = $1", [.text(self.accountID)])
        }
        return true
    }

    /// Every table holding an account's rows by its `account_key` (migration 14).
    static let accountKeyTables = ["changes", "links", "objects", "record_keys", "records"]
    /// Every table holding an account's rows by its `account_id`, `accounts` last (the account's
    /// upload staging tables are dropped first: `dropAccountUploadStaging`).
    static let accountTables = ["upload_parts", "uploads", "idempotency_keys", "picker_sessions", "journal_changes", "journal_feeds", "journal_entries", "journals",
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

    /// The account's mapping version too, in a read of the account (from `accounts`, with the device
    /// row when there is one): a mapping read asks for it next (one statement, not two).
    private static let deviceWithMappingVersion = """
        SELECT \(prefixed(StorageRows.deviceColumns.replacingOccurrences(of: "%AUTH%", with: "authorization_status"), "d")), a.mapping_version
        FROM accounts a LEFT JOIN devices d ON d.account_id = a.account_id AND d.device_id = $2 WHERE a.account_id = $1
        """

    func device(_ device: DeviceRef) throws -> DeviceState? {
        var result: DeviceState?
        if self.readOnly, device.accountID == self.accountID {
            try self.db.query(Self.deviceWithMappingVersion, [.text(device.accountID), .text(device.deviceID)]) { r in
                self.knownMappingVersion = r.int(10)
                if !r.isNull(0) { result = StorageRows.deviceState(r, accountID: device.accountID) }
            }
            return result
        }
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

    func deleteDevice(_ device: DeviceRef) throws -> Bool {
        let key: [PGValue] = [.text(device.accountID), .text(device.deviceID)]
        let keys = try self.keys(device)
        let n = try self.db.query("DELETE FROM devices WHERE account_id = $1 AND device_id = $2", key)
        guard n > 0 else { return false }
        try self.db.query("""
            WITH o AS (DELETE FROM objects WHERE account_key = $3 AND device_key = $4),
                 l AS (DELETE FROM links WHERE account_key = $3 AND device_key = $4),
                 c AS (DELETE FROM changes WHERE account_key = $3 AND device_key = $4)
            DELETE FROM tokens WHERE account_id = $1 AND device_id = $2
            """, key + [.int(keys.account), .int(keys.device)])
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
}
