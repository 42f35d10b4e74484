import Foundation

// What the domain asks of an in-memory mapping index, and what such an index asks of the place its
// snapshots live. The index itself (hash tables, arenas, admission, snapshot files) is
// ConcordMappingIndex's `MappingIndex`; the app wires it into the service. The domain only knows
// these protocols: its rules read `MappingReads`, its writes report `MappingMutation`s.

/// An in-memory cache of accounts' mapping tables that answers `MappingReads` exactly as the
/// storage snapshot that asks would. Storage stays the source of truth: every account has a mapping
/// version in storage, bumped by each write that changes its mapping; the service announces each
/// such write before it commits (`expect`) and hands over its changes after (`finish`).
public protocol MappingCache: AnyObject, Sendable {
    /// Runs `body` on the account's mapping reads at the transaction's mapping `version` or newer,
    /// loading (or catching up) from `tx` when needed. Nil: the cache does not answer for the
    /// account now (too large, being loaded off the request path): read storage (`tx`) instead.
    func read<T>(_ tx: any AccountReadTransaction, version: Int64, _ body: (any MappingReads) throws -> T) throws -> T?
    /// Runs `body` on the account's mapping reads when the cache holds them at `version` or newer;
    /// nil otherwise (nothing is loaded: the caller reads storage).
    func readIfCurrent<T>(account accountID: String, version: Int64, _ body: (any MappingReads) throws -> T) throws -> T?

    /// Whether a write of the account should keep its changes for `finish` (the cache holds the
    /// account, or is loading it).
    func isLoaded(account accountID: String) -> Bool
    /// Inside a write transaction that changed the mapping, before it commits: `version` is about
    /// to be committed by this process.
    func expect(account accountID: String, version: Int64)
    /// After the transaction: applies `mutations` (committed as `version`), or forgets the version
    /// when the transaction did not commit (`mutations` nil).
    func finish(account accountID: String, version: Int64, mutations: [MappingMutation]?)
    /// Drops the account (it was deleted).
    func forget(account accountID: String)

    /// Writes the snapshot of every held account that changed since its last one (see
    /// `ConcordService.saveMappingIndexSnapshots`), none begun after `deadline`; returns those
    /// written, for their IDs to be recorded in storage, and the failures.
    func writeSnapshots(newID: () -> String, deadline: Date, onlyQuiet: Bool)
        -> (saved: [SavedMappingSnapshot], failures: [(accountID: String, error: any Error)])
    /// After `writeSnapshots`: whether storage recorded the snapshot's ID.
    func snapshotRecorded(_ snapshot: SavedMappingSnapshot, _ recorded: Bool)
}

/// A snapshot written: the account, the mapping version it reflects and its ID (for storage to
/// record). A named tuple, as the failures beside it are: values handed back, never kept.
public typealias SavedMappingSnapshot = (accountID: String, version: Int64, snapshotID: String)

/// Where a mapping index keeps its accounts' snapshots between runs (ConcordStorage's
/// `IndexSnapshotDirectory`; the format is ConcordMappingIndex's, docs/formats.md).
public protocol MappingIndexSnapshotStore: Sendable {
    /// The account's snapshot, open for reading; nil when there is none.
    func open(account accountID: String) -> (any MappingIndexSnapshotInput)?
    /// Writes the account's snapshot through `body`; the old one is replaced only once the new one
    /// is whole.
    func save(account accountID: String, _ body: (any MappingIndexSnapshotOutput) throws -> Void) throws
    /// Removes the account's snapshot, if any.
    func remove(account accountID: String)
}

/// A snapshot being read: exact reads, in order.
public protocol MappingIndexSnapshotInput: AnyObject {
    /// Bytes not read yet.
    var remaining: Int { get }
    /// Fills `buffer` with the next bytes; throws when fewer are left.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws
    func close()
}

/// A snapshot being written.
public protocol MappingIndexSnapshotOutput: AnyObject {
    func write(_ bytes: UnsafeRawBufferPointer) throws
}
