import ConcordDomain

/// What a caller leaves stored, measured in bytes (issue 23: `DataBounds`).
extension PostgresTransaction {
    func idempotencyKeptBytes(accountID: String, createdAfter time: Double) throws -> Int {
        // octet_length of a bytea reads its stored size, without detoasting the value.
        Int(try self.db.scalarInt("""
            SELECT coalesce(sum(coalesce(octet_length(answer), 0) + octet_length(key) + $2), 0)::int8
            FROM idempotency_keys WHERE account_id = $1 AND created_at > $3
            """, [.text(accountID), .int(Int64(DataBounds.idempotencyKeyOverhead)), .double(time)]) ?? 0)
    }

    func setIdempotencyAnswer(owner: [UInt8], key: String, answer: [UInt8], accountID: String) throws {
        guard try self.db.scalarInt("SELECT 1::int8 FROM accounts WHERE account_id = $1", [.text(accountID)]) != nil else {
            try self.db.query("DELETE FROM idempotency_keys WHERE owner_hash = $1 AND key = $2", [.bytes(owner), .text(key)])
            return
        }
        try self.db.query("UPDATE idempotency_keys SET answer = $1, account_id = $2 WHERE owner_hash = $3 AND key = $4",
                          [.bytes(answer), .text(accountID), .bytes(owner), .text(key)])
    }

    func changeSeqOverBytes(_ device: DeviceRef, keeping bytes: Int) throws -> Int64? {
        try self.db.scalarInt("""
            SELECT seq FROM (
                SELECT seq, sum(octet_length(details)) OVER (ORDER BY seq DESC) AS kept
                FROM changes WHERE account_id = $1 AND device_id = $2
            ) c WHERE kept > $3 ORDER BY seq DESC LIMIT 1
            """, [.text(device.accountID), .text(device.deviceID), .int(Int64(bytes))])
    }

    func journalEntries(journalID: String, createdAfter createdSeq: Int64, limit: Int) throws -> [StoredJournalEntry] {
        var result: [StoredJournalEntry] = []
        try self.db.query("""
            SELECT \(StorageRows.entryColumns) FROM journal_entries
            WHERE account_id = $1 AND journal_id = $2 AND created_seq > $3 ORDER BY created_seq LIMIT $4
            """, [.text(self.accountID), .text(journalID), .int(createdSeq), .int(Int64(limit))]) { r in result.append(StorageRows.storedEntry(r)) }
        return result
    }
}
