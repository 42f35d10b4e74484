extension PostgresMigrations {
    /// Migration 2: the account's journals (API.md §6), their entries and the account's journal change
    /// feed — the same tables as SQLite's migration 2, keyed by `account_id` first like every other table.
    static let journals: (version: Int, sql: String) = (2, """
        -- version and created_seq are sequence numbers of the account's journal feed (never reused).
        CREATE TABLE journals (
            account_id text COLLATE "C" NOT NULL,
            journal_id text COLLATE "C" NOT NULL,
            title text NOT NULL,
            version bigint NOT NULL,
            entry_count bigint NOT NULL,
            created_seq bigint NOT NULL,
            created_at double precision NOT NULL,
            updated_at double precision NOT NULL,
            PRIMARY KEY (account_id, journal_id)
        );
        CREATE INDEX journals_by_creation ON journals (account_id, created_seq);

        -- photos: canonical cloud identifiers joined by "\\n" (they hold no control characters).
        CREATE TABLE journal_entries (
            account_id text COLLATE "C" NOT NULL,
            journal_id text COLLATE "C" NOT NULL,
            entry_id text COLLATE "C" NOT NULL,
            text text NOT NULL,
            photos text NOT NULL,
            version bigint NOT NULL,
            created_seq bigint NOT NULL,
            PRIMARY KEY (account_id, journal_id, entry_id)
        );
        CREATE INDEX journal_entries_by_creation ON journal_entries (account_id, journal_id, created_seq);

        -- The account's journal feed: the last change's seq and the pruning point.
        CREATE TABLE journal_feeds (
            account_id text COLLATE "C" PRIMARY KEY,
            last_change_seq bigint NOT NULL,
            pruned_through_seq bigint NOT NULL DEFAULT 0
        );

        CREATE TABLE journal_changes (
            account_id text COLLATE "C" NOT NULL,
            seq bigint NOT NULL,
            created_at double precision NOT NULL,
            details text NOT NULL,
            PRIMARY KEY (account_id, seq)
        );
        CREATE INDEX journal_changes_by_time ON journal_changes (account_id, created_at, seq);
        """)
}
