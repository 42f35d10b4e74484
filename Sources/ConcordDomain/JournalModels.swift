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
