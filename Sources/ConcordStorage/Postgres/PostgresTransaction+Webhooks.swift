import CLibPQ
import ConcordDomain

/// The webhook tables on PostgreSQL: the shared statements (`WebhookTables.swift`), prepared once per connection.
extension PostgresTransaction: WebhookStatements {
    func webhookRun(_ sql: String, _ values: [WebhookValue]) throws -> Int {
        try self.db.query(sql, values.map(Self.pgValue))
    }

    func webhookQuery(_ sql: String, _ values: [WebhookValue], _ row: (any WebhookRow) throws -> Void) throws {
        try self.db.query(sql, values.map(Self.pgValue)) { r in try row(r) }
    }

    /// Instances claim one at a time: each (webhook, feed) has at most one attempt in flight across them.
    func lockWebhookClaims() throws {
        try self.db.query("SELECT pg_advisory_xact_lock($1)", [.int(Self.webhookClaimLock)])
    }

    /// Other instances' engines wake at commit (PostgreSQL sends one notification per transaction for equal payloads).
    func announceWebhookEvents() throws {
        self.observers.didQueueWebhookEvents()
        try self.db.query("SELECT pg_notify($1, $2)", [.text(PostgresFeedListener.channel), .text(PostgresFeedListener.webhookPayload)])
    }

    /// A random (version 4) UUID in upper case (`gen_random_uuid`, PostgreSQL 13 and later).
    static var newEventIDExpression: String { "upper(gen_random_uuid()::text)" }

    static let webhookClaimLock: Int64 = 0x436F_6E63_5748_4B   // "ConcWHK"

    static func pgValue(_ v: WebhookValue) -> PGValue {
        switch v {
        case .text(let s): return s.map { .text($0) } ?? .null(PGValue.textOID)
        case .int(let i): return i.map { .int($0) } ?? .null(PGValue.int8OID)
        case .double(let d): return d.map { .double($0) } ?? .null(PGValue.float8OID)
        case .blob(let b): return b.map { .bytes($0) } ?? .null(PGValue.byteaOID)
        }
    }
}

extension PGRow: WebhookRow {}
