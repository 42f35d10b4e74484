import ConcordDomain
import Foundation

/// The store's operations on one PostgreSQL connection inside one transaction. Every list is bound
/// as one array parameter (`= ANY($n)`, `unnest(...)`), so a batch is one statement and one round trip.
/// Serialising writers is `PostgresStore`'s job: it takes the account's (or the settings') advisory
/// lock once, before the body runs, so no method here needs to remember it.
/// This file holds the class, its locks and what every concern shares; the operations are in one
/// file per storage concern (`PostgresTransaction+Devices`, `+Objects`, `+Records`, `+Mapping`,
/// `+History`, `+Uploads`, `+Idempotency`, `+Journals`), as the domain's protocols are.
final class PostgresTransaction: AccountWriteTransaction, ServerWriteTransaction {
    let db: PGConnection
    /// The account this transaction is scoped to ("" for a server-wide one).
    let accountID: String
    /// Told of each mapping change and feed append (`TransactionObservers`).
    let observers = TransactionObservers()
    /// Rows of `objects` and `records` this transaction wrote (`TableStatistics`); counted by the
    /// object and record concerns' writes.
    var objectRowsWritten = 0, recordRowsWritten = 0
    /// A read transaction: one snapshot, nothing written.
    let readOnly: Bool
    /// The account's mapping version, read with a device in a read transaction (`device(_:)`): it
    /// cannot change within the read's snapshot.
    var knownMappingVersion: Int64?

    init(_ db: PGConnection, accountID: String, readOnly: Bool = false) {
        self.db = db
        self.accountID = accountID
        self.readOnly = readOnly
    }

    func add(observer: any TransactionObserver) { self.observers.add(observer) }

    /// Key space of the advisory locks: (class, hash) pairs, so account and settings locks never collide.
    private static let accountLockClass: Int64 = 1, settingsLockClass: Int64 = 2

    /// Serialises this write transaction with every other writer of its account, on this instance or
    /// another (held until commit); each statement after it sees what earlier writers committed.
    func lockAccount() throws {
        try self.db.query("SELECT pg_advisory_xact_lock($1::int4, hashtext($2))", [.int(Self.accountLockClass), .text(self.accountID)])
    }

    /// Serialises server-wide writes (settings, new accounts) with each other.
    func lockSettings() throws {
        try self.db.query("SELECT pg_advisory_xact_lock($1::int4, 0)", [.int(Self.settingsLockClass)])
    }

    // MARK: - Shared by the concern files

    /// Columns of an object row followed by its linked record's type and fingerprint (LEFT JOIN).
    static let objectColumns = StorageRows.objectColumns
    static let linkJoin = "LEFT JOIN records r ON r.account_id = o.account_id AND r.guid = o.record_guid"
}
