import ConcordDomain

/// What a caller leaves stored, measured in bytes (issue 23: `DataBounds`).
extension SQLiteTransaction {
    func idempotencyKeptBytes(accountID: String, createdAfter time: Double) throws -> Int {
        guard let a = try self.accountKey(accountID) else { return 0 }
        // length() of a BLOB reads its size from the record header, not the value.
        return Int(try self.db.scalarInt("""
            SELECT coalesce(sum(coalesce(length(answer), 0) + length(CAST(key AS BLOB)) + ?), 0)
            FROM idempotency_keys INDEXED BY idempotency_keys_account WHERE account_key = ? AND created_at > ?
            """, [.int(Int64(DataBounds.idempotencyKeyOverhead)), .int(a), .double(time)]) ?? 0)
    }

    func setIdempotencyAnswer(owner: [UInt8], key: String, answer: [UInt8], accountID: String) throws {
        guard let a = try self.accountKey(accountID) else {
            try self.db.run("DELETE FROM idempotency_keys WHERE owner_hash = ? AND key = ?", [.blob(owner), .text(key)])
            return
        }
        try self.db.run("UPDATE idempotency_keys SET answer = ?, account_key = ? WHERE owner_hash = ? AND key = ?",
                        [.blob(answer), .int(a), .blob(owner), .text(key)])
    }

    func changeSeqOverBytes(_ device: DeviceRef, keeping bytes: Int) throws -> Int64? {
        guard let k = try self.keys(device) else { return nil }
        return try self.db.scalarInt("""
            SELECT seq FROM (
                SELECT seq, sum(coalesce(details_bytes, length(CAST(details AS BLOB)))) OVER (ORDER BY seq DESC) AS kept
                FROM changes WHERE account_key = ? AND device_key = ?
            ) WHERE kept > ? ORDER BY seq DESC LIMIT 1
            """, [.int(k.account), .int(k.device), .int(Int64(bytes))])
    }

    func journalEntries(journalID: String, createdAfter createdSeq: Int64, limit: Int) throws -> [StoredJournalEntry] {
        guard let a = try self.accountKey(self.accountID) else { return [] }
        var result: [StoredJournalEntry] = []
        try self.db.query("""
            SELECT \(StorageRows.entryColumns) FROM journal_entries INDEXED BY journal_entries_by_creation
            WHERE account_key = ? AND journal_id = ? AND created_seq > ? ORDER BY created_seq LIMIT ?
            """, [.int(a), .text(journalID), .int(createdSeq), .int(Int64(limit))]) { s in result.append(StorageRows.storedEntry(s)) }
        return result
    }
}
