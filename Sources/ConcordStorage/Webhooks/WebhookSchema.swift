/// The webhook tables, written once for both engines: only the column types differ.
/// Times are seconds since 1970 (REAL / double precision); flags are 0 or 1; events' `seq` orders
/// them (creation order, never reused).
enum WebhookSchema {
    static let sqlite = Self.schema(integer: "INTEGER", real: "REAL", blob: "BLOB", serial: "INTEGER PRIMARY KEY AUTOINCREMENT")
    static let postgres = Self.schema(integer: "bigint", real: "double precision", blob: "bytea", serial: "bigserial PRIMARY KEY")

    /// The waiting and in-flight events of one (webhook, feed), found without reading its log (a
    /// claim asks on every attempt, and the log keeps thousands of finished events per webhook);
    /// and a feed's mark for a check of who hears it: unmarked, a commit writes its head row alone.
    static let waitingEvents = """
        CREATE INDEX webhook_events_pending_by_feed ON webhook_events (webhook_id, feed, seq) WHERE status = 'pending';
        CREATE INDEX webhook_events_in_flight_by_feed ON webhook_events (webhook_id, feed) WHERE lease_owner IS NOT NULL;
        ALTER TABLE webhook_feed_heads ADD COLUMN recheck INTEGER NOT NULL DEFAULT 1;
        """

    private static func schema(integer: String, real: String, blob: String, serial: String) -> String {
        """
        CREATE TABLE webhooks (
            webhook_id TEXT PRIMARY KEY,
            scope TEXT NOT NULL,
            account_id TEXT,
            url TEXT NOT NULL,
            events TEXT NOT NULL,
            description TEXT NOT NULL,
            enabled \(integer) NOT NULL,
            disabled_reason TEXT,
            disabled_at \(real),
            min_interval \(integer) NOT NULL,
            created_at \(real) NOT NULL,
            updated_at \(real) NOT NULL,
            secret \(blob) NOT NULL,
            secret_key_id TEXT NOT NULL,
            secret_created_at \(real) NOT NULL,
            prev_secret \(blob),
            prev_secret_key_id TEXT,
            prev_secret_created_at \(real),
            prev_secret_expires_at \(real),
            secret_serial \(integer) NOT NULL,
            consecutive_failures \(integer) NOT NULL,
            last_success_at \(real),
            last_failure_at \(real),
            last_ping_at \(real)
        );
        CREATE INDEX webhooks_by_account ON webhooks (account_id, created_at);
        CREATE INDEX webhooks_by_scope ON webhooks (scope, created_at);

        CREATE TABLE webhook_events (
            seq \(serial),
            event_id TEXT NOT NULL UNIQUE,
            webhook_id TEXT NOT NULL,
            account_id TEXT NOT NULL,
            feed TEXT NOT NULL,
            type TEXT NOT NULL,
            status TEXT NOT NULL,
            created_at \(real) NOT NULL,
            ts \(real) NOT NULL,
            data TEXT NOT NULL,
            origin TEXT,
            attempts \(integer) NOT NULL,
            attempted \(integer) NOT NULL,
            next_attempt_at \(real),
            superseded_by TEXT,
            lease_owner TEXT,
            lease_until \(real),
            manual \(integer) NOT NULL,
            head_seq \(integer) NOT NULL DEFAULT 0
        );
        CREATE INDEX webhook_events_by_webhook ON webhook_events (webhook_id, seq);
        CREATE INDEX webhook_events_by_feed ON webhook_events (webhook_id, feed, seq);
        CREATE INDEX webhook_events_due ON webhook_events (next_attempt_at) WHERE status = 'pending';
        CREATE INDEX webhook_events_claimed ON webhook_events (lease_until) WHERE lease_owner IS NOT NULL;
        CREATE INDEX webhook_events_by_account ON webhook_events (account_id) WHERE status = 'pending';

        CREATE TABLE webhook_attempts (
            event_id TEXT NOT NULL,
            attempted_at \(real) NOT NULL,
            duration_ms \(integer) NOT NULL,
            response_status \(integer),
            error TEXT
        );
        CREATE INDEX webhook_attempts_by_event ON webhook_attempts (event_id, attempted_at);

        -- A library's or journals' newest change, per feed: a waiting event nobody has seen reads it
        -- from here (the outbox writes this one row per commit, not every waiting event).
        CREATE TABLE webhook_feed_heads (
            feed_key TEXT PRIMARY KEY,
            last_seq \(integer) NOT NULL,
            last_ts \(real) NOT NULL,
            last_data TEXT NOT NULL,
            last_data_plain TEXT NOT NULL,
            last_origin TEXT NOT NULL,
            origin_run_since \(integer) NOT NULL
        );

        CREATE TABLE webhook_feeds (
            webhook_id TEXT NOT NULL,
            feed TEXT NOT NULL,
            last_attempt_at \(real) NOT NULL,
            PRIMARY KEY (webhook_id, feed)
        );
        """
    }
}
