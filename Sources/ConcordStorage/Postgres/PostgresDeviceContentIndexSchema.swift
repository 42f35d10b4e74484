/// Migration 22: `objects_by_content` keyed by device and the fingerprint's first 4 bytes
/// (docs/scaling.md, "Storage layout").
///
/// The hash index of migrations 17–20 spread every device's fingerprints over all of its buckets:
/// a batch of 10 000 new objects on one device touched pages across the whole index, that of every
/// account (76 MB at 1M × 2 plus two accounts of 300k × 2), and with PostgreSQL's default
/// `shared_buffers` (128 MB) most of them had left the buffer cache since the last batch. A B-tree
/// keyed by `(device_key, first 4 bytes)` keeps a device's entries together (about 28 bytes each,
/// as the hash index's), so a batch touches only its device's part: measured at 1M on one device and
/// 1M on each of two others, the insert statement read 21 000 pages from outside the buffer cache
/// instead of 95 000. As SQLite's `objects_by_content` (its migration 10), lookups compare the
/// prefix in the index and the whole fingerprint, device and type in the rows found; a device's
/// fingerprints sharing a 4-byte prefix (one in 4 billion a pair) only cost a row read more.
///
/// Nothing here can meet a row it cannot hold, so there is no check; the runner wraps it in one
/// transaction (killed halfway, the database keeps schema 21). The build holds `objects`' lock for
/// some seconds a million rows, at startup.
enum PostgresDeviceContentIndexSchema {
    static let migration = """
        DROP INDEX objects_by_content;
        CREATE INDEX objects_by_content ON objects (device_key, substring(fingerprint from 1 for 4)) WHERE fingerprint <> '';
        """
}
