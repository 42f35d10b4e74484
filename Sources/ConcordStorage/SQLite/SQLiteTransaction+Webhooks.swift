import ConcordDomain

/// The webhook tables on SQLite: the shared statements (`WebhookTables.swift`) with `?n` placeholders.
extension SQLiteTransaction: WebhookStatements {
    func webhookRun(_ sql: String, _ values: [WebhookValue]) throws -> Int {
        try self.db.run(Self.sqliteText(sql), values.map(Self.sqliteValue))
    }

    func webhookQuery(_ sql: String, _ values: [WebhookValue], _ row: (any WebhookRow) throws -> Void) throws {
        try self.db.query(Self.sqliteText(sql), values.map(Self.sqliteValue)) { s in try row(s) }
    }

    /// One writer serialises claims already.
    func lockWebhookClaims() throws {}

    /// One process: its engine is woken in process.
    func announceWebhookEvents() throws {}

    /// `$n` → `?n` (SQLite numbers `$n` parameters by first appearance, not by `n`).
    static func sqliteText(_ sql: String) -> String { sql.replacingOccurrences(of: "$", with: "?") }

    static func sqliteValue(_ v: WebhookValue) -> SQLValue {
        switch v {
        case .text(let s): return s.map { .text($0) } ?? .null
        case .int(let i): return i.map { .int($0) } ?? .null
        case .double(let d): return d.map { .double($0) } ?? .null
        case .blob(let b): return b.map { .blob($0) } ?? .null
        }
    }
}

extension Statement: WebhookRow {}
