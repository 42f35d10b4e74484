import Foundation

/// The schema, as numbered migrations recorded in `schema_migrations`. Every key of account data
/// starts with `account_key` so the data can later be distributed by account. (The exceptions are
/// `tokens`, looked up by token hash before the account is known, and `accounts.account_id`.)
enum SQLiteMigrations {
    static let all: [(version: Int, sql: String)] = [
        (1, """
        CREATE TABLE settings (
            key TEXT PRIMARY KEY,
            value BLOB NOT NULL
        ) WITHOUT ROWID;

        -- account_key is the account's storage key; account_id the UUID clients see. Integer keys
        -- keep every index narrow (a 100 000-object library: 12 MB instead of 19, faster lookups).
        CREATE TABLE accounts (
            account_key INTEGER PRIMARY KEY,
            account_id TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL,
            created_at REAL NOT NULL,
            next_device_key INTEGER NOT NULL DEFAULT 1,
            next_record_order INTEGER NOT NULL DEFAULT 1
        );

        -- kind: 1 account token, 2 device token. Only the SHA-256 of a token is stored.
        CREATE TABLE tokens (
            token_hash BLOB PRIMARY KEY,
            kind INTEGER NOT NULL,
            account_key INTEGER NOT NULL,
            device_key INTEGER
        ) WITHOUT ROWID;
        CREATE INDEX tokens_by_owner ON tokens (account_key, device_key);

        -- authorization: 0 authorized, 1 limited, 2 denied.
        CREATE TABLE devices (
            account_key INTEGER NOT NULL,
            device_key INTEGER NOT NULL,
            device_id TEXT NOT NULL,
            name TEXT NOT NULL,
            platform TEXT,
            created_at REAL NOT NULL,
            authorization INTEGER NOT NULL DEFAULT 0,
            last_change_seq INTEGER NOT NULL DEFAULT 0,
            pruned_through_seq INTEGER NOT NULL DEFAULT 0,
            object_count INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (account_key, device_key)
        ) WITHOUT ROWID;
        CREATE UNIQUE INDEX devices_by_id ON devices (account_key, device_id);

        -- The shared mapping table: one row per cloud record. created_order gives "the oldest".
        CREATE TABLE records (
            account_key INTEGER NOT NULL,
            guid TEXT NOT NULL,
            type INTEGER NOT NULL,
            fingerprint TEXT NOT NULL,
            created_order INTEGER NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (account_key, guid)
        ) WITHOUT ROWID;
        CREATE UNIQUE INDEX records_by_content ON records (account_key, type, fingerprint, created_order);

        -- A device's library. record_guid is the object's link (at most one record per object);
        -- the partial unique index makes a record link to at most one object per device.
        CREATE TABLE objects (
            account_key INTEGER NOT NULL,
            device_key INTEGER NOT NULL,
            local_id TEXT NOT NULL,
        \(SchemaDialect.sqlite.objectColumns)
            record_guid TEXT,
            PRIMARY KEY (account_key, device_key, local_id)
        ) WITHOUT ROWID;
        CREATE INDEX objects_by_content ON objects (account_key, device_key, type, fingerprint, local_id);
        CREATE INDEX objects_by_type ON objects (account_key, device_key, type, local_id);
        CREATE UNIQUE INDEX objects_by_record ON objects (account_key, device_key, record_guid) WHERE record_guid IS NOT NULL;

        -- A device's change history. details NULL: unavailable (a reset library).
        CREATE TABLE changes (
            account_key INTEGER NOT NULL,
            device_key INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            created_at REAL NOT NULL,
            details TEXT,
            PRIMARY KEY (account_key, device_key, seq)
        ) WITHOUT ROWID;
        CREATE INDEX changes_by_time ON changes (account_key, device_key, created_at, seq);
        """),
        // Migrations 2, 3 and 7 to 10 are the same on both engines: SharedMigrations.swift.
        SharedMigrations.journals(.sqlite),
        SharedMigrations.mappingVersion(.sqlite),
        // Migration 4: when each token was issued and last used (tokens can be rotated and
        // revoked; the device list shows both). Tokens issued before it date from their owner.
        (4, """
        ALTER TABLE tokens ADD COLUMN created_at REAL;
        ALTER TABLE tokens ADD COLUMN last_used_at REAL;
        UPDATE tokens SET created_at = (SELECT a.created_at FROM accounts a WHERE a.account_key = tokens.account_key) WHERE kind = 1;
        UPDATE tokens SET created_at = (SELECT d.created_at FROM devices d WHERE d.account_key = tokens.account_key AND d.device_key = tokens.device_key) WHERE kind = 2;
        """),
        // Migration 5: idempotency keys of POST requests, per token (its hash), with the
        // request's fingerprint, its first answer (NULL while it runs), whether its write committed
        // (set inside that write) and the process that claimed it; deleted with their account.
        (5, """
        CREATE TABLE idempotency_keys (
            owner_hash BLOB NOT NULL,
            key TEXT NOT NULL,
            account_key INTEGER,
            fingerprint BLOB NOT NULL,
            answer BLOB,
            applied INTEGER NOT NULL DEFAULT 0,
            instance TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            PRIMARY KEY (owner_hash, key)
        ) WITHOUT ROWID;
        CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
        CREATE INDEX idempotency_keys_account ON idempotency_keys (account_key);
        """),
        // Migration 6: keys and optional fingerprints. An object keeps the
        // photoKitCloudIdentifier it was sent and its key's A (key_a; the key is (type, key_a)); ''
        // is the fingerprint of an object or record that has none (valid ones are 22 to 86
        // characters). creation_second is creationDate in whole seconds, for the wanted rule. A
        // record carries the keys of every object ever linked to it, in record_keys, kept when the
        // object goes (its device's deletion included); they go with the account.
        (6, """
        ALTER TABLE objects ADD COLUMN pk_identifier TEXT;
        ALTER TABLE objects ADD COLUMN key_a TEXT;
        ALTER TABLE objects ADD COLUMN creation_second INTEGER;
        UPDATE objects SET creation_second = CAST(strftime('%s', creation_date) AS INTEGER) WHERE creation_date IS NOT NULL;
        CREATE INDEX objects_by_key ON objects (account_key, device_key, type, key_a) WHERE key_a IS NOT NULL;
        CREATE INDEX objects_by_link ON objects (account_key, record_guid) WHERE record_guid IS NOT NULL;
        CREATE TABLE record_keys (
            account_key INTEGER NOT NULL,
            guid TEXT NOT NULL,
            type INTEGER NOT NULL,
            key_a TEXT NOT NULL,
            PRIMARY KEY (account_key, guid, key_a)
        ) WITHOUT ROWID;
        CREATE INDEX record_keys_by_key ON record_keys (account_key, type, key_a);
        """),
        SharedMigrations.deviceSuccessors(.sqlite),
        SharedMigrations.uploads(.sqlite),
        SharedMigrations.smallerObjectIndexes(.sqlite),
        SharedMigrations.indexSnapshot(.sqlite),
        // Migration 11: record GUIDs and fingerprints in their binary form (CompactText.swift):
        // an upper-case UUID as 16 bytes, a canonical base64url fingerprint as the bytes it encodes,
        // in `records`, `record_keys` and `objects` and so in every index holding them; any other
        // text stays as it is. Each converted row is rewritten once, in this one transaction. The
        // indexes over the converted columns are dropped first and the link index built again
        // after: a build sorts once, where keeping them would move every entry at a random place.
        // The content indexes come back in migration 12, in their new form.
        (11, """
        DROP INDEX objects_by_content;
        DROP INDEX records_by_content;
        DROP INDEX objects_by_link;
        UPDATE records SET guid = concord_compact(guid), fingerprint = concord_compact(fingerprint);
        UPDATE record_keys SET guid = concord_compact(guid);
        UPDATE objects SET fingerprint = concord_compact(fingerprint), record_guid = concord_compact(record_guid)
            WHERE fingerprint <> '' OR record_guid IS NOT NULL;
        CREATE UNIQUE INDEX objects_by_link ON objects (account_key, record_guid, device_key) WHERE record_guid IS NOT NULL;
        """),
        // Migration 12: the content indexes hold the first 4 bytes of a fingerprint, not all of it
        // (docs/scaling.md): lookups by content compare that prefix in the index and the
        // whole fingerprint in the row, which they read anyway (objects) or read by primary key
        // (records). Of a device's million SHA-256 fingerprints, another shares a given 4-byte
        // prefix with odds of 1 in 4 000; a text one (not canonical base64url) is cut at 4
        // characters. Either way a shared prefix costs a row read, never a wrong answer.
        (12, """
        DROP INDEX IF EXISTS objects_by_content;
        CREATE INDEX objects_by_content ON objects (account_key, device_key, type, substr(fingerprint, 1, 4), local_id) WHERE fingerprint <> '';
        DROP INDEX IF EXISTS records_by_content;
        CREATE UNIQUE INDEX records_by_content ON records (account_key, type, substr(fingerprint, 1, 4), created_order);
        """),
        // Migration 13: new history entries keep their details in binary (ChangeDetailsBinary.swift),
        // with the bytes their text form takes in details_bytes, which the history's byte bound
        // counts (NULL for the entries written before, which stay text and count their length).
        (13, "ALTER TABLE changes ADD COLUMN details_bytes INTEGER;"),
        // Migration 14: `image` as the empty media type and canonical dates as 5-byte seconds
        // (CompactDate in CompactText.swift); other dates stay text. creation_second is NULL where
        // the creation date's seconds say it (read as coalesce(creation_second, creation_date)).
        // Each object row is rewritten once.
        (14, """
        UPDATE objects SET media_type = CASE media_type WHEN 'image' THEN '' ELSE media_type END,
            creation_second = CASE WHEN typeof(concord_date(creation_date)) = 'blob' THEN NULL ELSE creation_second END,
            creation_date = concord_date(creation_date), modification_date = concord_date(modification_date);
        """),
        // Migration 15: records lose created_at, which nothing read: a record's GUID (a version 7
        // UUID) carries the time it was made, and created_order gives "the oldest".
        (15, "ALTER TABLE records DROP COLUMN created_at;"),
        // Migration 16: webhooks, their events (the outbox) and the deliveries log (WebhookSchema).
        (16, WebhookSchema.sqlite),
        // Migration 17: picker sessions of continuous selections (PickerSessionSchema.swift).
        SharedMigrations.pickerSessions(.sqlite, version: 17),
        // Migration 18: the webhook events of a feed that wait or are in flight, by index, and a feed's mark for a check (WebhookSchema).
        (18, WebhookSchema.waitingEvents),
        // Migration 19: `objects` keyed by its row number (docs/scaling.md, "SQLite with
        // PhotoKit-shaped identifiers"). A new row takes the next number, so rows append where a
        // random local identifier put them anywhere in a key of 43 bytes; the local identifier is
        // in one narrow unique index, and the content, key and link indexes carry the row number.
        // The rows are copied once, in (account, device, local identifier) order, so a device's
        // rows follow its identifiers' order; the indexes are built after the copy (one sort each).
        (19, """
        CREATE TABLE objects_by_row (
            account_key INTEGER NOT NULL,
            device_key INTEGER NOT NULL,
            local_id TEXT NOT NULL,
            type INTEGER NOT NULL,
            fingerprint TEXT NOT NULL,
            media_type TEXT NOT NULL,
            creation_date TEXT,
            modification_date TEXT,
            has_adjustments INTEGER NOT NULL,
            is_favorite INTEGER NOT NULL,
            title TEXT,
            members TEXT NOT NULL,
            app_created INTEGER NOT NULL,
            record_guid TEXT,
            pk_identifier TEXT,
            key_a TEXT,
            creation_second INTEGER
        );
        INSERT INTO objects_by_row (account_key, device_key, local_id, type, fingerprint, media_type, creation_date, modification_date,
                                    has_adjustments, is_favorite, title, members, app_created, record_guid, pk_identifier, key_a, creation_second)
            SELECT account_key, device_key, local_id, type, fingerprint, media_type, creation_date, modification_date,
                   has_adjustments, is_favorite, title, members, app_created, record_guid, pk_identifier, key_a, creation_second
            FROM objects ORDER BY account_key, device_key, local_id;
        DROP TABLE objects;
        ALTER TABLE objects_by_row RENAME TO objects;
        CREATE UNIQUE INDEX objects_by_local_id ON objects (account_key, device_key, local_id);
        CREATE INDEX objects_by_content ON objects (account_key, device_key, type, substr(fingerprint, 1, 4)) WHERE fingerprint <> '';
        CREATE INDEX objects_by_type ON objects (account_key, device_key, type, local_id) WHERE type <> 1;
        CREATE INDEX objects_by_key ON objects (account_key, device_key, type, key_a) WHERE key_a IS NOT NULL;
        CREATE UNIQUE INDEX objects_by_link ON objects (account_key, record_guid, device_key) WHERE record_guid IS NOT NULL;
        """),
        // Migration 20: objects_by_local_id holds a local identifier's first and last 8 characters,
        // not all of it (docs/scaling.md, "Storage layout"): an entry of ~28 bytes where a
        // PhotoKit identifier took ~56, so a batch of random identifiers dirties fewer of its
        // pages. Lookups compare both in the index and the whole identifier in the row; the first
        // 8 keep the byte order for pages of a library. No longer unique: putObjects updates the
        // rows it finds and inserts the others, in the one write transaction.
        (20, """
        DROP INDEX objects_by_local_id;
        CREATE INDEX objects_by_local_id ON objects (account_key, device_key, substr(local_id, 1, 8), substr(local_id, -8));
        """),
    ]

    static var latestVersion: Int { self.all.last?.version ?? 0 }

    /// Brings the database to `latestVersion`; refuses a database written by a newer build.
    static func migrate(_ db: Connection) throws {
        try db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
        let current = Int(try db.scalarInt("SELECT max(version) FROM schema_migrations") ?? 0)
        guard current <= self.latestVersion else {
            throw SQLiteStoreError(message: "database schema version \(current) is newer than this build knows (\(self.latestVersion)); run a newer concord")
        }
        for m in self.all where m.version > current {
            try db.transaction(immediate: true) {
                // Another server sharing the file may have migrated meanwhile.
                let now = Int(try db.scalarInt("SELECT max(version) FROM schema_migrations") ?? 0)
                guard now < m.version else { return }
                try db.execute(m.sql)
                try db.run("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                           [.int(Int64(m.version)), .text(ISO8601DateFormatter().string(from: Date()))])
            }
        }
    }
}
