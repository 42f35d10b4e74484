import ConcordDomain
import Testing

@testable import ConcordStorage

/// How PostgreSQL's failures reach clients: a full disk, a read-only database or an
/// I/O error is 507 insufficientStorage (nothing stored); a lost or overloaded server is 503;
/// a value it cannot store is 400; anything else is 500. (A real full disk is exercised with
/// SQLite on a tmpfs in StorageFullTests; PostgreSQL's own disk cannot be filled from a test.)
@Suite struct StorageErrorMappingTests {
    @Test(arguments: [
        ("53100", false, "insufficientStorage"),   // disk_full
        ("25006", false, "insufficientStorage"),   // read_only_sql_transaction
        ("58030", false, "insufficientStorage"),   // io_error
        ("53200", false, "unavailable"),           // out_of_memory
        ("53300", false, "unavailable"),           // too_many_connections
        ("57014", false, "unavailable"),           // query_canceled (statement timeout)
        ("40001", false, "unavailable"),           // serialization_failure past the retries
        ("", true, "unavailable"),                 // connection lost
        ("22021", false, "badRequest"),            // character_not_in_repertoire (NUL)
        ("42P01", false, "internalError"),         // undefined_table: a bug
    ])
    func postgresFailuresMapToTheContractsErrors(_ sqlState: String, _ lost: Bool, _ name: String) {
        let error = PostgresStore.domainError(PostgresError(sqlState: sqlState, message: "m", connectionLost: lost))
        #expect(error.name == name)
        // Its status (507 for insufficientStorage) is the app's to give (ErrorMapperTests).
    }
}
