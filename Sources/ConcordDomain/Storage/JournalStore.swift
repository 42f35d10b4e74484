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
    /// creation order: a journal's answer reads only what it needs.
    func journalEntries(journalID: String, createdAfter createdSeq: Int64, limit: Int) throws -> [StoredJournalEntry]
    /// Journal changes with seq > `after`, ascending, at most `limit`.
    func journalChanges(after seq: Int64, limit: Int) throws -> [StoredJournalChange]
    /// The highest seq of a journal change created at or before `time`, nil if none.
    func latestJournalChangeSeq(createdAtOrBefore time: Double) throws -> Int64?
    /// The highest sequence a picker session applied to the entry, when the session's last applied
    /// selection was after `usedAfter` (an older session is forgotten); nil otherwise.
    func pickerSessionSequence(journalID: String, entryID: String, session: String, usedAfter time: Double) throws -> Int64?
}

/// Journal writes, inside the account's one write transaction.
public protocol JournalWrites: JournalReads {
    /// Inserts or replaces the journal row.
    func putJournal(_ journal: StoredJournal) throws
    /// Deletes the journal and every entry of it (and their picker sessions).
    func deleteJournal(journalID: String) throws
    /// Inserts or replaces the entry row.
    func putJournalEntry(_ entry: StoredJournalEntry) throws
    /// Deletes the entry and its picker sessions.
    func deleteJournalEntry(journalID: String, entryID: String) throws
    /// Inserts or replaces the picker session's row: `sequence` applied at `usedAt`.
    func putPickerSession(journalID: String, entryID: String, session: String, sequence: Int64, usedAt: Double) throws
    /// Deletes the account's picker sessions last used at or before `time` (forgotten ones).
    func deletePickerSessions(usedAtOrBefore time: Double) throws
    /// Appends one change and makes `seq` the feed's last.
    func appendJournalChange(seq: Int64, createdAt: Double, details: JournalChangeDetails) throws
    /// Deletes changes with seq ≤ `throughSeq` and remembers it as the pruning point.
    func pruneJournalChanges(throughSeq: Int64) throws
}
