import Foundation

/// Reads of the account's journals, their entries and their change feed.
public protocol JournalReads {
    /// The account's journal feed counters; zeros when it has none yet.
    func journalFeed() throws -> JournalFeedState
    /// The account's journals in creation order.
    func journals() throws -> [StoredJournal]
    func journal(journalID: String) throws -> StoredJournal?
    /// The journal's entries in creation order.
    func journalEntries(journalID: String) throws -> [StoredJournalEntry]
    func journalEntry(journalID: String, entryID: String) throws -> StoredJournalEntry?
    /// The journal's entry IDs in creation order.
    func journalEntryIDs(journalID: String) throws -> [String]
    /// At most `limit` of the journal's entries created after `createdSeq` (0: from the first), in
    /// creation order: a journal's answer reads only what it needs (issue 23).
    func journalEntries(journalID: String, createdAfter createdSeq: Int64, limit: Int) throws -> [StoredJournalEntry]
    /// Journal changes with seq > `after`, ascending, at most `limit`.
    func journalChanges(after seq: Int64, limit: Int) throws -> [StoredJournalChange]
    /// The highest seq of a journal change created at or before `time`, nil if none.
    func latestJournalChangeSeq(createdAtOrBefore time: Double) throws -> Int64?
}

/// Journal writes, inside the account's one write transaction.
public protocol JournalWrites: JournalReads {
    /// Inserts or replaces the journal row.
    func putJournal(_ journal: StoredJournal) throws
    /// Deletes the journal and every entry of it.
    func deleteJournal(journalID: String) throws
    /// Inserts or replaces the entry row.
    func putJournalEntry(_ entry: StoredJournalEntry) throws
    func deleteJournalEntry(journalID: String, entryID: String) throws
    /// Appends one change and makes `seq` the feed's last.
    func appendJournalChange(seq: Int64, createdAt: Double, details: JournalChangeDetails) throws
    /// Deletes changes with seq ≤ `throughSeq` and remembers it as the pruning point.
    func pruneJournalChanges(throughSeq: Int64) throws
}
