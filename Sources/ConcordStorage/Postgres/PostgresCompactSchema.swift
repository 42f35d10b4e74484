/// Migration 14: the compact layout of the large tables (docs/scaling.md, "Storage layout").
///
/// - Accounts and devices get integer keys (`account_key`, `device_key`, identity columns filled for
///   the existing rows); `objects`, `links`, `records`, `record_keys` and `changes` are keyed by them
///   instead of repeating the account's and device's text IDs on every row. The small tables
///   (tokens, journals, uploads, idempotency keys, webhooks, picker sessions, settings) keep theirs.
/// - Record GUIDs are `uuid`, fingerprints `bytea` (`PostgresCompact.fingerprint`), an object's
///   canonical dates integer seconds (another spelling stays text, as sent), its media type NULL
///   for `image`.
/// - An object's link is a row of `links`, not a column of the object: a first mapping inserts
///   links (in record order) and never rewrites an object's row. `links`' primary key keeps "a
///   record links to at most one object per device", `links_by_object` "an object has at most one
///   link"; `records_by_content` stays unique.
/// - Per-table autovacuum settings so that vacuum (and the visibility map index-only scans need)
///   keeps up with bulk inserts; `objects` leaves room on its pages for updates in place.
///
/// The checks come first: a row the new layout cannot hold (a GUID that is not an upper-case UUID,
/// a row whose account or device is gone) stops the migration with an error naming the table and
/// the row, before anything changed. The runner wraps the migration in one transaction.
enum PostgresCompactSchema {
    static let migration = #"""
        CREATE OR REPLACE FUNCTION pg_temp.concord_fingerprint(t text) RETURNS bytea LANGUAGE sql IMMUTABLE AS $f$
            SELECT CASE WHEN t = '' THEN ''::bytea
                        WHEN s.b IS NOT NULL AND get_byte(s.b, 0) <> 0
                             AND rtrim(replace(translate(encode(s.b, 'base64'), '+/', '-_'), E'\n', ''), '=') = t THEN s.b
                        ELSE '\x00'::bytea || convert_to(t, 'UTF8') END
            FROM (SELECT CASE WHEN t ~ '^[A-Za-z0-9_-]{2,}$' AND length(t) % 4 <> 1
                              THEN decode(translate(t, '-_', '+/') || repeat('=', (4 - length(t) % 4) % 4), 'base64') END AS b) s
        $f$;
        CREATE OR REPLACE FUNCTION pg_temp.concord_second(d text) RETURNS bigint LANGUAGE sql IMMUTABLE AS $f$
            SELECT CASE WHEN d ~ '^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z$' THEN
                CASE WHEN substr(d, 9, 2)::int <= extract(day FROM make_date(substr(d, 1, 4)::int, substr(d, 6, 2)::int, 1) + interval '1 month - 1 day')
                     THEN extract(epoch FROM d::timestamptz)::bigint END END
        $f$;

        DO $check$
        DECLARE bad record;
        BEGIN
            SELECT account_id, guid INTO bad FROM records
            WHERE guid !~ '^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$' ORDER BY account_id, guid LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION 'migration 14: table records, row (account_id %, guid %): the GUID is not an upper-case UUID; nothing was changed', bad.account_id, bad.guid;
            END IF;
            SELECT account_id, guid, key_a INTO bad FROM record_keys
            WHERE guid !~ '^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$' ORDER BY account_id, guid LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION 'migration 14: table record_keys, row (account_id %, guid %, key_a %): the GUID is not an upper-case UUID; nothing was changed', bad.account_id, bad.guid, bad.key_a;
            END IF;
            SELECT account_id, device_id, local_id, record_guid INTO bad FROM objects
            WHERE record_guid !~ '^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$' ORDER BY account_id, device_id, local_id LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION 'migration 14: table objects, row (account_id %, device_id %, local_id %): its link % is not an upper-case UUID; nothing was changed', bad.account_id, bad.device_id, bad.local_id, bad.record_guid;
            END IF;
            SELECT account_id, device_id, local_id INTO bad FROM objects o
            WHERE NOT EXISTS (SELECT 1 FROM devices d WHERE d.account_id = o.account_id AND d.device_id = o.device_id) ORDER BY account_id, device_id, local_id LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION 'migration 14: table objects, row (account_id %, device_id %, local_id %): no such device; nothing was changed', bad.account_id, bad.device_id, bad.local_id;
            END IF;
            SELECT account_id, device_id, seq INTO bad FROM changes c
            WHERE NOT EXISTS (SELECT 1 FROM devices d WHERE d.account_id = c.account_id AND d.device_id = c.device_id) ORDER BY account_id, device_id, seq LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION 'migration 14: table changes, row (account_id %, device_id %, seq %): no such device; nothing was changed', bad.account_id, bad.device_id, bad.seq;
            END IF;
            SELECT account_id, guid INTO bad FROM records r
            WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.account_id = r.account_id) ORDER BY account_id, guid LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION 'migration 14: table records, row (account_id %, guid %): no such account; nothing was changed', bad.account_id, bad.guid;
            END IF;
            SELECT account_id, guid, key_a INTO bad FROM record_keys k
            WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.account_id = k.account_id) ORDER BY account_id, guid LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION 'migration 14: table record_keys, row (account_id %, guid %, key_a %): no such account; nothing was changed', bad.account_id, bad.guid, bad.key_a;
            END IF;
        END $check$;

        ALTER TABLE accounts ADD COLUMN account_key bigint GENERATED BY DEFAULT AS IDENTITY;
        ALTER TABLE accounts ADD CONSTRAINT accounts_account_key UNIQUE (account_key);
        ALTER TABLE devices ADD COLUMN device_key bigint GENERATED BY DEFAULT AS IDENTITY;
        ALTER TABLE devices ADD CONSTRAINT devices_device_key UNIQUE (device_key);

        -- One row per cloud record, keyed by its creation order ("the oldest"; the mapping index
        -- loads them in that order); new records append to both the key and records_by_guid
        -- (version 7 UUIDs increase). The old created_at was never read and is not kept.
        CREATE TABLE records_14 (
            account_key bigint NOT NULL,
            created_order bigint NOT NULL,
            record uuid NOT NULL,
            type smallint NOT NULL,
            fingerprint bytea NOT NULL
        ) WITH (\#(bulkWriteStorage));
        INSERT INTO records_14 (account_key, created_order, record, type, fingerprint)
            SELECT a.account_key, r.created_order, r.guid::uuid, r.type, pg_temp.concord_fingerprint(r.fingerprint)
            FROM records r JOIN accounts a ON a.account_id = r.account_id ORDER BY a.account_key, r.created_order;

        CREATE TABLE record_keys_14 (
            account_key bigint NOT NULL,
            record uuid NOT NULL,
            type smallint NOT NULL,
            key_a text COLLATE "C" NOT NULL
        ) WITH (autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_vacuum_scale_factor = 0.02);
        INSERT INTO record_keys_14 (account_key, record, type, key_a)
            SELECT a.account_key, k.guid::uuid, k.type, k.key_a FROM record_keys k JOIN accounts a ON a.account_id = k.account_id;

        -- A device's library. Dates: creation_second is the creation date's second (the wanted rule
        -- reads it), creation_date the text only when the second does not spell it exactly;
        -- modification_second the canonical modification date's second, modification_date any other
        -- spelling. media_type NULL is image.
        CREATE TABLE objects_14 (
            account_key bigint NOT NULL,
            device_key bigint NOT NULL,
        \#(Self.objectsTableTail)
        INSERT INTO objects_14 (account_key, device_key, creation_second, modification_second, type, has_adjustments, is_favorite,
                                app_created, local_id, fingerprint, media_type, creation_date, modification_date, title, members,
                                pk_identifier, key_a)
            SELECT d.account_key, d.device_key,
                   CASE WHEN o.creation_date IS NULL THEN NULL ELSE o.creation_second END,
                   pg_temp.concord_second(o.modification_date),
                   o.type, o.has_adjustments, o.is_favorite, o.app_created, o.local_id, pg_temp.concord_fingerprint(o.fingerprint),
                   NULLIF(o.media_type, 'image'),
                   CASE WHEN pg_temp.concord_second(o.creation_date) = o.creation_second THEN NULL ELSE o.creation_date END,
                   CASE WHEN pg_temp.concord_second(o.modification_date) IS NULL THEN o.modification_date END,
                   o.title, o.members, o.pk_identifier, o.key_a
            FROM objects o JOIN (SELECT a.account_key, v.device_key, v.account_id, v.device_id FROM devices v JOIN accounts a ON a.account_id = v.account_id) d
                ON d.account_id = o.account_id AND d.device_id = o.device_id
            ORDER BY d.account_key, d.device_key, o.local_id;

        -- Links: an object's record, one row each, in record order.
        CREATE TABLE links (
            account_key bigint NOT NULL,
            device_key bigint NOT NULL,
            record uuid NOT NULL,
            local_id text COLLATE "C" NOT NULL
        ) WITH (\#(bulkWriteStorage));
        INSERT INTO links (account_key, device_key, record, local_id)
            SELECT d.account_key, d.device_key, o.record_guid::uuid, o.local_id
            FROM objects o JOIN (SELECT a.account_key, v.device_key, v.account_id, v.device_id FROM devices v JOIN accounts a ON a.account_id = v.account_id) d
                ON d.account_id = o.account_id AND d.device_id = o.device_id
            WHERE o.record_guid IS NOT NULL
            ORDER BY d.account_key, o.record_guid, d.device_key;

        -- A device's change history. details NULL: unavailable (a reset library).
        CREATE TABLE changes_14 (
            account_key bigint NOT NULL,
            device_key bigint NOT NULL,
            seq bigint NOT NULL,
            created_at double precision NOT NULL,
            details text
        ) WITH (autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_vacuum_scale_factor = 0.05);
        INSERT INTO changes_14 (account_key, device_key, seq, created_at, details)
            SELECT d.account_key, d.device_key, c.seq, c.created_at, c.details
            FROM changes c JOIN (SELECT a.account_key, v.device_key, v.account_id, v.device_id FROM devices v JOIN accounts a ON a.account_id = v.account_id) d
                ON d.account_id = c.account_id AND d.device_id = c.device_id
            ORDER BY d.account_key, d.device_key, c.seq;

        DROP TABLE objects, records, record_keys, changes;
        ALTER TABLE records_14 RENAME TO records;
        ALTER TABLE record_keys_14 RENAME TO record_keys;
        ALTER TABLE objects_14 RENAME TO objects;
        ALTER TABLE changes_14 RENAME TO changes;

        ALTER TABLE records ADD CONSTRAINT records_pkey PRIMARY KEY (account_key, created_order);
        CREATE UNIQUE INDEX records_by_guid ON records (account_key, record);
        CREATE UNIQUE INDEX records_by_content ON records (account_key, type, fingerprint, created_order);
        ALTER TABLE record_keys ADD CONSTRAINT record_keys_pkey PRIMARY KEY (account_key, record, key_a);
        CREATE INDEX record_keys_by_key ON record_keys (account_key, type, key_a);
        ALTER TABLE objects ADD CONSTRAINT objects_pkey PRIMARY KEY (account_key, device_key, local_id);
        CREATE INDEX objects_by_content ON objects (account_key, device_key, type, fingerprint, local_id) WHERE fingerprint <> '';
        CREATE INDEX objects_by_type ON objects (account_key, device_key, type, local_id) WHERE type <> 1;
        CREATE INDEX objects_by_key ON objects (account_key, device_key, type, key_a) WHERE key_a IS NOT NULL;
        ALTER TABLE links ADD CONSTRAINT links_pkey PRIMARY KEY (account_key, record, device_key);
        CREATE UNIQUE INDEX links_by_object ON links (account_key, device_key, local_id);
        ALTER TABLE changes ADD CONSTRAINT changes_pkey PRIMARY KEY (account_key, device_key, seq);
        CREATE INDEX changes_by_time ON changes (account_key, device_key, created_at, seq);
        """#

    /// The storage settings of the tables bulk writes fill (records, links, objects): vacuumed and
    /// analysed after 2% of new or changed rows, and not throttled, so autovacuum keeps up with a
    /// library's upload. The same in migrations 14, 17 and 19.
    static let bulkWriteStorage = """
        autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_vacuum_scale_factor = 0.02,
                autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_limit = 2000
        """

    /// `objects`' columns after its keys, and its storage settings: the same in migrations 14 and 17.
    static let objectsTableTail = #"""
            creation_second bigint,
            modification_second bigint,
        \#(objectsDataColumns)
        ) WITH (fillfactor = 90, \#(bulkWriteStorage));
        """#

    /// `objects`' columns after its keys and its seconds, the same in migrations 14, 17 and 19 (which
    /// moves the seconds first).
    static let objectsDataColumns = #"""
            type smallint NOT NULL,
            has_adjustments boolean NOT NULL,
            is_favorite boolean NOT NULL,
            app_created boolean NOT NULL,
            local_id text COLLATE "C" NOT NULL,
            fingerprint bytea NOT NULL,
            media_type text,
            creation_date text,
            modification_date text,
            title text,
            members text NOT NULL,
            pk_identifier text,
            key_a text COLLATE "C"
        """#
}
