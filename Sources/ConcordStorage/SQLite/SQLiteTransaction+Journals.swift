import ConcordDomain
import Foundation

/// Journals on SQLite: every read is one statement; a journal's entries come in one
/// statement in creation order (`journal_entries_by_creation`).
extension SQLiteTransaction: JournalWrites {
    /// The account's storage key for a journal write; the account must exist.
    private func existingAccountKey() throws -> Int64 {
        guard let a = try self.accountKey(self.accountID) else { throw DomainError.notFound(message: "No such account.") }
        return a
    }

    func journalFeed() throws -> JournalFeedState {
        guard let a = try self.accountKey(self.accountID) else { return JournalFeedState(lastChangeSeq: 0, prunedThroughSeq: 0) }
        var state = JournalFeedState(lastChangeSeq: 0, prunedThroughSeq: 0)
        try self.db.query("SELECT last_change_seq, pruned_through_seq FROM journal_feeds WHERE account_key = ?", [.int(a)]) { s in
            state = JournalFeedState(lastChangeSeq: s.int(0), prunedThroughSeq: s.int(1))
        }
        return state
    }

    func journals() throws -> [StoredJournal] {
        guard let a = try self.accountKey(self.accountID) else { return [] }
        var result: [StoredJournal] = []
        try self.db.query("SELECT \(StorageRows.journalColumns) FROM journals WHERE account_key = ? ORDER BY created_seq",
                          [.int(a)]) { s in result.append(StorageRows.storedJournal(s)) }
        return result
    }

    func journal(journalID: String) throws -> StoredJournal? {
        guard let a = try self.accountKey(self.accountID) else { return nil }
        var result: StoredJournal?
        try self.db.query("SELECT \(StorageRows.journalColumns) FROM journals WHERE account_key = ? AND journal_id = ?",
                          [.int(a), .text(journalID)]) { s in result = StorageRows.storedJournal(s) }
        return result
    }

    func journalEntries(journalID: String) throws -> [StoredJournalEntry] {
        guard let a = try self.accountKey(self.accountID) else { return [] }
        var result: [StoredJournalEntry] = []
        try self.db.query("""
            SELECT \(StorageRows.entryColumns) FROM journal_entries INDEXED BY journal_entries_by_creation
            WHERE account_key = ? AND journal_id = ? ORDER BY created_seq
            """, [.int(a), .text(journalID)]) { s in result.append(StorageRows.storedEntry(s)) }
        return result
    }

    func journalEntries(journalID: String, createdAfter createdSeq: Int64, limit: Int) throws -> [StoredJournalEntry] {
        guard let a = try self.accountKey(self.accountID) else { return [] }
        var result: [StoredJournalEntry] = []
        try self.db.query("""
            SELECT \(StorageRows.entryColumns) FROM journal_entries INDEXED BY journal_entries_by_creation
            WHERE account_key = ? AND journal_id = ? AND created_seq > ? ORDER BY created_seq LIMIT ?
            """, [.int(a), .text(journalID), .int(createdSeq), .int(Int64(limit))]) { s in result.append(StorageRows.storedEntry(s)) }
        return result
    }

    func journalEntry(journalID: String, entryID: String) throws -> StoredJournalEntry? {
        guard let a = try self.accountKey(self.accountID) else { return nil }
        var result: StoredJournalEntry?
        try self.db.query("SELECT \(StorageRows.entryColumns) FROM journal_entries WHERE account_key = ? AND journal_id = ? AND entry_id = ?",
                          [.int(a), .text(journalID), .text(entryID)]) { s in result = StorageRows.storedEntry(s) }
        return result
    }

    func journalEntryIDs(journalID: String) throws -> [String] {
        guard let a = try self.accountKey(self.accountID) else { return [] }
        var result: [String] = []
        try self.db.query("SELECT entry_id FROM journal_entries WHERE account_key = ? AND journal_id = ? ORDER BY created_seq",
                          [.int(a), .text(journalID)]) { s in result.append(s.text(0)) }
        return result
    }

    func journalChanges(after seq: Int64, limit: Int) throws -> [StoredJournalChange] {
        guard let a = try self.accountKey(self.accountID) else { return [] }
        var result: [StoredJournalChange] = []
        try self.db.query("SELECT seq, created_at, details FROM journal_changes WHERE account_key = ? AND seq > ? ORDER BY seq LIMIT ?",
                          [.int(a), .int(seq), .int(Int64(limit))]) { s in
            result.append(StoredJournalChange(seq: s.int(0), createdAt: s.double(1), details: JournalChangeDetailsCodec.decode(s.text(2))))
        }
        return result
    }

    func latestJournalChangeSeq(createdAtOrBefore time: Double) throws -> Int64? {
        guard let a = try self.accountKey(self.accountID) else { return nil }
        return try self.db.scalarInt("SELECT max(seq) FROM journal_changes WHERE account_key = ? AND created_at <= ?",
                              [.int(a), .double(time)])
    }

    func pickerSessionSequence(journalID: String, entryID: String, session: String, usedAfter time: Double) throws -> Int64? {
        guard let a = try self.accountKey(self.accountID) else { return nil }
        return try self.db.scalarInt("""
            SELECT sequence FROM picker_sessions
            WHERE account_key = ? AND journal_id = ? AND entry_id = ? AND session = ? AND used_at > ?
            """, [.int(a), .text(journalID), .text(entryID), .text(session), .double(time)])
    }

    func putJournal(_ j: StoredJournal) throws {
        let a = try self.existingAccountKey()
        try self.db.run("""
            INSERT INTO journals (account_key, journal_id, title, version, entry_count, created_seq, created_at, updated_at)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
            ON CONFLICT (account_key, journal_id) DO UPDATE SET
                title = excluded.title, version = excluded.version, entry_count = excluded.entry_count,
                created_seq = excluded.created_seq, created_at = excluded.created_at, updated_at = excluded.updated_at
            """, [.int(a), .text(j.journalID), .text(j.title), .int(j.version), .int(Int64(j.entryCount)), .int(j.createdSeq),
                  .double(j.createdAt), .double(j.updatedAt)])
    }

    func deleteJournal(journalID: String) throws {
        let a = try self.existingAccountKey()
        try self.db.run("DELETE FROM journal_entries WHERE account_key = ? AND journal_id = ?", [.int(a), .text(journalID)])
        try self.db.run("DELETE FROM picker_sessions WHERE account_key = ? AND journal_id = ?", [.int(a), .text(journalID)])
        try self.db.run("DELETE FROM journals WHERE account_key = ? AND journal_id = ?", [.int(a), .text(journalID)])
    }

    func putJournalEntry(_ e: StoredJournalEntry) throws {
        let a = try self.existingAccountKey()
        try self.db.run("""
            INSERT INTO journal_entries (account_key, journal_id, entry_id, text, photos, version, created_seq)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            ON CONFLICT (account_key, journal_id, entry_id) DO UPDATE SET
                text = excluded.text, photos = excluded.photos, version = excluded.version, created_seq = excluded.created_seq
            """, [.int(a), .text(e.journalID), .text(e.entryID), .text(e.text), .text(e.photos.joined(separator: "\n")),
                  .int(e.version), .int(e.createdSeq)])
    }

    func deleteJournalEntry(journalID: String, entryID: String) throws {
        let a = try self.existingAccountKey()
        try self.db.run("DELETE FROM picker_sessions WHERE account_key = ? AND journal_id = ? AND entry_id = ?",
                        [.int(a), .text(journalID), .text(entryID)])
        try self.db.run("DELETE FROM journal_entries WHERE account_key = ? AND journal_id = ? AND entry_id = ?",
                        [.int(a), .text(journalID), .text(entryID)])
    }

    func putPickerSession(journalID: String, entryID: String, session: String, sequence: Int64, usedAt: Double) throws {
        let a = try self.existingAccountKey()
        try self.db.run("""
            INSERT INTO picker_sessions (account_key, journal_id, entry_id, session, sequence, used_at)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6)
            ON CONFLICT (account_key, journal_id, entry_id, session) DO UPDATE SET
                sequence = excluded.sequence, used_at = excluded.used_at
            """, [.int(a), .text(journalID), .text(entryID), .text(session), .int(sequence), .double(usedAt)])
    }

    func deletePickerSessions(usedAtOrBefore time: Double) throws {
        let a = try self.existingAccountKey()
        try self.db.run("DELETE FROM picker_sessions WHERE account_key = ? AND used_at <= ?", [.int(a), .double(time)])
    }

    func appendJournalChange(seq: Int64, createdAt: Double, details: JournalChangeDetails) throws {
        let a = try self.existingAccountKey()
        self.observers.didAppend(to: .journals(accountID: self.accountID))
        try self.db.run("INSERT INTO journal_changes (account_key, seq, created_at, details) VALUES (?, ?, ?, ?)",
                        [.int(a), .int(seq), .double(createdAt), .text(JournalChangeDetailsCodec.encode(details))])
        try self.db.run("""
            INSERT INTO journal_feeds (account_key, last_change_seq) VALUES (?1, ?2)
            ON CONFLICT (account_key) DO UPDATE SET last_change_seq = excluded.last_change_seq
            """, [.int(a), .int(seq)])
    }

    func pruneJournalChanges(throughSeq: Int64) throws {
        let a = try self.existingAccountKey()
        try self.db.run("DELETE FROM journal_changes WHERE account_key = ? AND seq <= ?", [.int(a), .int(throughSeq)])
        try self.db.run("UPDATE journal_feeds SET pruned_through_seq = max(pruned_through_seq, ?) WHERE account_key = ?",
                        [.int(throughSeq), .int(a)])
    }
}
