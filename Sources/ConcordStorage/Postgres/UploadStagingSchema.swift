import ConcordDomain

/// The staging of uploads in parts on PostgreSQL (`PostgresTransaction+Uploads`): a table per upload,
/// `upload_staging_<n>` (`n`: `uploads.staging`, from a sequence), created when the upload opens
/// and dropped when it goes (commit, deletion, expiry, its device's or account's deletion).
///
/// Why a table per upload: a million staged objects deleted row by row at the commit leave a
/// million dead tuples (81 MB for 100 000 × 2) until autovacuum gets there, and the database that
/// size; a dropped table leaves none. It is an ordinary, logged table: a part acknowledged survives
/// a crash of Concord or of PostgreSQL (an UNLOGGED table is emptied by PostgreSQL's crash
/// recovery), and a part rolled back leaves nothing (DDL is transactional). One partitioned table
/// with a partition per upload would cost the catalog the same, but creating and dropping a
/// partition locks the parent, which every account's uploads share; separate tables lock only
/// themselves. The catalog's cost is a few dozen rows per upload (not per part, not per object).
enum UploadStagingSchema {
    /// The name of staging table `number` (a bigint: no quoting needed).
    static func table(_ number: Int64) -> String { "upload_staging_\(number)" }

    /// The statements creating staging table `name` (`%1$s` in migration 15's text): the columns of
    /// `objects` after the local identifier and the part, keyed by local identifier (byte order,
    /// COLLATE "C") and part so that the commit reads them in order and finds an identifier two
    /// parts hold. An index by part and local identifier finds a part sent again and gives the
    /// commit the objects part by part (`uploadObjectPageInPartOrder`); one of albums and folders
    /// lets the commit's check of their members skip the assets (a scan of the whole upload
    /// otherwise). Autovacuum has nothing to do there: rows are inserted, and go with the table (a
    /// part sent again deletes its old rows, which go with the table too).
    ///
    /// `byPart`: the columns of the index by part; migration 15 keeps the statements it ran (an
    /// index of the part alone, which migration 21 replaces).
    static func createStatements(_ name: String, byPart: String = "part, local_id") -> [String] {
        [
            """
            CREATE TABLE \(name) (
                local_id text COLLATE "C" NOT NULL,
                part bigint NOT NULL,
            \(SchemaDialect.postgres.objectColumns)
                pk_identifier text COLLATE "C",
                PRIMARY KEY (local_id, part)
            ) WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false)
            """,
            "CREATE INDEX \(name)_by_part ON \(name) (\(byPart))",
            "CREATE INDEX \(name)_containers ON \(name) (local_id) WHERE type <> \(ObjectType.asset.rawValue)",
        ]
    }

    /// A staged object's columns, in the order the part's `unnest` writes them.
    static let columns = """
        local_id, part, type, fingerprint, media_type, creation_date, modification_date, has_adjustments, is_favorite, \
        title, members, app_created, pk_identifier
        """

    /// Migration 21: the staging tables of uploads in flight index their objects by part and local
    /// identifier, as new ones do (`createStatements`).
    static let partOrderMigration = """
        DO $$
        DECLARE u record;
        BEGIN
            FOR u IN SELECT staging FROM uploads ORDER BY staging LOOP
                EXECUTE format('DROP INDEX IF EXISTS %1$s_by_part', 'upload_staging_' || u.staging);
                EXECUTE format('CREATE INDEX %1$s_by_part ON %1$s (part, local_id)', 'upload_staging_' || u.staging);
            END LOOP;
        END
        $$;
        """

    /// Migration 15: `uploads.staging` numbers each upload's table; the uploads in flight get
    /// theirs, their staged objects move there, and `upload_objects` goes.
    static var migration: String {
        let create = self.createStatements("%1$s", byPart: "part")
        return """
        CREATE SEQUENCE upload_staging_numbers;
        ALTER TABLE uploads ADD COLUMN staging bigint NOT NULL DEFAULT nextval('upload_staging_numbers');
        ALTER SEQUENCE upload_staging_numbers OWNED BY uploads.staging;
        DO $$
        DECLARE u record;
        BEGIN
            FOR u IN SELECT account_id, upload_id, staging FROM uploads ORDER BY staging LOOP
                EXECUTE format('\(create[0])', 'upload_staging_' || u.staging);
                EXECUTE format('\(create[1])', 'upload_staging_' || u.staging);
                EXECUTE format('\(create[2])', 'upload_staging_' || u.staging);
                EXECUTE format('INSERT INTO %1$s (\(self.columns)) SELECT \(self.columns) FROM upload_objects WHERE account_id = $1 AND upload_id = $2',
                               'upload_staging_' || u.staging) USING u.account_id, u.upload_id;
            END LOOP;
        END
        $$;
        DROP TABLE upload_objects;
        """
    }
}
