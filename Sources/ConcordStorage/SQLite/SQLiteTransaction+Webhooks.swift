import ConcordDomain
import Synchronization

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

    /// One process: its engine is woken in process, once the transaction has committed.
    func announceWebhookEvents() throws { self.observers.didQueueWebhookEvents() }

    /// `$n` → `?n` (SQLite numbers `$n` parameters by first appearance, not by `n`), once per
    /// statement text: the outbox runs its statements on every commit.
    static func sqliteText(_ sql: String) -> String {
        if let known = Self.sqliteTexts.withLock({ $0[sql] }) { return known }
        let text = String(decoding: sql.utf8.map { $0 == UInt8(ascii: "$") ? UInt8(ascii: "?") : $0 }, as: UTF8.self)
        Self.sqliteTexts.withLock { $0[sql] = text }
        return text
    }

    private static let sqliteTexts = Mutex<[String: String]>([:])

    /// A random (version 4) UUID in upper case.
    static var newEventIDExpression: String {
        "upper(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' || "
            + "substr('89AB', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))"
    }

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
