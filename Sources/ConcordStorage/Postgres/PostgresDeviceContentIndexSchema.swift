/// Migration 22: `objects_by_content` keyed by device and the fingerprint's first 3 bytes
/// (docs/scaling.md, "Storage layout").
///
/// The hash index of migrations 17–20 spread every device's fingerprints over all of its buckets:
/// a batch of new objects on one device touched pages across the whole index, every device's of
/// every account, and with PostgreSQL's default `shared_buffers` (128 MB) most of them had left the
/// buffer cache since the batch before. A B-tree keyed by `(device_key, first 3 bytes)` keeps a
/// device's entries together, so a batch touches its own device's part: at 1M on the measured
/// device and 1M on each of two more, ten batches of 10 000 read a fifth of the pages from outside
/// the buffer cache. Three bytes, not four: the device's 4-byte key and a 3-byte `bytea` (its
/// 1-byte header) fill 8 bytes, an entry 16 with its header where a fourth byte made it 24. As
/// SQLite's `objects_by_content` (its migration 12), lookups compare the prefix in the index and
/// the whole fingerprint, device and type in the rows found; a fingerprint that shares its prefix
/// with another of the device (about one in seventeen at a million) only costs a row read more.
///
/// Nothing here can meet a row it cannot hold, so there is no check; the runner wraps it in one
/// transaction (killed halfway, the database keeps schema 21). The build holds `objects`' lock for
/// a few seconds (1.6 s for 3M objects), at startup.
enum PostgresDeviceContentIndexSchema {
    static let migration = """
        DROP INDEX objects_by_content;
        CREATE INDEX objects_by_content ON objects (device_key, substring(fingerprint from 1 for 3)) WHERE fingerprint <> '';
        """
}
