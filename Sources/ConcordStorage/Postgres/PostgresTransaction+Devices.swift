import ConcordDomain
import Foundation

/// Server settings, tokens, accounts and devices on PostgreSQL (`TokenWrites`, `DeviceWrites`).
extension PostgresTransaction: TokenWrites, DeviceWrites {
    func tokenOwner(tokenHash: [UInt8]) throws -> TokenOwner? {
        var result: TokenOwner?
        try self.db.query("SELECT kind, account_id, device_id, last_used_at FROM tokens WHERE token_hash = $1", [.bytes(tokenHash)]) { r in
            guard let principal = StorageRows.principal(r, kind: 0, accountID: 1, deviceID: 2) else { return }
            result = TokenOwner(principal: principal, lastUsedAt: r.isNull(3) ? nil : r.double(3))
        }
        return result
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
        for table in Self.accountTables {
            try self.db.query("DELETE FROM \(table) WHERE account_id = $1", [.text(self.accountID)])
        }
        return true
    }

    /// Every table holding an account's rows, `accounts` last (and the account's upload staging tables,
    /// dropped first: `dropAccountUploadStaging`).
    static let accountTables = ["upload_parts", "uploads", "idempotency_keys", "picker_sessions", "journal_changes", "journal_feeds", "journal_entries", "journals", "changes", "objects",
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
}
