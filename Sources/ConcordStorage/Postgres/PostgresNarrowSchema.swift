/// Migration 17: the narrow layout of objects, links and records (docs/scaling.md, "Storage layout").
///
/// - An object gets a number, `object_no`, from its device's counter (`devices.next_object_no`,
///   reserved per batch as rows arrive): `objects`' primary key is (device_key, object_no), so
///   new rows append to it. The local identifier (random, 40-odd bytes) stays in the row and in
///   one unique B-tree, `objects_by_local_id` (device_key, local_id): pages of a library and of the
///   wanted list are in its byte order.
/// - A link is (account_key, record_order, device_key, object_no): the record by its creation
///   order, the object by its number, instead of a UUID and the local identifier's text. Its
///   primary key (account_key, record_order, device_key) keeps "a record links to at most one
///   object per device" and appends as records are created; `links_by_object` (device_key,
///   object_no) keeps "an object has at most one link".
/// - Content lookups go through hash indexes of the fingerprint (`objects_by_content`,
///   `records_by_content`), a few bytes per row where a B-tree held the 32-byte fingerprint and
///   the key; the lookups check device and type on the rows found. Rows without a fingerprint are
///   not in them.
/// - `objects_by_type` and `objects_by_key` are keyed by the device alone (a device key belongs to
///   one account); `objects` keeps its `account_key` column for statements by account.
///
/// The checks come first: a link whose object or record is gone, or an object whose device is gone,
/// stops the migration with an error naming the table and the row, before anything changed. The
/// runner wraps the migration in one transaction: killed halfway, the database keeps schema 16.
enum PostgresNarrowSchema {
    static let migration = #"""
        DO $check$
        DECLARE bad record;
        BEGIN
            SELECT l.account_key, l.device_key, l.record, l.local_id INTO bad FROM links l
            WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.account_key = l.account_key AND r.record = l.record)
            ORDER BY l.account_key, l.device_key, l.local_id LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION 'migration 17: table links, row (account_key %, device_key %, record %, local_id %): no such record; nothing was changed', bad.account_key, bad.device_key, bad.record, bad.local_id;
            END IF;
            SELECT l.account_key, l.device_key, l.record, l.local_id INTO bad FROM links l
            WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.account_key = l.account_key AND o.device_key = l.device_key AND o.local_id = l.local_id)
            ORDER BY l.account_key, l.device_key, l.local_id LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION 'migration 17: table links, row (account_key %, device_key %, record %, local_id %): no such object; nothing was changed', bad.account_key, bad.device_key, bad.record, bad.local_id;
            END IF;
            SELECT o.account_key, o.device_key, o.local_id INTO bad FROM objects o
            WHERE NOT EXISTS (SELECT 1 FROM devices d JOIN accounts a ON a.account_id = d.account_id
                              WHERE d.device_key = o.device_key AND a.account_key = o.account_key)
            ORDER BY o.account_key, o.device_key, o.local_id LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION 'migration 17: table objects, row (account_key %, device_key %, local_id %): no such device; nothing was changed', bad.account_key, bad.device_key, bad.local_id;
            END IF;
        END $check$;

        ALTER TABLE devices ADD COLUMN next_object_no bigint NOT NULL DEFAULT 1;

        CREATE TABLE objects_17 (
            account_key bigint NOT NULL,
            device_key bigint NOT NULL,
            object_no bigint NOT NULL,
        \#(PostgresCompactSchema.objectsTableTail)
        INSERT INTO objects_17 (account_key, device_key, object_no, creation_second, modification_second, type, has_adjustments,
                                is_favorite, app_created, local_id, fingerprint, media_type, creation_date, modification_date, title,
                                members, pk_identifier, key_a)
            SELECT account_key, device_key, row_number() OVER (PARTITION BY device_key ORDER BY local_id), creation_second,
                   modification_second, type, has_adjustments, is_favorite, app_created, local_id, fingerprint, media_type,
                   creation_date, modification_date, title, members, pk_identifier, key_a
            FROM objects ORDER BY device_key, local_id;
        UPDATE devices d SET next_object_no = n.last + 1
            FROM (SELECT device_key, max(object_no) AS last FROM objects_17 GROUP BY device_key) n WHERE n.device_key = d.device_key;

        -- Links in record order, as they are created.
        CREATE TABLE links_17 (
            account_key bigint NOT NULL,
            record_order bigint NOT NULL,
            device_key bigint NOT NULL,
            object_no bigint NOT NULL
        ) WITH (\#(PostgresCompactSchema.bulkWriteStorage));
        INSERT INTO links_17 (account_key, record_order, device_key, object_no)
            SELECT l.account_key, r.created_order, l.device_key, o.object_no FROM links l
            JOIN records r ON r.account_key = l.account_key AND r.record = l.record
            JOIN objects_17 o ON o.device_key = l.device_key AND o.local_id = l.local_id
            ORDER BY l.account_key, r.created_order, l.device_key;

        DROP TABLE links, objects;
        ALTER TABLE objects_17 RENAME TO objects;
        ALTER TABLE links_17 RENAME TO links;

        ALTER TABLE objects ADD CONSTRAINT objects_pkey PRIMARY KEY (device_key, object_no);
        CREATE UNIQUE INDEX objects_by_local_id ON objects (device_key, local_id);
        CREATE INDEX objects_by_content ON objects USING hash (fingerprint) WHERE fingerprint <> '';
        CREATE INDEX objects_by_type ON objects (device_key, type, local_id) WHERE type <> 1;
        CREATE INDEX objects_by_key ON objects (device_key, type, key_a) WHERE key_a IS NOT NULL;
        ALTER TABLE links ADD CONSTRAINT links_pkey PRIMARY KEY (account_key, record_order, device_key);
        CREATE UNIQUE INDEX links_by_object ON links (device_key, object_no);
        DROP INDEX records_by_content;
        CREATE INDEX records_by_content ON records USING hash (fingerprint) WHERE fingerprint <> '';
        """#
}
