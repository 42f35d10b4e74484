import ConcordDomain
import Foundation

/// Journals on PostgreSQL, with the SQLite engine's semantics: every call is one statement.
///
/// No call here takes a lock: `PostgresStore.write(account:)` takes the account's advisory lock as
/// the transaction's first statement (`PostgresTransaction.lockAccount()`), for journals as for the
/// library. The domain reads the journal feed's last sequence number, decides and appends the next
/// one, so two writers of one account — on this instance or another — run one after the other.
/// Journal change tokens are therefore handed out in commit order, and an If-Match compared with a
/// journal's version sees every version committed before it.
extension PostgresTransaction: JournalWrites {
    /// Writes on a missing account fail like SQLite's (`notFound`): checked only when a write touched
    /// no row, so the common case costs no extra round trip.
    private func requireAccount() throws {
        guard try self.db.scalarInt("SELECT 1::int8 FROM accounts WHERE account_id = $1", [.text(self.accountID)]) != nil else {
            throw DomainError.notFound(message: "No such account.")
        }
    }

    func journalFeed() throws -> JournalFeedState {
        var state = JournalFeedState(lastChangeSeq: 0, prunedThroughSeq: 0)
        try self.db.query("SELECT last_change_seq, pruned_through_seq FROM journal_feeds WHERE account_id = $1", [.text(self.accountID)]) { r in
            state = JournalFeedState(lastChangeSeq: r.int(0), prunedThroughSeq: r.int(1))
        }
        return state
    }

    func journals() throws -> [StoredJournal] {
        var result: [StoredJournal] = []
        try self.db.query("SELECT \(StorageRows.journalColumns) FROM journals WHERE account_id = $1 ORDER BY created_seq",
                          [.text(self.accountID)]) { r in result.append(StorageRows.storedJournal(r)) }
        return result
    }

    func journal(journalID: String) throws -> StoredJournal? {
        var result: StoredJournal?
        try self.db.query("SELECT \(StorageRows.journalColumns) FROM journals WHERE account_id = $1 AND journal_id = $2",
                          [.text(self.accountID), .text(journalID)]) { r in result = StorageRows.storedJournal(r) }
        return result
    }

    func journalEntries(journalID: String) throws -> [StoredJournalEntry] {
        var result: [StoredJournalEntry] = []
        try self.db.query("""
            SELECT \(StorageRows.entryColumns) FROM journal_entries WHERE account_id = $1 AND journal_id = $2 ORDER BY created_seq
            """, [.text(self.accountID), .text(journalID)]) { r in result.append(StorageRows.storedEntry(r)) }
        return result
    }

    func journalEntries(journalID: String, createdAfter createdSeq: Int64, limit: Int) throws -> [StoredJournalEntry] {
        var result: [StoredJournalEntry] = []
        try self.db.query("""
            SELECT \(StorageRows.entryColumns) FROM journal_entries
            WHERE account_id = $1 AND journal_id = $2 AND created_seq > $3 ORDER BY created_seq LIMIT $4
            """, [.text(self.accountID), .text(journalID), .int(createdSeq), .int(Int64(limit))]) { r in result.append(StorageRows.storedEntry(r)) }
        return result
    }

    func journalEntry(journalID: String, entryID: String) throws -> StoredJournalEntry? {
        var result: StoredJournalEntry?
        try self.db.query("SELECT \(StorageRows.entryColumns) FROM journal_entries WHERE account_id = $1 AND journal_id = $2 AND entry_id = $3",
                          [.text(self.accountID), .text(journalID), .text(entryID)]) { r in result = StorageRows.storedEntry(r) }
        return result
    }

    func journalEntryIDs(journalID: String) throws -> [String] {
        var result: [String] = []
        try self.db.query("SELECT entry_id FROM journal_entries WHERE account_id = $1 AND journal_id = $2 ORDER BY created_seq",
                          [.text(self.accountID), .text(journalID)]) { r in result.append(r.text(0)) }
        return result
    }

    func journalChanges(after seq: Int64, limit: Int) throws -> [StoredJournalChange] {
        var result: [StoredJournalChange] = []
        try self.db.query("SELECT seq, created_at, details FROM journal_changes WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                          [.text(self.accountID), .int(seq), .int(Int64(limit))]) { r in
            result.append(StoredJournalChange(seq: r.int(0), createdAt: r.double(1), details: JournalChangeDetailsCodec.decode(r.text(2))))
        }
        return result
    }

    func latestJournalChangeSeq(createdAtOrBefore time: Double) throws -> Int64? {
        return try self.db.scalarInt("SELECT max(seq) FROM journal_changes WHERE account_id = $1 AND created_at <= $2",
                                     [.text(self.accountID), .double(time)])
    }

    func pickerSessionSequence(journalID: String, entryID: String, session: String, usedAfter time: Double) throws -> Int64? {
        try self.db.scalarInt("""
            SELECT sequence FROM picker_sessions
            WHERE account_id = $1 AND journal_id = $2 AND entry_id = $3 AND session = $4 AND used_at > $5
            """, [.text(self.accountID), .text(journalID), .text(entryID), .text(session), .double(time)])
    }

    func putJournal(_ j: StoredJournal) throws {
        let n = try self.db.query("""
            INSERT INTO journals (account_id, journal_id, title, version, entry_count, created_seq, created_at, updated_at)
            SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE EXISTS (SELECT 1 FROM accounts WHERE account_id = $1)
            ON CONFLICT (account_id, journal_id) DO UPDATE SET
                title = excluded.title, version = excluded.version, entry_count = excluded.entry_count,
                created_seq = excluded.created_seq, created_at = excluded.created_at, updated_at = excluded.updated_at
            """, [.text(self.accountID), .text(j.journalID), .text(j.title), .int(j.version), .int(Int64(j.entryCount)), .int(j.createdSeq),
                  .double(j.createdAt), .double(j.updatedAt)])
        if n == 0 { throw DomainError.notFound(message: "No such account.") }
    }

    func deleteJournal(journalID: String) throws {
        let n = try self.db.query("""
            WITH e AS (DELETE FROM journal_entries WHERE account_id = $1 AND journal_id = $2),
                s AS (DELETE FROM picker_sessions WHERE account_id = $1 AND journal_id = $2)
            DELETE FROM journals WHERE account_id = $1 AND journal_id = $2
            """, [.text(self.accountID), .text(journalID)])
        if n == 0 { try self.requireAccount() }
    }

    func putJournalEntry(_ e: StoredJournalEntry) throws {
        let n = try self.db.query("""
            INSERT INTO journal_entries (account_id, journal_id, entry_id, text, photos, version, created_seq)
            SELECT $1, $2, $3, $4, $5, $6, $7 WHERE EXISTS (SELECT 1 FROM accounts WHERE account_id = $1)
            ON CONFLICT (account_id, journal_id, entry_id) DO UPDATE SET
                text = excluded.text, photos = excluded.photos, version = excluded.version, created_seq = excluded.created_seq
            """, [.text(self.accountID), .text(e.journalID), .text(e.entryID), .text(e.text), .text(e.photos.joined(separator: "\n")),
                  .int(e.version), .int(e.createdSeq)])
        if n == 0 { throw DomainError.notFound(message: "No such account.") }
    }

    func deleteJournalEntry(journalID: String, entryID: String) throws {
        let n = try self.db.query("""
            WITH s AS (DELETE FROM picker_sessions WHERE account_id = $1 AND journal_id = $2 AND entry_id = $3)
            DELETE FROM journal_entries WHERE account_id = $1 AND journal_id = $2 AND entry_id = $3
            """, [.text(self.accountID), .text(journalID), .text(entryID)])
        if n == 0 { try self.requireAccount() }
    }

    func putPickerSession(journalID: String, entryID: String, session: String, sequence: Int64, usedAt: Double) throws {
        let n = try self.db.query("""
            INSERT INTO picker_sessions (account_id, journal_id, entry_id, session, sequence, used_at)
            SELECT $1, $2, $3, $4, $5, $6 WHERE EXISTS (SELECT 1 FROM accounts WHERE account_id = $1)
            ON CONFLICT (account_id, journal_id, entry_id, session) DO UPDATE SET
                sequence = excluded.sequence, used_at = excluded.used_at
            """, [.text(self.accountID), .text(journalID), .text(entryID), .text(session), .int(sequence), .double(usedAt)])
        if n == 0 { throw DomainError.notFound(message: "No such account.") }
    }

    func deletePickerSessions(usedAtOrBefore time: Double) throws {
        try self.db.query("DELETE FROM picker_sessions WHERE account_id = $1 AND used_at <= $2", [.text(self.accountID), .double(time)])
    }

    func appendJournalChange(seq: Int64, createdAt: Double, details: JournalChangeDetails) throws {
        self.observers.didAppend(to: .journals(accountID: self.accountID))
        // The change and the feed's new last seq in one statement.
        let n = try self.db.query("""
            WITH c AS (
                INSERT INTO journal_changes (account_id, seq, created_at, details)
                SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM accounts WHERE account_id = $1)
                RETURNING account_id, seq
            )
            INSERT INTO journal_feeds (account_id, last_change_seq) SELECT account_id, seq FROM c
            ON CONFLICT (account_id) DO UPDATE SET last_change_seq = excluded.last_change_seq
            """, [.text(self.accountID), .int(seq), .double(createdAt), .text(JournalChangeDetailsCodec.encode(details))])
        if n == 0 { throw DomainError.notFound(message: "No such account.") }
    }

    func pruneJournalChanges(throughSeq: Int64) throws {
        let n = try self.db.query("""
            WITH c AS (DELETE FROM journal_changes WHERE account_id = $1 AND seq <= $2)
            UPDATE journal_feeds SET pruned_through_seq = greatest(pruned_through_seq, $2) WHERE account_id = $1
            """, [.text(self.accountID), .int(throughSeq)])
        if n == 0 { try self.requireAccount() }
    }
}
