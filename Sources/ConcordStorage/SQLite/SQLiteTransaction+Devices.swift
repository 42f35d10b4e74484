import ConcordDomain
import Foundation

/// Server settings, tokens, accounts and devices on SQLite (`TokenWrites`, `DeviceWrites`).
extension SQLiteTransaction: TokenWrites, DeviceWrites {
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
    static let accountTables = ["upload_objects", "upload_parts", "uploads", "idempotency_keys", "picker_sessions", "journal_changes", "journal_feeds", "journal_entries", "journals", "changes", "objects",
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
}
