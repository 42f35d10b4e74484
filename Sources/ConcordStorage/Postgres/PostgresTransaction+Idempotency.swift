import ConcordDomain
import Foundation

/// Idempotency keys on PostgreSQL (`IdempotencyKeyWrites`, `IdempotencyAppliedWrites`).
extension PostgresTransaction: IdempotencyKeyWrites, IdempotencyAppliedWrites {
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
}
