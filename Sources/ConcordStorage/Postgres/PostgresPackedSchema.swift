/// Migration 19: `objects` and `records` without padding, their append-only indexes full
/// (docs/scaling.md, "Storage layout").
///
/// - `objects` is rebuilt with its 8-byte columns (`creation_second`, `modification_second`) first:
///   after the three `integer` keys of migration 18 they were padded to an 8-byte boundary, and the
///   row 4 bytes longer (8 after the row's own alignment, about every other row). Statements name
///   the columns; none reads them by position.
/// - `records`' `account_key` and `created_order` are `integer`, as `links`' `record_order` that
///   points at `created_order` already is (statements bind `int8` and compare across the widths):
///   8 bytes less per row and per `records_pkey` entry.
/// - Indexes whose entries only ever append get `fillfactor = 100` (a B-tree keeps 10 % of every
///   page it splits at the right end free by default): `objects_pkey` (object numbers count up per
///   device), `records_pkey` (creation order) and `records_by_guid` (version 7 UUIDs increase). The
///   hash indexes of fingerprints (`objects_by_content`, `records_by_content`) split a bucket when
///   the buckets hold 75 % of what fits on average; at 100 they hold more before splitting.
/// - `links_pkey` (account_key, record_order, device_key) splits at 50: the first device's links
///   come in record order (its mapping creates the records), so its pages fill at the right end; a
///   second device's links of the same records come later and land next to them, in every page.
///   At 90 nearly every page then split (about 60 % full at the end); at 50 each page keeps room
///   for a second device's links. An account linked on one device only pays half-full pages there.
///
/// The checks come first: a `records` key past `integer` stops the migration with an error naming
/// the row, before anything changed. The runner wraps the migration in one transaction: killed
/// halfway, the database keeps schema 18. The rebuild holds the tables' locks for the length of the
/// migration (some seconds a million rows), at startup.
enum PostgresPackedSchema {
    static let migration = #"""
        DO $check$
        DECLARE bad record;
        BEGIN
            SELECT account_key, created_order, record INTO bad FROM records
            WHERE greatest(account_key, created_order) > 2147483647 OR least(account_key, created_order) < -2147483648
            ORDER BY account_key, created_order LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION 'migration 19: table records, row (account_key %, created_order %, record %): a key past integer; nothing was changed',
                    bad.account_key, bad.created_order, bad.record;
            END IF;
        END $check$;

        CREATE TABLE objects_19 (
            creation_second bigint,
            modification_second bigint,
            account_key integer NOT NULL,
            device_key integer NOT NULL,
            object_no integer NOT NULL,
        \#(PostgresCompactSchema.objectsDataColumns)
        ) WITH (fillfactor = 100, \#(PostgresCompactSchema.bulkWriteStorage));
        INSERT INTO objects_19 (creation_second, modification_second, account_key, device_key, object_no, type, has_adjustments,
                                is_favorite, app_created, local_id, fingerprint, media_type, creation_date, modification_date, title,
                                members, pk_identifier, key_a)
            SELECT creation_second, modification_second, account_key, device_key, object_no, type, has_adjustments,
                   is_favorite, app_created, local_id, fingerprint, media_type, creation_date, modification_date, title,
                   members, pk_identifier, key_a
            FROM objects ORDER BY device_key, object_no;
        DROP TABLE objects;
        ALTER TABLE objects_19 RENAME TO objects;
        ALTER TABLE objects ADD CONSTRAINT objects_pkey PRIMARY KEY (device_key, object_no) WITH (fillfactor = 100);
        CREATE UNIQUE INDEX objects_by_local_id ON objects (device_key, local_id);
        CREATE INDEX objects_by_content ON objects USING hash (fingerprint) WITH (fillfactor = 100) WHERE fingerprint <> '';
        CREATE INDEX objects_by_type ON objects (device_key, type, local_id) WHERE type <> 1;
        CREATE INDEX objects_by_key ON objects (device_key, type, key_a) WHERE key_a IS NOT NULL;

        ALTER INDEX links_pkey SET (fillfactor = 50);

        -- The type change rewrites records and rebuilds its indexes with the options set first.
        ALTER INDEX records_pkey SET (fillfactor = 100);
        ALTER INDEX records_by_guid SET (fillfactor = 100);
        ALTER INDEX records_by_content SET (fillfactor = 100);
        ALTER TABLE records ALTER COLUMN account_key TYPE integer, ALTER COLUMN created_order TYPE integer;
        ANALYZE objects;
        ANALYZE records;
        """#
}
