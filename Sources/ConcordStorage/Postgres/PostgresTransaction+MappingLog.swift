import ConcordDomain

/// The mapping log on PostgreSQL (`MappingLogWrites`, `MappingLogReads`): table `mapping_deltas`
/// (migration 16, `MappingLogSchema`), one row per write transaction that bumped an account's
/// mapping version, holding its changes (`MappingLogCodec`). Several instances share the database:
/// one whose index is a few versions behind applies these rows instead of reloading the account.
extension PostgresTransaction: MappingLogWrites, MappingLogReads {
    /// The versions of an account kept in the log: an instance further behind reloads. Bounded by
    /// count and by bytes (a 10 000-object change batch takes about 1.1 MB): the newest versions
    /// whose changes together take at most `keptMappingLogBytes`, at most 16 of them, and always
    /// the newest, so that the log stays a small part of the database (its TOAST held 11 MB of 16
    /// versions at a million objects; an instance a few writes behind still catches up).
    static let keptMappingLogVersions: Int64 = 16
    static let keptMappingLogBytes: Int64 = 2 << 20

    func appendMappingLog(version: Int64, changes: [UInt8]) throws {
        self.mappingLogBytesWritten += changes.count
        // One statement: the row, and the account's rows that fell out of the kept window (by count,
        // or by bytes counted from the newest down, this row's first; `octet_length` of a value
        // stored out of line uncompressed reads its pointer, not its bytes).
        try self.db.query("""
            WITH pruned AS (
                DELETE FROM mapping_deltas WHERE account_id = $1 AND (mapping_version <= $4 OR mapping_version IN (
                    SELECT k.mapping_version FROM (
                        SELECT mapping_version, sum(octet_length(changes)) OVER (ORDER BY mapping_version DESC) AS kept
                        FROM mapping_deltas WHERE account_id = $1 AND mapping_version > $4
                    ) k WHERE k.kept + $5 > $6))
            )
            INSERT INTO mapping_deltas (account_id, mapping_version, changes) VALUES ($1, $2, $3)
            """, [.text(self.accountID), .int(version), .bytes(changes), .int(version - Self.keptMappingLogVersions),
                  .int(Int64(changes.count)), .int(Self.keptMappingLogBytes)])
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
