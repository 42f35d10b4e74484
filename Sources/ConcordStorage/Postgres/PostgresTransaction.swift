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
    /// Rows of `objects`, `records` and `links` this transaction wrote (`TableStatistics`); counted
    /// by the object and record concerns' writes.
    var objectRowsWritten = 0, recordRowsWritten = 0, linkRowsWritten = 0
    /// Links this transaction set by the object numbers it was given (`setLinks(_:_:rows:)`; tests).
    var linksSetByNumber = 0
    /// Bytes this transaction appended to the mapping log (`PostgresStore.logWritten`).
    var mappingLogBytesWritten = 0
    /// Creation orders of the records this transaction inserted, by GUID bytes: their links take
    /// them without looking the records up again (`PostgresTransaction+Records`).
    var insertedRecordOrders: [[UInt8]: Int64] = [:]
    /// Numbers of the objects this transaction's last lookup by local identifier found unlinked:
    /// their links are inserted without probing `objects` again (`PostgresTransaction+Records`).
    let unlinkedObjects = UnlinkedObjectNumbers()
    /// What this transaction's lookups by local identifier found on a device: `putObjects` does not probe again.
    let lookedUpObjects = LookedUpObjectNumbers()
    /// The account's and its devices' integer keys (migration 14), looked up once per transaction.
    private var accountKeyFound: Int64?
    private var deviceKeysFound: [String: Int64] = [:]
    /// A read transaction: one snapshot, nothing written.
    let readOnly: Bool
    /// The account's mapping version, read with a device in a read transaction (`device(_:)`): it
    /// cannot change within the read's snapshot.
    var knownMappingVersion: Int64?
    /// Whether this write transaction plans its statements generically (`planGenerically`).
    private var plansGenerically = false

    init(_ db: PGConnection, accountID: String, readOnly: Bool = false) {
        self.db = db
        self.accountID = accountID
        self.readOnly = readOnly
    }

    func add(observer: any TransactionObserver) { self.observers.add(observer) }
    var changedMapping: Bool { self.observers.changedMapping }

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

    /// From here to the commit, each prepared statement runs on its generic plan, made once per
    /// connection, rather than on a plan made for each call's values. Planned for a batch's own
    /// arrays, a lookup of thousands of fingerprints read the whole `records` table into a hash
    /// join; the generic plans of the mapping writes' statements probe indexes one value at a time
    /// whatever the arrays hold (`PostgresGenericPlanTests` checks them). Called by the mapping
    /// writes' methods; a read transaction keeps the default (its BEGIN may not have been sent yet,
    /// `PGConnection.deferBegin`).
    func planGenerically() throws {
        guard !self.plansGenerically, !self.readOnly else { return }
        try self.db.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        self.plansGenerically = true
    }


    /// The key no account or device has: a statement given it matches no row.
    static let noKey: Int64 = -1

    /// The transaction's account's `account_key` (`noKey` when there is no such account).
    func accountKey() throws -> Int64 {
        if let key = self.accountKeyFound { return key }
        guard let key = try self.db.scalarInt("SELECT account_key FROM accounts WHERE account_id = $1", [.text(self.accountID)]) else { return Self.noKey }
        self.accountKeyFound = key
        return key
    }

    /// A device's `account_key` and `device_key` (`noKey` for what does not exist): one query the
    /// first time in a transaction. Keys are never reused, so one remembered after its device was
    /// deleted matches no row.
    func keys(_ device: DeviceRef) throws -> (account: Int64, device: Int64) {
        let own = device.accountID == self.accountID
        if own, let account = self.accountKeyFound, let key = self.deviceKeysFound[device.deviceID] { return (account, key) }
        var found: (account: Int64, device: Int64?)?
        try self.db.query("""
            SELECT a.account_key, d.device_key FROM accounts a LEFT JOIN devices d ON d.account_id = a.account_id AND d.device_id = $2
            WHERE a.account_id = $1
            """, [.text(device.accountID), .text(device.deviceID)]) { r in found = (r.int(0), r.isNull(1) ? nil : r.int(1)) }
        guard let found else { return (Self.noKey, Self.noKey) }
        if own { self.accountKeyFound = found.account }
        guard let key = found.device else { return (found.account, Self.noKey) }
        if own { self.deviceKeysFound[device.deviceID] = key }
        return (found.account, key)
    }

    /// `keys(_:)` for a write: a device that does not exist is `notFound`.
    func writeKeys(_ device: DeviceRef) throws -> (account: Int64, device: Int64) {
        let keys = try self.keys(device)
        guard keys.device != Self.noKey else { throw DomainError.notFound(message: "No such device.") }
        return keys
    }

    /// Columns of an object row followed by its link and linked record (`PostgresObjectRows`).
    static let objectColumns = PostgresObjectRows.columns
    static let linkJoin = PostgresObjectRows.joins
}
