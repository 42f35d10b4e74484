import Foundation

/// A storage engine (SQLite or PostgreSQL). Synchronous and thread-safe.
///
/// Every transaction is scoped: server-wide state (settings, who a token belongs to, creating an
/// account) or ONE account. An account's write transaction is serialised with every other writer of
/// that account — SQLite: `BEGIN IMMEDIATE` on the single writer connection; PostgreSQL: the
/// account's advisory lock, taken once when the transaction begins, so it holds across every
/// instance sharing the database. A body commits when it returns and rolls back when it throws.
/// Reads never take a write lock and see one snapshot.
public protocol ConcordStore: AnyObject, Sendable {
    func readServer<T>(_ body: (any ServerReadTransaction) throws -> T) throws -> T
    func writeServer<T>(_ body: (any ServerWriteTransaction) throws -> T) throws -> T
    func read<T>(account accountID: String, _ body: (any AccountReadTransaction) throws -> T) throws -> T
    func write<T>(account accountID: String, _ body: (any AccountWriteTransaction) throws -> T) throws -> T
    /// True when the database answers a trivial read right now (for `GET /ready`). May block briefly.
    func ping() -> Bool
    /// Closes every connection once the transactions in flight end; later calls throw `unavailable`.
    func close()
    /// Announces committed change-feed entries (this store's writes, and other instances' where the
    /// engine can hear of them), for long-polls.
    var feedSignals: FeedSignals { get }
    /// Whether other processes may use the same database (PostgreSQL), or this process has it to
    /// itself (SQLite: a request claimed by an earlier process is not running any more).
    var isSharedAcrossProcesses: Bool { get }
}

// The transactions below are compositions of the concern protocols beside this file, one file per
// concern, each matched by one file per engine (`SQLiteTransaction+Devices.swift`, …). A new
// storage method goes on its concern's protocol; a new concern gets its own pair of protocols
// and is added to the composition here.

/// Server-wide reads: tokens and settings.
public protocol ServerReadTransaction: AnyObject, TokenReads, WebhookReads {}

/// Server-wide writes (serialised with each other): tokens, settings, new accounts, idempotency keys.
public protocol ServerWriteTransaction: ServerReadTransaction, TokenWrites, IdempotencyKeyWrites, WebhookWrites {}

/// Batch reads of one account (`accountID`), its libraries, mapping table and journals. Every list
/// argument is answered in one round trip; missing things are omitted. No method takes an account:
/// each reads and writes this transaction's own (`accountID`); a `DeviceRef` argument names a
/// device of it.
public protocol AccountReadTransaction: AnyObject, MappingReads, MappingVersionReads, DeviceReads, ObjectReads,
                                        RecordReads, HistoryReads, JournalReads, WebhookReads {
    /// The account this transaction is scoped to.
    var accountID: String { get }
}

/// Batch writes of one account, inside its one write transaction.
public protocol AccountWriteTransaction: AccountReadTransaction, MappingVersionWrites, DeviceWrites, ObjectWrites, MappingObjectReads,
                                         RecordWrites, HistoryWrites, UploadWrites, IdempotencyAppliedWrites,
                                         JournalWrites, WebhookWrites {
    /// Adds an observer told of every mapping change and feed append this transaction makes from now on.
    func add(observer: any TransactionObserver)
    /// Whether this transaction has changed the account's mapping tables so far (made any change
    /// its observers hear of as a `MappingMutation`).
    var changedMapping: Bool { get }
}
