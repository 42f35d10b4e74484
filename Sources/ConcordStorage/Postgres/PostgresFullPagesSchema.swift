/// Migration 18: full heap pages for `objects`, and `objects` and `links` repacked (docs/scaling.md,
/// "Storage layout").
///
/// - `objects` was created with `fillfactor = 90`: a tenth of every heap page kept free so that an
///   update could stay on its page (HOT). Objects are inserted and deleted, and updated only when a
///   device sends a changed object, a few at a time; the free tenth was 17 bytes of every row's
///   174, about 35 MB for a million photos on two devices. It is now 100.
/// - The two tables are rewritten in their primary key's order (`CLUSTER`), which builds every
///   index anew: the heap at its new fill, and B-trees filled by random inserts (a library sent in
///   changes batches, links of a second device interleaved with the first's in `links_pkey`) packed.
///   New rows fill them as before; only a database carried over gets the packing. The rewrite holds
///   the tables' locks for the length of the migration (some seconds a million rows), at startup.
///
/// The checks come first: a table or primary key not as migration 17 left it stops the migration
/// with an error naming it, before anything changed. The runner wraps the migration in one
/// transaction (`CLUSTER` of a named table runs in one): killed halfway, the database keeps schema 17.
enum PostgresFullPagesSchema {
    static let migration = #"""
        DO $check$
        DECLARE t text;
        BEGIN
            FOREACH t IN ARRAY ARRAY['objects.objects_pkey', 'links.links_pkey'] LOOP
                IF NOT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_class r ON r.oid = i.indrelid
                               WHERE r.relname = split_part(t, '.', 1) AND x.relname = split_part(t, '.', 2) AND i.indisprimary
                                 AND r.relnamespace = current_schema()::regnamespace) THEN
                    RAISE EXCEPTION 'migration 18: table %, primary key %: not found (schema 17''s layout expected); nothing was changed',
                        split_part(t, '.', 1), split_part(t, '.', 2);
                END IF;
            END LOOP;
        END $check$;

        ALTER TABLE objects SET (fillfactor = 100);
        CLUSTER objects USING objects_pkey;
        ALTER TABLE objects SET WITHOUT CLUSTER;
        CLUSTER links USING links_pkey;
        ALTER TABLE links SET WITHOUT CLUSTER;
        ANALYZE objects;
        ANALYZE links;
        """#
}
