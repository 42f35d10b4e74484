import ConcordBytes
import ConcordDomain
import Foundation
import Synchronization

/// The in-memory identifier index of every account that fits the budget: what both mapping
/// directions and journal photo resolution read instead of storage (/// docs/architecture.md). `POST /v1/library/links` validates inside its write transaction, under
/// the account's lock, and does not read it.
///
/// Storage stays the source of truth. Every account has a mapping version in storage, bumped by
/// each write transaction that changes its devices, objects, links or records. An account's
/// `AccountMappingIndex` remembers the version it reflects, and:
/// - a write of this process learns its mapping changes (`MappingChangeRecorder`: the engine's
///   transaction reports each as it makes it), marks its new version as expected before it
///   commits, and applies the changes after the commit succeeded, in version order;
/// - a read passes the version its storage snapshot holds: an index at that version or newer
///   answers; one behind waits for this process's writes that have committed but not yet been
///   applied, and otherwise (a write through another instance) is reloaded from the reader's own
///   snapshot — so an answer is never older than the storage read that started it.
///
/// Memory is bounded by `budgetBytes`: least recently used accounts are evicted whole. Admission
/// never thrashes:
/// - an account whose load would evict one used in the last `protectSeconds` is served from
///   storage instead (its size is remembered from that load, so it is not loaded again while the
///   others stay busy);
/// - an account that alone does not fit is served from storage, and its load is retried off the
///   request path (`retryLoad`, every `retrySeconds`), never in a request;
/// - a load that would be slow (a large account without a current snapshot: the caller's
///   `loadsQuickly` says) runs off the request path too, storage answering meanwhile; this
///   process's writes committed during such a load are kept and applied once it is installed.
public final class MappingIndex: MappingCache {
    /// One account's slot: its lock, its index (nil: not loaded, evicted or too large) and the
    /// bookkeeping of this process's writes.
    final class Entry: @unchecked Sendable {
        // @unchecked Sendable: every var is only touched while holding `condition`, except
        // those marked as under the cache's `table` lock.
        let condition = NSCondition()
        var index: AccountMappingIndex?
        /// Versions this process committed (or is committing) and has not applied yet.
        var expected = Set<Int64>()
        /// Committed changes waiting for an earlier version to be applied first.
        var pending: [Int64: [MappingMutation]] = [:]
        /// The account did not fit the whole budget: served from storage until a retry off the
        /// request path fits it.
        var tooLarge = false
        /// A load off the request path is reading the account (`loadInBackground`): reads are
        /// served from storage, and this process's committed writes are kept in `pending`.
        var loading = false
        /// The version of the account's snapshot on disk, recorded in storage (loaded from or
        /// saved); nil when there is none, or one being replaced. A save at this version is skipped.
        var snapshotVersion: Int64?
        /// The version the previous pass of quiet saves saw (`writeSnapshots(onlyQuiet:)`).
        var seenVersion: Int64?
        // Under the cache's `table` lock:
        /// The size of its last load (0: never loaded), to decide its admission without loading it.
        var knownBytes = 0
        var lastUse: UInt64 = 0
        /// When it was last used (the service's clock, seconds).
        var lastUseTime: Double = 0
        var bytes = 0
    }

    struct Table {
        var entries: [String: Entry] = [:]
        var clock: UInt64 = 0
        var bytes = 0
    }

    public let budgetBytes: Int
    /// An account used this recently is not evicted to admit another.
    public let protectSeconds: Double
    /// How long a too-large account waits before its load is retried off the request path.
    public let retrySeconds: Double
    // Not private: the statistics (MappingIndex+Statistics.swift) read them.
    let table = Mutex(Table())
    let counters = Counters()
    /// Loads an account's index off the request path (`loadsInBackground(from:)` sets it: a read transaction of
    /// its own, then `loadInBackground`). Nil: too-large accounts are not retried.
    private let retryLoad = Mutex<(@Sendable (String) -> Void)?>(nil)
    private let catchUpObserver = Mutex<(@Sendable (MappingIndexCatchUp) -> Void)?>(nil)

    /// The time the retry of a too-large account counts from (the service's clock: tests set it).
    private let now: @Sendable () -> Date
    /// Runs work off the request path after a delay in seconds (0: at once). The one way the index
    /// schedules anything (a too-large account's retry, a slow load): a scheduler can replace it.
    private let runLater: @Sendable (_ delay: Double, _ work: @escaping @Sendable () -> Void) -> Void
    /// Where accounts are saved at shutdown and loaded from after (nil: always from the tables).
    public let snapshots: (any MappingIndexSnapshotStore)?
    /// An account with more objects than this and no current snapshot is loaded off the request
    /// path (`mappingIndexInlineLoadObjects`; 0: every such load).
    public let inlineLoadObjects: Int

    public init(budgetBytes: Int, protectSeconds: Double = 30, retrySeconds: Double = 600, snapshots: (any MappingIndexSnapshotStore)? = nil,
                inlineLoadObjects: Int = DomainConfiguration().mappingIndexInlineLoadObjects,
                now: @escaping @Sendable () -> Date = { Date() },
                runLater: @escaping @Sendable (_ delay: Double, _ work: @escaping @Sendable () -> Void) -> Void = MappingIndex.onGlobalQueue) {
        self.budgetBytes = budgetBytes
        self.snapshots = snapshots
        self.protectSeconds = protectSeconds
        self.retrySeconds = retrySeconds
        self.inlineLoadObjects = inlineLoadObjects
        self.now = now
        self.runLater = runLater
    }

    /// `runLater`'s default: GCD's utility queue.
    public static let onGlobalQueue: @Sendable (_ delay: Double, _ work: @escaping @Sendable () -> Void) -> Void = { delay, work in
        if delay > 0 {
            DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + delay, execute: work)
        } else {
            DispatchQueue.global(qos: .utility).async(execute: work)
        }
    }

    /// The index `configuration` asks for (nil when `mappingIndexBytes` is 0), loading off the
    /// request path from `store`: what the app wires into the service.
    public static func wired(store: any ConcordStore, configuration: DomainConfiguration,
                             clock: @escaping @Sendable () -> Date = { Date() },
                             runLater: @escaping @Sendable (_ delay: Double, _ work: @escaping @Sendable () -> Void) -> Void = MappingIndex.onGlobalQueue)
        -> MappingIndex? {
        guard configuration.mappingIndexBytes > 0 else { return nil }
        let index = MappingIndex(budgetBytes: configuration.mappingIndexBytes, protectSeconds: configuration.mappingIndexProtectSeconds,
                                 snapshots: configuration.mappingIndexSnapshots,
                                 inlineLoadObjects: configuration.mappingIndexInlineLoadObjects, now: clock, runLater: runLater)
        index.loadsInBackground(from: store)
        return index
    }

    /// Loads off the request path (a too-large account's retry, a slow load) read `store`, each
    /// from a storage snapshot of its own.
    public func loadsInBackground(from store: any ConcordStore) {
        self.setRetryLoad { [weak self, store] accountID in
            guard let index = self else { return }
            do {
                try store.read(account: accountID) { tx in
                    let version = try tx.mappingVersion()
                    index.loadInBackground(account: accountID, version: version) { fresh in
                        try fresh.load(from: tx, account: accountID, checkingBudget: index)
                    }
                }
            } catch {
                index.backgroundLoadFailed(account: accountID)
            }
        }
    }

    /// Sets how a too-large account's load is retried off the request path.
    func setRetryLoad(_ load: @escaping @Sendable (String) -> Void) {
        self.retryLoad.withLock { $0 = load }
    }

    // MARK: - Catch-ups

    /// Tells the app of each catch-up (for its log). Called holding the account's lock: quick.
    public func onCatchUp(_ observer: @escaping @Sendable (MappingIndexCatchUp) -> Void) {
        self.catchUpObserver.withLock { $0 = observer }
    }

    private func reportCatchUp(_ catchUp: MappingIndexCatchUp) {
        self.catchUpObserver.withLock { $0 }?(catchUp)
    }

    private static func seconds(since start: UInt64) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    /// This thread's CPU time: a catch-up's own cost, whatever else the machine runs.
    private static func threadCPUNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    private static func cpuSeconds(since start: Int64) -> Double {
        Double(self.threadCPUNanoseconds() - start) / 1e9
    }

    // MARK: - Reads

    /// `MappingCache`: the account's reads at the transaction's `version` or newer, loaded from
    /// `tx` when missing or behind; off the request path when that load would be slow.
    public func read<T>(_ tx: any AccountReadTransaction, version: Int64, _ body: (any MappingReads) throws -> T) throws -> T? {
        let accountID = tx.accountID
        return try self.read(account: accountID, version: version, loadsQuickly: {
            try self.loadsQuickly(tx)
        }, catchUp: { from in
            try Self.loggedChanges(tx, after: from, through: version)
        }, load: { fresh in
            try fresh.load(from: tx, account: accountID, checkingBudget: self)
        }) { loaded in
            try body(IndexedMappingReads(index: loaded))
        }
    }

    /// `MappingCache`: the account's reads when held at `version` or newer, else nil — nothing is
    /// loaded, waited for or admitted (the caller reads storage, which catches the index up).
    public func readIfCurrent<T>(account accountID: String, version: Int64, _ body: (any MappingReads) throws -> T) throws -> T? {
        guard let entry = self.table.withLock({ $0.entries[accountID] }) else { return nil }
        entry.condition.lock()
        guard let index = entry.index, index.version >= version else {
            entry.condition.unlock()
            return nil
        }
        self.counters.hits.add(1, ordering: .relaxed)
        let result: T
        do {
            result = try body(IndexedMappingReads(index: index))
        } catch {
            entry.condition.unlock()
            throw error
        }
        let bytes = index.estimatedBytes
        entry.condition.unlock()
        _ = self.touch(entry, bytes: bytes)
        return result
    }

    /// The mapping log's changes of versions `after + 1 ... through`, one array per version in
    /// order, read in the reader's own snapshot; nil when the store keeps no log or any version is
    /// missing (pruned, too large to log) or unreadable: the account is reloaded instead.
    static func loggedChanges(_ tx: any AccountReadTransaction, after: Int64, through: Int64) throws -> [[MappingMutation]]? {
        guard through > after, let log = tx as? any MappingLogReads else { return nil }
        let entries = try log.mappingLog(after: after, through: through)
        guard entries.count == Int(through - after) else { return nil }
        var result: [[MappingMutation]] = []
        result.reserveCapacity(entries.count)
        for (i, entry) in entries.enumerated() {
            guard entry.version == after + 1 + Int64(i), let mutations = MappingLogCodec.decode(entry.changes) else { return nil }
            result.append(mutations)
        }
        return result
    }

    /// Whether the account's index loads quickly enough to load in the request that needs it: from
    /// a current snapshot (its ID recorded, which means current, and its file there), or a small
    /// account from its tables.
    private func loadsQuickly(_ tx: any AccountReadTransaction) throws -> Bool {
        if let snapshots = self.snapshots, try tx.indexSnapshotID() != nil, let file = snapshots.open(account: tx.accountID) {
            file.close()
            return true
        }
        let limit = self.inlineLoadObjects
        return try tx.devices().reduce(0) { $0 + $1.objectCount } <= limit && limit > 0
    }

    /// Runs `body` on the account's index at `version` or newer. `load` streams the account's
    /// mapping tables from the reader's own snapshot (which is at exactly `version`), used when the
    /// index is missing or behind. Nil when the account does not fit the budget, or is being loaded
    /// off the request path: serve from storage. `loadsQuickly`, asked only when a load is due:
    /// false moves the load off the request path (nil: every load runs here). `catchUp`, asked when
    /// a loaded index is behind another instance's writes, gives those writes' changes from the
    /// index's version to `version` (nil: missing, reload).
    func read<T>(account accountID: String, version: Int64, loadsQuickly: (() throws -> Bool)? = nil,
                 catchUp: ((Int64) throws -> [[MappingMutation]]?)? = nil,
                 load: (AccountMappingIndex) throws -> Void, _ body: (AccountMappingIndex) throws -> T) throws -> T? {
        let entry = self.entry(accountID)
        entry.condition.lock()
        var bytes = entry.bytes
        let result: T?
        let loaded: AccountMappingIndex?
        do {
            let wasResident = entry.index != nil
            result = try self.readLocked(entry, accountID: accountID, version: version, loadsQuickly: loadsQuickly, catchUp: catchUp,
                                         load: load, body)
            bytes = entry.index?.estimatedBytes ?? 0
            loaded = wasResident ? nil : entry.index
            entry.condition.unlock()
        } catch {
            entry.condition.unlock()
            throw error
        }
        // Eviction takes other accounts' locks: never while holding this one.
        if !self.touch(entry, bytes: bytes, admitting: loaded != nil), let loaded {
            // Admitting it would have evicted an account in use: this load answered its read, and
            // storage answers the next ones while the others stay busy.
            self.drop(entry, ifStill: loaded)
            self.counters.refusedAdmissions.add(1, ordering: .relaxed)
        }
        return result
    }

    /// `read`, holding the entry's lock.
    private func readLocked<T>(_ entry: Entry, accountID: String, version: Int64, loadsQuickly: (() throws -> Bool)?,
                               catchUp: ((Int64) throws -> [[MappingMutation]]?)?,
                               load: (AccountMappingIndex) throws -> Void, _ body: (AccountMappingIndex) throws -> T) throws -> T? {
        // A write of this process that committed `version` (or earlier) is applied within moments:
        // wait for it rather than reload. Bounded: a stuck writer costs one reload, not a hang.
        // A wait on the condition runs on the wall clock, whatever the service's clock says.
        let deadline = Date().addingTimeInterval(2)
        while (entry.index?.version ?? Int64.max) < version, entry.expected.contains(where: { $0 <= version }) {
            guard entry.condition.wait(until: deadline) else { break }
        }
        if let index = entry.index, index.version >= version {
            self.counters.hits.add(1, ordering: .relaxed)
            return try body(index)
        }
        let started = DispatchTime.now().uptimeNanoseconds, startedCPU = Self.threadCPUNanoseconds()
        if let index = entry.index, let catchUp, let changes = try catchUp(index.version) {
            // Another instance's writes, from the log its transactions kept: applied as this
            // process applies its own, in version order, then this process's later ones.
            let from = index.version
            for mutations in changes {
                for m in mutations { index.apply(m) }
            }
            index.version = version
            entry.pending = entry.pending.filter { $0.key > version }
            self.drainPending(entry)
            self.counters.loggedWritesApplied.add(changes.count, ordering: .relaxed)
            if index.isExact, index.estimatedBytes <= self.budgetBytes {
                self.counters.catchUps.add(1, ordering: .relaxed)
                self.counters.logCatchUps.add(1, ordering: .relaxed)
                self.reportCatchUp(MappingIndexCatchUp(accountID: accountID, fromVersion: from, toVersion: version, fromLog: true,
                                                       seconds: Self.seconds(since: started), cpuSeconds: Self.cpuSeconds(since: startedCPU)))
                return try body(index)
            }
            // Grew past the budget, or met a GUID it cannot key: the reload below decides.
        }
        guard !entry.tooLarge else {
            self.counters.tooLarge.add(1, ordering: .relaxed)
            return nil
        }
        if entry.loading {
            self.counters.readsWhileLoading.add(1, ordering: .relaxed)
            return nil
        }
        if entry.index == nil, self.wouldEvictRecentlyUsed(entry) {
            self.counters.refusedAdmissions.add(1, ordering: .relaxed)
            return nil
        }
        if let loadsQuickly, !(try loadsQuickly()), let background = self.retryLoad.withLock({ $0 }) {
            // A stale index is of no use to this read or the next: drop it now (its memory too).
            entry.index = nil
            entry.loading = true
            self.counters.deferredLoads.add(1, ordering: .relaxed)
            self.counters.readsWhileLoading.add(1, ordering: .relaxed)
            self.runLater(0) { background(accountID) }
            return nil
        }
        let wasLoaded = entry.index != nil, wasAt = entry.index?.version ?? 0
        entry.index = nil
        let fresh = AccountMappingIndex()
        do {
            try load(fresh)
            guard fresh.isExact else { throw OverBudget() }
        } catch is OverBudget {
            entry.pending.removeAll()
            self.markTooLarge(entry, accountID: accountID)
            self.counters.tooLarge.add(1, ordering: .relaxed)
            self.counters.overBudgetLoads.add(1, ordering: .relaxed)
            return nil
        }
        fresh.version = version
        entry.index = fresh
        entry.snapshotVersion = fresh.loadedFromSnapshot ? version : nil
        entry.pending = entry.pending.filter { $0.key > version }
        self.drainPending(entry)
        if wasLoaded {
            self.counters.catchUps.add(1, ordering: .relaxed)
            self.reportCatchUp(MappingIndexCatchUp(accountID: accountID, fromVersion: wasAt, toVersion: version, fromLog: false,
                                                   seconds: Self.seconds(since: started), cpuSeconds: Self.cpuSeconds(since: startedCPU)))
        } else {
            self.counters.loads.add(1, ordering: .relaxed)
        }
        return try body(fresh)
    }

    /// Thrown by a load that grew past the budget (or met a GUID it cannot key): the account is
    /// served from storage.
    struct OverBudget: Error {}

    /// For loads: throws `OverBudget` once `index` holds more than the budget.
    func checkBudget(_ index: AccountMappingIndex) throws {
        if index.estimatedBytes > self.budgetBytes { throw OverBudget() }
    }

    // MARK: - Writes

    /// Whether this process holds the account's index now, or is loading it off the request path
    /// (its writes then keep their changes).
    public func isLoaded(account accountID: String) -> Bool {
        guard let entry = self.table.withLock({ $0.entries[accountID] }) else { return false }
        return entry.condition.withLock { entry.index != nil || entry.loading }
    }

    /// Inside a write transaction that changed the mapping tables, before it commits: `version` is
    /// about to be committed by this process.
    public func expect(account accountID: String, version: Int64) {
        let entry = self.entry(accountID)
        entry.condition.withLock { _ = entry.expected.insert(version) }
    }

    /// After the transaction: applies `mutations` (committed as `version`), or forgets the version
    /// when the transaction did not commit (`mutations` nil).
    public func finish(account accountID: String, version: Int64, mutations: [MappingMutation]?) {
        let entry = self.entry(accountID)
        entry.condition.lock()
        entry.expected.remove(version)
        if let mutations, entry.index == nil, entry.loading {
            // Committed after the background load's snapshot began (it began after `loading` was
            // set): applied once that load is installed.
            entry.pending[version] = mutations
        } else if let mutations, let index = entry.index, version > index.version {
            entry.pending[version] = mutations
            self.drainPending(entry)
            // Grew past what may be held, or met a GUID it cannot key: storage serves the account.
            if index.estimatedBytes > self.budgetBytes || !index.isExact {
                entry.index = nil
                entry.pending.removeAll()
                self.markTooLarge(entry, accountID: accountID)
            }
        }
        let bytes = entry.index?.estimatedBytes ?? 0
        entry.condition.broadcast()
        entry.condition.unlock()
        _ = self.touch(entry, bytes: bytes, used: false)
    }

    /// Applies the pending writes that follow the index's version, in order. Holding `entry.condition`.
    private func drainPending(_ entry: Entry) {
        guard let index = entry.index else { return }
        while let mutations = entry.pending.removeValue(forKey: index.version + 1) {
            for m in mutations { index.apply(m) }
            index.version += 1
            self.counters.appliedWrites.add(1, ordering: .relaxed)
        }
        entry.pending = entry.pending.filter { $0.key > index.version }
    }

    // MARK: - Snapshots

    func countSnapshotLoad() { self.counters.snapshotLoads.add(1, ordering: .relaxed) }
    func countRejectedSnapshot() { self.counters.rejectedSnapshots.add(1, ordering: .relaxed) }

    /// Writes the snapshot of every loaded account that changed since its last one, each under its
    /// lock, most recently used first, none begun after `deadline`; returns those written, for
    /// their IDs to be recorded in storage, and the failures.
    ///
    /// At shutdown (no request runs) every such account is saved, within what is left of the
    /// shutdown's grace: a process killed midway leaves only a temporary file, which the next start
    /// removes. `onlyQuiet` (the background saves, `mappingIndexSnapshotSeconds`): only accounts
    /// whose version has not moved since the previous such pass, so that a busy account is not
    /// saved (and its lookups held up by the save) on every pass, only once it has settled.
    public func writeSnapshots(newID: () -> String, deadline: Date = .distantFuture, onlyQuiet: Bool = false)
        -> (saved: [SavedMappingSnapshot], failures: [(accountID: String, error: any Error)]) {
        guard let snapshots = self.snapshots else { return ([], []) }
        let entries = self.table.withLock { t in t.entries.map { ($0.key, $0.value, $0.value.lastUse) } }
        var saved: [SavedMappingSnapshot] = [], failures: [(accountID: String, error: any Error)] = []
        for (accountID, entry, _) in entries.sorted(by: { $0.2 > $1.2 }) {
            guard Date() < deadline else { break }
            entry.condition.lock()
            defer { entry.condition.unlock() }
            guard let index = entry.index, entry.expected.isEmpty, entry.pending.isEmpty, index.version != entry.snapshotVersion else { continue }
            if onlyQuiet {
                let seen = entry.seenVersion
                entry.seenVersion = index.version
                guard seen == index.version else { continue }
            }
            let id = newID()
            // The file is replaced now: until the new ID is recorded there is no usable snapshot.
            entry.snapshotVersion = nil
            do {
                try snapshots.save(account: accountID) { output in try index.writeSnapshot(output, account: accountID, snapshotID: id) }
                saved.append((accountID: accountID, version: index.version, snapshotID: id))
            } catch {
                failures.append((accountID, error))
            }
        }
        return (saved, failures)
    }

    /// After `writeSnapshots`: the snapshot's ID was recorded in storage (`recorded`), or not (the
    /// account moved on or is gone: the file is of no use).
    public func snapshotRecorded(_ snapshot: SavedMappingSnapshot, _ recorded: Bool) {
        if recorded {
            self.counters.savedSnapshots.add(1, ordering: .relaxed)
            if let entry = self.table.withLock({ $0.entries[snapshot.accountID] }) {
                entry.condition.withLock { entry.snapshotVersion = snapshot.version }
            }
        } else {
            self.snapshots?.remove(account: snapshot.accountID)
        }
    }

    /// Drops the account's index (the account was deleted).
    public func forget(account accountID: String) {
        self.snapshots?.remove(account: accountID)
        guard let entry = self.table.withLock({ $0.entries.removeValue(forKey: accountID) }) else { return }
        entry.condition.withLock {
            entry.index = nil
            entry.pending.removeAll()
        }
        self.table.withLock { t in
            t.bytes -= entry.bytes
            entry.bytes = 0
        }
    }

    // MARK: - The table and its budget

    private func entry(_ accountID: String) -> Entry {
        self.table.withLock { t in
            if let e = t.entries[accountID] { return e }
            let e = Entry()
            t.entries[accountID] = e
            return e
        }
    }

    // MARK: - Admission

    /// Marks the account too large (holding its lock) and has its load retried off the request
    /// path in `retrySeconds`.
    private func markTooLarge(_ entry: Entry, accountID: String) {
        let scheduled = entry.tooLarge
        entry.tooLarge = true
        guard !scheduled, let retry = self.retryLoad.withLock({ $0 }) else { return }
        self.runLater(self.retrySeconds) {
            // Set before the load's snapshot begins, so that every write it misses is kept.
            entry.condition.withLock { entry.loading = true }
            retry(accountID)
        }
    }

    /// Off the request path (`retryLoad`): loads the account's index from a storage snapshot at
    /// `version`, outside its lock, and installs it when it fits (else retries later, as a too-large
    /// account). This process's writes committed meanwhile (kept while `loading`) are applied; a
    /// write of another instance makes the next read catch up.
    func loadInBackground(account accountID: String, version: Int64, load: (AccountMappingIndex) throws -> Void) {
        // The account was deleted meanwhile (`forget`): nothing to load.
        guard let entry = self.table.withLock({ $0.entries[accountID] }) else { return }
        self.counters.backgroundLoads.add(1, ordering: .relaxed)
        let fresh = AccountMappingIndex()
        let outcome: Result<Void, any Error> = Result { try load(fresh) }
        entry.condition.lock()
        entry.loading = false
        entry.tooLarge = false
        switch outcome {
        case .success where fresh.isExact: break
        case .failure(let error) where !(error is OverBudget):
            // Storage failed: the next read that needs the account tries again.
            entry.pending.removeAll()
            entry.condition.unlock()
            return
        default:
            entry.pending.removeAll()
            self.markTooLarge(entry, accountID: accountID)
            entry.condition.unlock()
            return
        }
        var installed = false
        if entry.index == nil {
            fresh.version = version
            entry.index = fresh
            entry.snapshotVersion = fresh.loadedFromSnapshot ? version : nil
            entry.pending = entry.pending.filter { $0.key > version }
            self.drainPending(entry)
            installed = true
        }
        entry.condition.broadcast()
        entry.condition.unlock()
        self.counters.backgroundLoadsFitted.add(1, ordering: .relaxed)
        if installed, !self.touch(entry, bytes: fresh.estimatedBytes, used: false, admitting: true) { self.drop(entry, ifStill: fresh) }
    }

    /// Whether loading the account (its size known from an earlier load) would evict an account
    /// used in the last `protectSeconds`. False when its size is not known yet.
    private func wouldEvictRecentlyUsed(_ entry: Entry) -> Bool {
        let now = self.now().timeIntervalSince1970
        return self.table.withLock { t in
            entry.knownBytes > 0
                && !self.victims(in: t, toFit: entry.knownBytes - entry.bytes, sparing: entry, recentAfter: now - self.protectSeconds).admits
        }
    }

    /// The least recently used accounts to evict so that `extra` more bytes fit; `admits` false
    /// when one of them was used after `recentAfter`.
    private func victims(in t: Table, toFit extra: Int, sparing entry: Entry, recentAfter: Double) -> (victims: [Entry], admits: Bool) {
        var excess = t.bytes + extra - self.budgetBytes
        guard excess > 0 else { return ([], true) }
        let byAge = t.entries.values.filter { $0.bytes > 0 && $0 !== entry }.sorted { $0.lastUse < $1.lastUse }
        var victims: [Entry] = []
        for victim in byAge where excess > 0 {
            if victim.lastUseTime > recentAfter { return (victims, false) }
            excess -= victim.bytes
            victims.append(victim)
        }
        return (victims, true)
    }

    /// The background load could not begin (its storage read failed, or the account is gone): the
    /// next read that needs the account tries again.
    func backgroundLoadFailed(account accountID: String) {
        guard let entry = self.table.withLock({ $0.entries[accountID] }) else { return }
        entry.condition.withLock {
            guard entry.loading else { return }
            entry.loading = false
            entry.pending.removeAll()
        }
    }

    /// Drops the entry's index if it is still `index` (not admitted after all).
    private func drop(_ entry: Entry, ifStill index: AccountMappingIndex) {
        entry.condition.lock()
        let dropped = entry.index === index
        if dropped {
            entry.index = nil
            entry.pending.removeAll()
        }
        entry.condition.unlock()
        if dropped { _ = self.touch(entry, bytes: 0, used: false) }
    }

    /// Records the entry's size (and use), then evicts least recently used accounts until the
    /// total fits. Called holding no entry's lock (it takes the victims'). The total is an
    /// estimate kept under the table lock: a victim reloaded by another reader between its
    /// eviction and the total's update is counted again at that reader's next size change.
    ///
    /// `admitting`: the entry was just loaded; if fitting it would evict an account used in the
    /// last `protectSeconds`, nothing is evicted and false is returned (the caller drops it).
    @discardableResult
    private func touch(_ entry: Entry, bytes: Int, used: Bool = true, admitting: Bool = false) -> Bool {
        var victims: [Entry] = []
        let now = self.now().timeIntervalSince1970
        let admitted = self.table.withLock { t -> Bool in
            t.clock += 1
            if used {
                entry.lastUse = t.clock
                entry.lastUseTime = now
            }
            if bytes > 0 { entry.knownBytes = bytes }
            if admitting {
                let (chosen, admits) = self.victims(in: t, toFit: bytes - entry.bytes, sparing: entry, recentAfter: now - self.protectSeconds)
                guard admits else { return false }
                victims = chosen
            } else {
                victims = self.victims(in: t, toFit: bytes - entry.bytes, sparing: entry, recentAfter: .infinity).victims
            }
            t.bytes += bytes - entry.bytes
            entry.bytes = bytes
            return true
        }
        for victim in victims {
            victim.condition.lock()
            victim.index = nil
            victim.pending.removeAll()
            victim.condition.unlock()
            self.table.withLock { t in
                t.bytes -= victim.bytes
                victim.bytes = 0
            }
            self.counters.evictions.add(1, ordering: .relaxed)
        }
        return admitted
    }
}

/// An account's index found behind another instance's writes and brought to the reader's version:
/// from the mapping log, or by a reload.
public struct MappingIndexCatchUp: Sendable {
    public let accountID: String
    public let fromVersion: Int64
    public let toVersion: Int64
    public let fromLog: Bool
    /// Wall time, and this process's CPU time (the thread's): reading the log or the tables, applying.
    public let seconds: Double
    public let cpuSeconds: Double
}
