/// Migration 18: narrower keys and full heap pages for `objects` and `links` (docs/scaling.md,
/// "Storage layout").
///
/// - The keys of `objects` (`account_key`, `device_key`, `object_no`) and every column of `links`
///   are `integer` instead of `bigint`: a link row is 16 bytes of values instead of 32 (its header
///   is 24), and each entry of `links_pkey`, `links_by_object` and `objects_pkey` 8 bytes narrower.
///   The values come from identity columns and per-account and per-device counters
///   (`accounts.next_record_order`, `devices.next_object_no`), which stay `bigint`; 2^31 accounts,
///   devices, records of an account or objects ever numbered on a device is far past what a
///   deployment holds (a row past it is refused: "integer out of range"). Statements bind `int8`
///   and compare across the widths (PostgreSQL's integer operators do, through the indexes).
/// - `objects` was created with `fillfactor = 90`: a tenth of every heap page kept free so that an
///   update could stay on its page (HOT). Objects are inserted and deleted, and updated only when a
///   device sends a changed object, a few at a time; the free tenth was ~17 bytes of every row. It
///   is now 100.
/// - Changing the columns' types rewrites both tables at the new fill and builds every index anew:
///   a carried-over database also gets B-trees that random inserts had left 60-70 % full packed.
///   The rewrite holds the tables' locks for the length of the migration (some seconds a million
///   rows), at startup.
///
/// The checks come first: a key past `integer`, or a table or primary key not as migration 17 left
/// it, stops the migration with an error naming the table and the row, before anything changed.
/// The runner wraps the migration in one transaction: killed halfway, the database keeps schema 17.
enum PostgresFullPagesSchema {
    static let migration = #"""
        DO $check$
        DECLARE t text; bad record;
        BEGIN
            FOREACH t IN ARRAY ARRAY['objects.objects_pkey', 'links.links_pkey'] LOOP
                IF NOT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_class r ON r.oid = i.indrelid
                               WHERE r.relname = split_part(t, '.', 1) AND x.relname = split_part(t, '.', 2) AND i.indisprimary
                                 AND r.relnamespace = current_schema()::regnamespace) THEN
                    RAISE EXCEPTION 'migration 18: table %, primary key %: not found (schema 17''s layout expected); nothing was changed',
                        split_part(t, '.', 1), split_part(t, '.', 2);
                END IF;
            END LOOP;
            SELECT account_key, device_key, object_no, local_id INTO bad FROM objects
            WHERE greatest(account_key, device_key, object_no) > 2147483647 OR least(account_key, device_key, object_no) < -2147483648
            ORDER BY device_key, object_no LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION 'migration 18: table objects, row (account_key %, device_key %, object_no %, local_id %): a key past integer; nothing was changed',
                    bad.account_key, bad.device_key, bad.object_no, bad.local_id;
            END IF;
            SELECT account_key, record_order, device_key, object_no INTO bad FROM links
            WHERE greatest(account_key, record_order, device_key, object_no) > 2147483647
               OR least(account_key, record_order, device_key, object_no) < -2147483648
            ORDER BY account_key, record_order, device_key LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION 'migration 18: table links, row (account_key %, record_order %, device_key %, object_no %): a key past integer; nothing was changed',
                    bad.account_key, bad.record_order, bad.device_key, bad.object_no;
            END IF;
        END $check$;

        ALTER TABLE objects SET (fillfactor = 100);
        ALTER TABLE objects ALTER COLUMN account_key TYPE integer, ALTER COLUMN device_key TYPE integer,
                            ALTER COLUMN object_no TYPE integer;
        ALTER TABLE links ALTER COLUMN account_key TYPE integer, ALTER COLUMN record_order TYPE integer,
                          ALTER COLUMN device_key TYPE integer, ALTER COLUMN object_no TYPE integer;
        ANALYZE objects;
        ANALYZE links;
        """#
}
