import Foundation

/// The PostgreSQL schema, as numbered migrations recorded in `schema_migrations`.
///
/// Every table is keyed by its account first (primary keys and indexes): `account_id`, or since
/// migration 14 the account's integer `account_key` in the large tables (objects, links, records,
/// record_keys, changes), so the data can be distributed by account (Citus:
/// `create_distributed_table(table, 'account_key')`), and every query of one request names one account. Exceptions: `settings` (server-wide, tiny: a reference
/// table) and `tokens`, looked up by token hash before the account is known (a reference table, or
/// distributed by `token_hash`). Identifiers are `COLLATE "C"`: the contract's order is byte order,
/// whatever the database's default collation.
enum PostgresMigrations {
    static let all: [(version: Int, sql: String)] = [
        (1, """
        CREATE TABLE settings (
            key text COLLATE "C" PRIMARY KEY,
            value bytea NOT NULL
        );

        CREATE TABLE accounts (
            account_id text COLLATE "C" PRIMARY KEY,
            name text NOT NULL,
            created_at double precision NOT NULL,
            next_record_order bigint NOT NULL DEFAULT 1
        );

        -- kind: 1 account token, 2 device token. Only the SHA-256 of a token is stored.
        CREATE TABLE tokens (
            token_hash bytea PRIMARY KEY,
            kind bigint NOT NULL,
            account_id text COLLATE "C" NOT NULL,
            device_id text COLLATE "C"
        );
        CREATE INDEX tokens_by_owner ON tokens (account_id, device_id);

        -- authorization: 0 authorized, 1 limited, 2 denied.
        CREATE TABLE devices (
            account_id text COLLATE "C" NOT NULL,
            device_id text COLLATE "C" NOT NULL,
            name text NOT NULL,
            platform text,
            created_at double precision NOT NULL,
            authorization_status bigint NOT NULL DEFAULT 0,
            last_change_seq bigint NOT NULL DEFAULT 0,
            pruned_through_seq bigint NOT NULL DEFAULT 0,
            object_count bigint NOT NULL DEFAULT 0,
            PRIMARY KEY (account_id, device_id)
        );

        -- The shared mapping table: one row per cloud record. created_order gives "the oldest".
        CREATE TABLE records (
            account_id text COLLATE "C" NOT NULL,
            guid text COLLATE "C" NOT NULL,
            type bigint NOT NULL,
            fingerprint text COLLATE "C" NOT NULL,
            created_order bigint NOT NULL,
            created_at double precision NOT NULL,
            PRIMARY KEY (account_id, guid)
        );
        CREATE UNIQUE INDEX records_by_content ON records (account_id, type, fingerprint, created_order);

        -- A device's library. record_guid is the object's link (at most one record per object);
        -- the partial unique index makes a record link to at most one object per device.
        CREATE TABLE objects (
            account_id text COLLATE "C" NOT NULL,
            device_id text COLLATE "C" NOT NULL,
            local_id text COLLATE "C" NOT NULL,
        \(SchemaDialect.postgres.objectColumns)
            record_guid text COLLATE "C",
            PRIMARY KEY (account_id, device_id, local_id)
        );
        CREATE INDEX objects_by_content ON objects (account_id, device_id, type, fingerprint, local_id);
        CREATE INDEX objects_by_type ON objects (account_id, device_id, type, local_id);
        CREATE UNIQUE INDEX objects_by_record ON objects (account_id, device_id, record_guid) WHERE record_guid IS NOT NULL;

        -- A device's change history. details NULL: unavailable (a reset library).
        CREATE TABLE changes (
            account_id text COLLATE "C" NOT NULL,
            device_id text COLLATE "C" NOT NULL,
            seq bigint NOT NULL,
            created_at double precision NOT NULL,
            details text,
            PRIMARY KEY (account_id, device_id, seq)
        );
        CREATE INDEX changes_by_time ON changes (account_id, device_id, created_at, seq);
        """),
        // Migrations 2, 3 and 7 to 10 are the same on both engines: SharedMigrations.swift.
        SharedMigrations.journals(.postgres),
        SharedMigrations.mappingVersion(.postgres),
        // Migration 4: when each token was issued and last used (as SQLite's migration 4).
        (4, """
        ALTER TABLE tokens ADD COLUMN created_at double precision;
        ALTER TABLE tokens ADD COLUMN last_used_at double precision;
        UPDATE tokens t SET created_at = a.created_at FROM accounts a WHERE t.kind = 1 AND a.account_id = t.account_id;
        UPDATE tokens t SET created_at = d.created_at FROM devices d WHERE t.kind = 2 AND d.account_id = t.account_id AND d.device_id = t.device_id;
        """),
        // Migration 5: idempotency keys of POST requests (as SQLite's migration 5).
        (5, """
        CREATE TABLE idempotency_keys (
            owner_hash bytea NOT NULL,
            key text NOT NULL,
            account_id text,
            fingerprint bytea NOT NULL,
            answer bytea,
            applied boolean NOT NULL DEFAULT false,
            instance text NOT NULL DEFAULT '',
            created_at double precision NOT NULL,
            PRIMARY KEY (owner_hash, key)
        );
        CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
        CREATE INDEX idempotency_keys_account ON idempotency_keys (account_id);
        """),
        // Migration 6: keys and optional fingerprints (as SQLite's migration 6).
        (6, """
        ALTER TABLE objects ADD COLUMN pk_identifier text;
        ALTER TABLE objects ADD COLUMN key_a text COLLATE "C";
        ALTER TABLE objects ADD COLUMN creation_second bigint;
        UPDATE objects SET creation_second = floor(extract(epoch FROM upper(creation_date)::timestamptz))::bigint WHERE creation_date IS NOT NULL;
        CREATE INDEX objects_by_key ON objects (account_id, device_id, type, key_a) WHERE key_a IS NOT NULL;
        CREATE INDEX objects_by_link ON objects (account_id, record_guid) WHERE record_guid IS NOT NULL;
        CREATE TABLE record_keys (
            account_id text COLLATE "C" NOT NULL,
            guid text COLLATE "C" NOT NULL,
            type bigint NOT NULL,
            key_a text COLLATE "C" NOT NULL,
            PRIMARY KEY (account_id, guid, key_a)
        );
        CREATE INDEX record_keys_by_key ON record_keys (account_id, type, key_a);
        """),
        SharedMigrations.deviceSuccessors(.postgres),
        SharedMigrations.uploads(.postgres),
        SharedMigrations.smallerObjectIndexes(.postgres),
        SharedMigrations.indexSnapshot(.postgres),
        // Migration 11: webhooks, their events (the outbox) and the deliveries log (WebhookSchema).
        (11, WebhookSchema.postgres),
        // Migration 12: picker sessions of continuous selections (PickerSessionSchema.swift).
        SharedMigrations.pickerSessions(.postgres, version: 12),
        // Migration 13: the webhook events of a feed that wait or are in flight, by index, and a feed's mark for a check (WebhookSchema).
        (13, WebhookSchema.waitingEvents),
        // Migration 14: the compact layout of objects, links, records, record keys and changes (PostgresCompactSchema).
        (14, PostgresCompactSchema.migration),
        // Migration 15: a staging table per upload in parts, dropped when the upload goes (UploadStagingSchema).
        (15, UploadStagingSchema.migration),
        // Migration 16: the mapping log, other instances' mapping changes for an index to catch up with (MappingLogSchema).
        (16, MappingLogSchema.postgres),
        // Migration 17: objects numbered per device, links by record order and object number, hash indexes of fingerprints (PostgresNarrowSchema).
        (17, PostgresNarrowSchema.migration),
        // Migration 18: objects' heap pages full (fillfactor 100); objects and links repacked (PostgresFullPagesSchema).
        (18, PostgresFullPagesSchema.migration),
        // Migration 19: objects' and records' rows without padding, their append-only indexes full (PostgresPackedSchema).
        (19, PostgresPackedSchema.migration),
        // Migration 20: history details in binary; the fingerprints' hash indexes at their default fill (PostgresBinaryHistorySchema).
        (20, PostgresBinaryHistorySchema.migration),
        // Migration 21: uploads in flight have their staging tables indexed by part and local identifier (UploadStagingSchema).
        (21, UploadStagingSchema.partOrderMigration),
        // Migration 22: objects_by_content a B-tree of device and fingerprint prefix (PostgresDeviceContentIndexSchema).
        (22, PostgresDeviceContentIndexSchema.migration),
    ]

    static var latestVersion: Int { self.all.last?.version ?? 0 }

    /// Key of the session advisory lock that serialises migrations of every instance sharing the database.
    static let lockKey: Int64 = 0x436F_6E63_6F72_64   // "Concord"

    /// Brings the database to `latestVersion` under `pg_advisory_lock`, so several instances starting
    /// at once migrate it once; refuses a database written by a newer build.
    static func migrate(_ db: PGConnection) throws {
        _ = try db.query("SELECT pg_advisory_lock($1)", [.int(self.lockKey)])
        defer { _ = try? db.query("SELECT pg_advisory_unlock($1)", [.int(self.lockKey)]) }
        try db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version bigint PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        let current = Int(try db.scalarInt("SELECT max(version) FROM schema_migrations") ?? 0)
        guard current <= self.latestVersion else {
            throw PostgresStoreError(message: "database schema version \(current) is newer than this build knows (\(self.latestVersion)); run a newer concord")
        }
        for m in self.all where m.version > current {
            try db.execute("BEGIN")
            do {
                try db.execute(m.sql)
                try db.query("INSERT INTO schema_migrations (version) VALUES ($1)", [.int(Int64(m.version))])
                try db.execute("COMMIT")
            } catch {
                try? db.execute("ROLLBACK")
                throw error
            }
        }
    }
}
