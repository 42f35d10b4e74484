extension SQLiteMigrations {
    /// Migration 2: the account's journals (API.md §6), their entries and the account's journal change feed.
    /// Keys start with `account_key` (the account's integer storage key), like every other table.
    static let journals: (version: Int, sql: String) = (2, """
        -- version and created_seq are sequence numbers of the account's journal feed (never reused).
        CREATE TABLE journals (
            account_key INTEGER NOT NULL,
            journal_id TEXT NOT NULL,
            title TEXT NOT NULL,
            version INTEGER NOT NULL,
            entry_count INTEGER NOT NULL,
            created_seq INTEGER NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (account_key, journal_id)
        ) WITHOUT ROWID;
        CREATE INDEX journals_by_creation ON journals (account_key, created_seq);

        -- photos: canonical cloud identifiers joined by "\\n" (they hold no control characters).
        CREATE TABLE journal_entries (
            account_key INTEGER NOT NULL,
            journal_id TEXT NOT NULL,
            entry_id TEXT NOT NULL,
            text TEXT NOT NULL,
            photos TEXT NOT NULL,
            version INTEGER NOT NULL,
            created_seq INTEGER NOT NULL,
            PRIMARY KEY (account_key, journal_id, entry_id)
        ) WITHOUT ROWID;
        CREATE INDEX journal_entries_by_creation ON journal_entries (account_key, journal_id, created_seq);

        -- The account's journal feed: the last change's seq and the pruning point.
        CREATE TABLE journal_feeds (
            account_key INTEGER PRIMARY KEY,
            last_change_seq INTEGER NOT NULL,
            pruned_through_seq INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;

        CREATE TABLE journal_changes (
            account_key INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            created_at REAL NOT NULL,
            details TEXT NOT NULL,
            PRIMARY KEY (account_key, seq)
        ) WITHOUT ROWID;
        CREATE INDEX journal_changes_by_time ON journal_changes (account_key, created_at, seq);
        """)
}
