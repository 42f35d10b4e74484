import Foundation

// The library history and the journal feed are the same kind of feed: numbered changes, each with
// what it did (`ChangeDetails?` for a library, nil when unavailable; `JournalChangeDetails` for
// journals), read a page at a time after a change token. One set of types serves both.

/// One change as stored: its sequence number, when it was committed, and what it did.
public struct StoredFeedChange<Details: Sendable & Equatable>: Sendable, Equatable {
    public var seq: Int64
    public var createdAt: Double
    public var details: Details
    public init(seq: Int64, createdAt: Double, details: Details) {
        self.seq = seq
        self.createdAt = createdAt
        self.details = details
    }
}

/// One entry of a changes answer: the token that stands after it, and what it did.
public struct FeedChange<Details: Sendable & Equatable>: Sendable, Equatable {
    public var changeToken: String
    public var details: Details
}

/// The answer of a changes request.
public struct FeedPage<Details: Sendable & Equatable>: Sendable, Equatable {
    public var changes: [FeedChange<Details>]
    /// The token to send as the next `since`.
    public var changeToken: String
    public var hasMore: Bool
    public init(changes: [FeedChange<Details>], changeToken: String, hasMore: Bool) {
        self.changes = changes
        self.changeToken = changeToken
        self.hasMore = hasMore
    }

    /// The page of `stored` (read with one more than `limit`, to tell whether more follow), each
    /// change's token in `scope`; with no change, the token stays `since`.
    init(stored: [StoredFeedChange<Details>], limit: Int, since: String, tokens: ChangeTokenCodec, scope: ChangeTokenScope) {
        let changes = stored.prefix(limit).map { FeedChange(changeToken: tokens.encode(seq: $0.seq, scope: scope), details: $0.details) }
        self.init(changes: changes, changeToken: changes.last?.changeToken ?? since, hasMore: stored.count > limit)
    }
}

/// One stored history entry; `details` nil means unavailable (a reset).
public typealias StoredChange = StoredFeedChange<ChangeDetails?>
/// One entry of `GET /v1/library/changes`: details, or nil when unavailable (a reset library:
/// render `{"changeToken", "error": ItemError.persistentChangeDetailsUnavailable}`).
public typealias LibraryChange = FeedChange<ChangeDetails?>
/// The answer of `GET /v1/library/changes`.
public typealias ChangePage = FeedPage<ChangeDetails?>

/// One stored journal change.
public typealias StoredJournalChange = StoredFeedChange<JournalChangeDetails>
/// One change of `GET /v1/journals/changes`.
public typealias JournalChange = FeedChange<JournalChangeDetails>
/// The answer of `GET /v1/journals/changes`.
public typealias JournalChangePage = FeedPage<JournalChangeDetails>
