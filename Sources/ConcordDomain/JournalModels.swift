import Foundation

// MARK: - Values the service answers

/// A journal as listed: `{"journalID","title","version","entryCount","updatedAt","createdAt"}`.
public struct JournalSummary: Sendable, Equatable {
    public var journalID: String
    public var title: String
    /// Opaque; changes whenever the journal or one of its entries changes (`ETag`, `If-Match`).
    public var version: String
    public var entryCount: Int
    public var createdAt: Date
    /// The time of the last change to the journal or one of its entries.
    public var updatedAt: Date
}

/// One photo of an entry, resolved for the calling device as cloud → local:
/// `.found(localIdentifier)` or a per-item error (`identifierNotFound`, `multipleIdentifiersFound`).
public struct JournalPhoto: Sendable, Equatable {
    /// The stored cloud identifier (canonical: GUID upper case).
    public var cloudIdentifier: String
    public var result: MappingResult
}

/// An entry with its photos resolved for the calling device: `{"entryID","text","version","photos"}`.
public struct JournalEntryView: Sendable, Equatable {
    public var entryID: String
    public var text: String
    /// Opaque; changes whenever the entry changes (`ETag`, `If-Match`).
    public var version: String
    public var photos: [JournalPhoto]
}

/// `GET /v1/journals/{journalID}`: the journal and its entries in creation order.
public struct JournalDetail: Sendable, Equatable {
    public var journal: JournalSummary
    public var entries: [JournalEntryView]
    /// Entries follow this page (only when a page was asked for, or the journal passed what one
    /// answer holds).
    public var hasMore = false
    /// The answer is a page (it carries `hasMore`): one was asked for, or the journal's answer would
    /// pass `DataBounds.journalAnswerBytes`. Otherwise it is the whole journal, as the API shows it.
    public var paged = false
}

/// One photo of an entry `PUT`: a cloud identifier as stored elsewhere, or one of the calling
/// device's local identifiers (mapped local → cloud in the write transaction).
public enum JournalPhotoInput: Sendable, Equatable {
    case cloudIdentifier(String)
    case localIdentifier(String)
}

/// An `If-Match` precondition (RFC 9110 §13.1.1): `*`, or the entity tags listed (strong comparison).
public enum IfMatch: Sendable, Equatable {
    /// `If-Match: *`: matches whatever exists.
    case any
    /// `If-Match: "v1", "v2"`: matches when the current version is one of these.
    case versions([String])
}

/// Journal IDs and `"<journalID>/<entryID>"` keys inserted, updated, deleted by one change: the
/// same three lists as a library change's.
public typealias JournalChangeLists = ChangeLists

/// What one change to the account's journals did: `"journals"` and `"entries"` parts.
public struct JournalChangeDetails: Sendable, Equatable {
    public var journals: JournalChangeLists
    /// Keys `"<journalID>/<entryID>"` (journal IDs hold no `/`, so the first `/` splits them).
    public var entries: JournalChangeLists
    public init(journals: JournalChangeLists = JournalChangeLists(), entries: JournalChangeLists = JournalChangeLists()) {
        self.journals = journals
        self.entries = entries
    }
}

// MARK: - Storage (a part of the store protocols; transactions conform to both sets)

/// A journal row. `version` is the sequence number of the last change to the journal or its entries;
/// `createdSeq` (the change that created it) orders the listing.
public struct StoredJournal: Sendable, Equatable {
    public var journalID: String
    public var title: String
    public var version: Int64
    public var entryCount: Int
    public var createdSeq: Int64
    public var createdAt: Double
    public var updatedAt: Double
    public init(journalID: String, title: String, version: Int64, entryCount: Int, createdSeq: Int64, createdAt: Double, updatedAt: Double) {
        self.journalID = journalID
        self.title = title
        self.version = version
        self.entryCount = entryCount
        self.createdSeq = createdSeq
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// An entry row: photos are canonical cloud identifiers in entry order. `version` is the sequence
/// number of the change that last wrote it; `createdSeq` orders the journal's entries.
public struct StoredJournalEntry: Sendable, Equatable {
    public var journalID: String
    public var entryID: String
    public var text: String
    public var photos: [String]
    public var version: Int64
    public var createdSeq: Int64
    public init(journalID: String, entryID: String, text: String, photos: [String], version: Int64, createdSeq: Int64) {
        self.journalID = journalID
        self.entryID = entryID
        self.text = text
        self.photos = photos
        self.version = version
        self.createdSeq = createdSeq
    }
}

/// The account's journal change feed counters (zeros before the first change).
public struct JournalFeedState: Sendable, Equatable {
    public var lastChangeSeq: Int64
    public var prunedThroughSeq: Int64
    public init(lastChangeSeq: Int64, prunedThroughSeq: Int64) {
        self.lastChangeSeq = lastChangeSeq
        self.prunedThroughSeq = prunedThroughSeq
    }
}

extension ItemError {
    /// The error as a detail object (for `422` answers listing per-photo errors): the same fields
    /// as when it is rendered in an item's `"error"`.
    public var detailValue: DetailValue {
        var fields = [DetailField("name", .string(self.name)), DetailField("message", .string(self.message))]
        if let code = self.photosErrorCode {
            fields.append(DetailField("domain", .string(DomainError.photosErrorDomain)))
            fields.append(DetailField("code", .int(code)))
        }
        return .object(fields + self.details)
    }
}
