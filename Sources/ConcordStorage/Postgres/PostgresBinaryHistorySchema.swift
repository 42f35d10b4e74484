/// Migration 20: the history's details in binary, the fingerprints' hash indexes at their default
/// fill (docs/scaling.md, "Storage layout").
///
/// - `changes` gains `details_binary` (`ChangeDetailsBinary`, SQLite's form since its migration 13:
///   PhotoKit's `UUID/L0/001` in 17 bytes, not a 46-byte text line) and `details_bytes`, the text
///   form's size, which the history's byte bound counts on both engines. New entries are written
///   binary with `details` NULL; older ones keep their text (both NULL: no details). Adding
///   nullable columns rewrites nothing.
/// - `objects_by_content` and `records_by_content` are rebuilt at the hash default (fill 75):
///   at 100 (migration 19) most buckets grew an overflow page, every insert walked it and every
///   split moved a longer chain; growing one to 2M fingerprints took 40 % more time (a 10 000-row
///   insert read 9× the pages), for 7 % less space. A rebuilt hash index is sized for its rows.
///
/// Nothing here can meet a row it cannot hold, so there is no check; the runner wraps it in one
/// transaction (killed halfway, the database keeps schema 19). The rebuilds hold the tables' locks
/// for some seconds a million rows, at startup.
enum PostgresBinaryHistorySchema {
    static let migration = """
        ALTER TABLE changes ADD COLUMN details_binary bytea, ADD COLUMN details_bytes integer;
        ALTER INDEX objects_by_content RESET (fillfactor);
        REINDEX INDEX objects_by_content;
        ALTER INDEX records_by_content RESET (fillfactor);
        REINDEX INDEX records_by_content;
        """
}
