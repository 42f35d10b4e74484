/// How one engine spells the schema: its account and device keys and its column types. The
/// migrations both engines run in the same form (`SharedMigrations`) are written once with it.
///
/// SQLite keys an account by an integer `account_key` and a device by an integer `device_key`;
/// PostgreSQL by the `account_id` and `device_id` clients see. Identifiers on PostgreSQL are
/// `COLLATE "C"`: the contract's order is byte order, whatever the database's default collation.
struct SchemaDialect: Sendable {
    /// The account and device keys' column names, and each with its type (no constraint).
    let account: String, accountColumn: String
    let device: String, deviceColumn: String
    /// Column types: a whole number, free text, an identifier (compared and ordered as bytes),
    /// a flag and a time in seconds.
    let integer: String, text: String, identifier: String, boolean: String, real: String
    /// What closes a `CREATE TABLE` (SQLite's tables keyed by their primary key have no rowid).
    let tableEnd: String

    static let sqlite = SchemaDialect(
        account: "account_key", accountColumn: "account_key INTEGER",
        device: "device_key", deviceColumn: "device_key INTEGER",
        integer: "INTEGER", text: "TEXT", identifier: "TEXT", boolean: "INTEGER", real: "REAL",
        tableEnd: ") WITHOUT ROWID;"
    )

    static let postgres = SchemaDialect(
        account: "account_id", accountColumn: #"account_id text COLLATE "C""#,
        device: "device_id", deviceColumn: #"device_id text COLLATE "C""#,
        integer: "bigint", text: "text", identifier: #"text COLLATE "C""#, boolean: "boolean", real: "double precision",
        tableEnd: ");"
    )

    /// An object's columns after its keys, wherever an object is kept (`objects`, and an upload's
    /// `upload_objects`, which the commit copies into `objects`): one line each, indented as a column.
    var objectColumns: String {
        """
            type \(self.integer) NOT NULL,
            fingerprint \(self.identifier) NOT NULL,
            media_type \(self.text) NOT NULL,
            creation_date \(self.text),
            modification_date \(self.text),
            has_adjustments \(self.boolean) NOT NULL,
            is_favorite \(self.boolean) NOT NULL,
            title \(self.text),
            members \(self.text) NOT NULL,
            app_created \(self.boolean) NOT NULL,
        """
    }
}

/// The migrations both engines run in the same form, written once for both dialects. Their SQL is
/// pinned per engine by MigrationTextTests: a migration a database has run never changes.
enum SharedMigrations {
    /// Migration 2: the account's journals, their entries and the account's journal change feed.
    static func journals(_ d: SchemaDialect) -> (version: Int, sql: String) {
        (2, """
        -- version and created_seq are sequence numbers of the account's journal feed (never reused).
        CREATE TABLE journals (
            \(d.accountColumn) NOT NULL,
            journal_id \(d.identifier) NOT NULL,
            title \(d.text) NOT NULL,
            version \(d.integer) NOT NULL,
            entry_count \(d.integer) NOT NULL,
            created_seq \(d.integer) NOT NULL,
            created_at \(d.real) NOT NULL,
            updated_at \(d.real) NOT NULL,
            PRIMARY KEY (\(d.account), journal_id)
        \(d.tableEnd)
        CREATE INDEX journals_by_creation ON journals (\(d.account), created_seq);

        -- photos: canonical cloud identifiers joined by "\\n" (they hold no control characters).
        CREATE TABLE journal_entries (
            \(d.accountColumn) NOT NULL,
            journal_id \(d.identifier) NOT NULL,
            entry_id \(d.identifier) NOT NULL,
            text \(d.text) NOT NULL,
            photos \(d.text) NOT NULL,
            version \(d.integer) NOT NULL,
            created_seq \(d.integer) NOT NULL,
            PRIMARY KEY (\(d.account), journal_id, entry_id)
        \(d.tableEnd)
        CREATE INDEX journal_entries_by_creation ON journal_entries (\(d.account), journal_id, created_seq);

        -- The account's journal feed: the last change's seq and the pruning point.
        CREATE TABLE journal_feeds (
            \(d.accountColumn) PRIMARY KEY,
            last_change_seq \(d.integer) NOT NULL,
            pruned_through_seq \(d.integer) NOT NULL DEFAULT 0
        \(d.tableEnd)

        CREATE TABLE journal_changes (
            \(d.accountColumn) NOT NULL,
            seq \(d.integer) NOT NULL,
            created_at \(d.real) NOT NULL,
            details \(d.text) NOT NULL,
            PRIMARY KEY (\(d.account), seq)
        \(d.tableEnd)
        CREATE INDEX journal_changes_by_time ON journal_changes (\(d.account), created_at, seq);
        """)
    }

    /// Migration 3: the account's mapping version, bumped by every write transaction that changes its
    /// objects, links, records or devices; an in-memory mapping index remembers the version it reflects.
    static func mappingVersion(_ d: SchemaDialect) -> (version: Int, sql: String) {
        (3, "ALTER TABLE accounts ADD COLUMN mapping_version \(d.integer) NOT NULL DEFAULT 0;")
    }

    /// Migration 7: device successors: the device ID each device took over from (cleared when that
    /// one is deleted), and the one that took over from it.
    static func deviceSuccessors(_ d: SchemaDialect) -> (version: Int, sql: String) {
        (7, """
        ALTER TABLE devices ADD COLUMN replaces \(d.identifier);
        ALTER TABLE devices ADD COLUMN replaced_by \(d.identifier);
        """)
    }

    /// Migration 8: uploads in parts. An upload belongs to one device and expires a day after
    /// touched_at; its parts' objects have the columns of `objects`, keyed so that the commit reads
    /// them in local identifier order and finds one held by two parts.
    static func uploads(_ d: SchemaDialect) -> (version: Int, sql: String) {
        (8, """
        CREATE TABLE uploads (
            \(d.accountColumn) NOT NULL,
            upload_id \(d.identifier) NOT NULL,
            \(d.deviceColumn) NOT NULL,
            touched_at \(d.real) NOT NULL,
            PRIMARY KEY (\(d.account), upload_id)
        \(d.tableEnd)
        CREATE INDEX uploads_by_device ON uploads (\(d.account), \(d.device));
        CREATE TABLE upload_parts (
            \(d.accountColumn) NOT NULL,
            upload_id \(d.identifier) NOT NULL,
            part \(d.integer) NOT NULL,
            objects \(d.integer) NOT NULL,
            PRIMARY KEY (\(d.account), upload_id, part)
        \(d.tableEnd)
        CREATE TABLE upload_objects (
            \(d.accountColumn) NOT NULL,
            upload_id \(d.identifier) NOT NULL,
            local_id \(d.identifier) NOT NULL,
            part \(d.integer) NOT NULL,
        \(d.objectColumns)
            pk_identifier \(d.identifier),
            PRIMARY KEY (\(d.account), upload_id, local_id, part)
        \(d.tableEnd)
        CREATE INDEX upload_objects_by_part ON upload_objects (\(d.account), upload_id, part);
        """)
    }

    /// Migration 9: a smaller database (docs/scaling.md, "Storage layout and database size"). Three
    /// of the five secondary indexes of `objects` held an entry per object that no query needed:
    /// - objects_by_record (account, device, record_guid) and objects_by_link (account,
    ///   record_guid) indexed every link twice: one unique index (account, record_guid, device)
    ///   answers both (a record's link on one device, its links on every device) and keeps "a
    ///   record links to at most one object per device".
    /// - objects_by_type indexed every asset for the paged listing by type: assets are most of a
    ///   library, so they page through the primary key (in local identifier order already) and
    ///   only albums and folders (type <> 1) keep an index, which the album scan of a deleting
    ///   change batch needs.
    /// - objects_by_content indexed objects without a fingerprint under '' (a library uploaded
    ///   before hashing is mostly such): lookups by content are by non-empty fingerprints only.
    static func smallerObjectIndexes(_ d: SchemaDialect) -> (version: Int, sql: String) {
        (9, """
        DROP INDEX objects_by_record;
        DROP INDEX objects_by_link;
        CREATE UNIQUE INDEX objects_by_link ON objects (\(d.account), record_guid, \(d.device)) WHERE record_guid IS NOT NULL;
        DROP INDEX objects_by_type;
        CREATE INDEX objects_by_type ON objects (\(d.account), \(d.device), type, local_id) WHERE type <> 1;
        DROP INDEX objects_by_content;
        CREATE INDEX objects_by_content ON objects (\(d.account), \(d.device), type, fingerprint, local_id) WHERE fingerprint <> '';
        """)
    }

    /// Migration 10: the ID of the account's mapping index snapshot, recorded at the mapping version
    /// it reflects.
    static func indexSnapshot(_ d: SchemaDialect) -> (version: Int, sql: String) {
        (10, "ALTER TABLE accounts ADD COLUMN index_snapshot \(d.text);")
    }
}
