import ConcordDomain

/// Statements on settings, token use and idempotency keys: their columns are alike on both engines,
/// so one SQL text with `$n` placeholders serves both, through the runner the webhook tables brought
/// (`WebhookStatements`: values bound by type, `$n` rewritten for SQLite). A flag column is `boolean`
/// on PostgreSQL and 0/1 on SQLite: written `TRUE`/`NOT` here, which both read the same.
extension WebhookStatements {
    func setting(_ key: String) throws -> [UInt8]? {
        var value: [UInt8]?
        try self.webhookQuery("SELECT value FROM settings WHERE key = $1", [.text(key)]) { r in value = r.blob(0) }
        return value
    }

    func setSetting(_ key: String, _ value: [UInt8]) throws {
        try self.webhookRun("INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                            [.text(key), .blob(value)])
    }

    func touchToken(tokenHash: [UInt8], at time: Double) throws {
        try self.webhookRun("UPDATE tokens SET last_used_at = $1 WHERE token_hash = $2", [.double(time), .blob(tokenHash)])
    }

    func setIdempotencyAnswer(owner: [UInt8], key: String, answer: [UInt8]) throws {
        try self.webhookRun("UPDATE idempotency_keys SET answer = $1 WHERE owner_hash = $2 AND key = $3", [.blob(answer), .blob(owner), .text(key)])
    }

    func markIdempotencyApplied(owner: [UInt8], key: String) throws {
        try self.webhookRun("UPDATE idempotency_keys SET applied = TRUE WHERE owner_hash = $1 AND key = $2", [.blob(owner), .text(key)])
    }

    func deleteIdempotencyRecord(owner: [UInt8], key: String) throws {
        try self.webhookRun("DELETE FROM idempotency_keys WHERE owner_hash = $1 AND key = $2 AND NOT applied", [.blob(owner), .text(key)])
    }

    func deleteIdempotencyRecords(createdBefore time: Double) throws {
        try self.webhookRun("DELETE FROM idempotency_keys WHERE created_at < $1", [.double(time)])
    }
}
