import Synchronization

/// The index's counters and what `/metrics` reads of them.
extension MappingIndex {
    /// Read-only counters for `/metrics`.
    public struct Statistics: Sendable, Equatable {
        /// Reads answered by an index already at the reader's version.
        public var hits: Int
        /// Accounts loaded from storage (first use, after eviction or after a failed fit).
        public var loads: Int
        /// Indexes found behind storage that had moved on without this process (another instance's
        /// writes): caught up from the mapping log (`logCatchUps`) or else reloaded.
        public var catchUps: Int
        /// Of `catchUps`, those that applied the other instances' changes from the mapping log
        /// (`MappingLogReads`) instead of reloading, and the write transactions so applied.
        public var logCatchUps: Int
        public var loggedWritesApplied: Int
        /// Write transactions applied to an index after their commit.
        public var appliedWrites: Int
        /// Accounts evicted to stay within the budget.
        public var evictions: Int
        /// Reads served from storage because the account does not fit the budget.
        public var tooLarge: Int
        /// Loads given up in a request because the account did not fit (once per account: it is
        /// then retried off the request path only).
        public var overBudgetLoads: Int
        /// Reads served from storage because loading the account would have evicted one used in
        /// the last `protectSeconds` (the no-thrash admission).
        public var refusedAdmissions: Int
        /// Loads off the request path (too-large accounts' retries and slow loads), and those
        /// that then fit.
        public var backgroundLoads: Int
        public var backgroundLoadsFitted: Int
        /// Accounts loaded from their snapshot; snapshots found stale or damaged (then removed);
        /// snapshots saved (at shutdown).
        public var snapshotLoads: Int
        public var rejectedSnapshots: Int
        public var savedSnapshots: Int
        /// Loads moved off the request path because they would be slow (`loadsQuickly` false), and
        /// reads served from storage while such a load ran.
        public var deferredLoads: Int
        public var readsWhileLoading: Int
        /// Estimated bytes held by every loaded account.
        public var residentBytes: Int
        /// Accounts loaded now.
        public var accounts: Int
    }

    final class Counters: Sendable {
        let hits = Atomic<Int>(0), loads = Atomic<Int>(0), catchUps = Atomic<Int>(0), appliedWrites = Atomic<Int>(0)
        let logCatchUps = Atomic<Int>(0), loggedWritesApplied = Atomic<Int>(0)
        let evictions = Atomic<Int>(0), tooLarge = Atomic<Int>(0), refusedAdmissions = Atomic<Int>(0)
        let backgroundLoads = Atomic<Int>(0), backgroundLoadsFitted = Atomic<Int>(0), overBudgetLoads = Atomic<Int>(0)
        let snapshotLoads = Atomic<Int>(0), rejectedSnapshots = Atomic<Int>(0), savedSnapshots = Atomic<Int>(0)
        let deferredLoads = Atomic<Int>(0), readsWhileLoading = Atomic<Int>(0)
    }

    public var statistics: Statistics {
        let (bytes, accounts) = self.table.withLock { t in (t.bytes, t.entries.values.count { $0.bytes > 0 }) }
        let c = self.counters
        return Statistics(hits: c.hits.load(ordering: .relaxed), loads: c.loads.load(ordering: .relaxed),
                          catchUps: c.catchUps.load(ordering: .relaxed), logCatchUps: c.logCatchUps.load(ordering: .relaxed),
                          loggedWritesApplied: c.loggedWritesApplied.load(ordering: .relaxed), appliedWrites: c.appliedWrites.load(ordering: .relaxed),
                          evictions: c.evictions.load(ordering: .relaxed), tooLarge: c.tooLarge.load(ordering: .relaxed),
                          overBudgetLoads: c.overBudgetLoads.load(ordering: .relaxed), refusedAdmissions: c.refusedAdmissions.load(ordering: .relaxed),
                          backgroundLoads: c.backgroundLoads.load(ordering: .relaxed), backgroundLoadsFitted: c.backgroundLoadsFitted.load(ordering: .relaxed),
                          snapshotLoads: c.snapshotLoads.load(ordering: .relaxed), rejectedSnapshots: c.rejectedSnapshots.load(ordering: .relaxed),
                          savedSnapshots: c.savedSnapshots.load(ordering: .relaxed),
                          deferredLoads: c.deferredLoads.load(ordering: .relaxed), readsWhileLoading: c.readsWhileLoading.load(ordering: .relaxed),
                          residentBytes: bytes, accounts: accounts)
    }
}
