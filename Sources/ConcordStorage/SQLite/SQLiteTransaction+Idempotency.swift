import ConcordDomain
import Foundation

/// Idempotency keys on SQLite (`IdempotencyKeyWrites`, `IdempotencyAppliedWrites`).
extension SQLiteTransaction: IdempotencyKeyWrites, IdempotencyAppliedWrites {
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
}
