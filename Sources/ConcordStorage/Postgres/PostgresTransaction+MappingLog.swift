import ConcordDomain

/// The mapping log on PostgreSQL (`MappingLogWrites`, `MappingLogReads`): table `mapping_deltas`
/// (migration 16, `MappingLogSchema`), one row per write transaction that bumped an account's
/// mapping version, holding its changes (`MappingLogCodec`). Several instances share the database:
/// one whose index is a few versions behind applies these rows instead of reloading the account.
extension PostgresTransaction: MappingLogWrites, MappingLogReads {
    /// The versions of an account kept in the log: an instance further behind reloads. Bounded by
    /// count (with `MappingLogCodec.maxBytes` a row, at most 64 MiB an account; a 10 000-object
    /// change batch takes about 1.5 MB) so that the log stays a small part of the database.
    static let keptMappingLogVersions: Int64 = 16

    func appendMappingLog(version: Int64, changes: [UInt8]) throws {
        self.mappingLogBytesWritten += changes.count
        // One statement: the row, and the account's rows that fell out of the kept window.
        try self.db.query("""
            WITH pruned AS (DELETE FROM mapping_deltas WHERE account_id = $1 AND mapping_version <= $4)
            INSERT INTO mapping_deltas (account_id, mapping_version, changes) VALUES ($1, $2, $3)
            """, [.text(self.accountID), .int(version), .bytes(changes), .int(version - Self.keptMappingLogVersions)])
    }

    func mappingLog(after: Int64, through: Int64) throws -> [(version: Int64, changes: [UInt8])] {
        // All or nothing: the rows are read only when every version is there (the count is an
        // index-only look at the primary key), so a reader far behind does not fetch rows it
        // cannot use.
        var entries: [(version: Int64, changes: [UInt8])] = []
        try self.db.query("""
            SELECT mapping_version, changes FROM mapping_deltas
            WHERE account_id = $1 AND mapping_version > $2 AND mapping_version <= $3
              AND (SELECT count(*) FROM mapping_deltas WHERE account_id = $1 AND mapping_version > $2 AND mapping_version <= $3) = $3 - $2
            ORDER BY mapping_version
            """, [.text(self.accountID), .int(after), .int(through)]) { r in
            entries.append((r.int(0), r.blob(1)))
        }
        return entries
    }
}

/// Migration 16: the mapping log (`PostgresTransaction+MappingLog.swift`).
enum MappingLogSchema {
    /// Keyed by the account's public ID like the tables of its time; the rows go with the account
    /// (a trigger: no statement of the account's deletion needs to know of this table). The bytes
    /// are stored out of line uncompressed: they are read once or twice and pruned soon, and
    /// compressing them would cost the database CPU on every mapping write.
    static let postgres = """
        CREATE TABLE mapping_deltas (
            account_id text COLLATE "C" NOT NULL,
            mapping_version bigint NOT NULL,
            changes bytea NOT NULL,
            PRIMARY KEY (account_id, mapping_version)
        );
        ALTER TABLE mapping_deltas ALTER COLUMN changes SET STORAGE EXTERNAL;
        CREATE FUNCTION mapping_deltas_of_deleted_account() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            -- As text, and upper-case as the service spells its IDs: right whether accounts keeps
            -- its ID as text or as uuid.
            DELETE FROM mapping_deltas WHERE account_id IN (OLD.account_id::text, upper(OLD.account_id::text));
            RETURN OLD;
        END $$;
        CREATE TRIGGER accounts_drop_mapping_deltas AFTER DELETE ON accounts
            FOR EACH ROW EXECUTE FUNCTION mapping_deltas_of_deleted_account();
        """
}
