extension SharedMigrations {
    /// The picker sessions of continuous selections (SQLite migration 17, PostgreSQL migration 12;
    /// the numbers differ, the table does not): per entry and session, the highest sequence applied
    /// and when. A session is forgotten a day after its last applied selection, and with its entry:
    /// the primary key's prefix finds an entry's and a journal's sessions, `picker_sessions_by_time`
    /// an account's forgotten ones.
    static func pickerSessions(_ d: SchemaDialect, version: Int) -> (version: Int, sql: String) {
        (version, """
        CREATE TABLE picker_sessions (
            \(d.accountColumn) NOT NULL,
            journal_id \(d.identifier) NOT NULL,
            entry_id \(d.identifier) NOT NULL,
            session \(d.identifier) NOT NULL,
            sequence \(d.integer) NOT NULL,
            used_at \(d.real) NOT NULL,
            PRIMARY KEY (\(d.account), journal_id, entry_id, session)
        \(d.tableEnd)
        CREATE INDEX picker_sessions_by_time ON picker_sessions (\(d.account), used_at);
        """)
    }
}
