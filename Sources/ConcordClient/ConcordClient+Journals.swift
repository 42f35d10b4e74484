import Foundation

/// A journal as listed by `listJournals()`.
public struct JournalSummary: Sendable, Hashable, Codable {
    public var journalID: String
    public var title: String
    /// Opaque; pass it as `ifMatch` to change the journal only if nobody else did.
    public var version: String
    public var entryCount: Int
    public var updatedAt: Date
}

/// A journal with its entries (entries are empty in answers that do not carry them).
public struct Journal: Sendable, Hashable, Decodable {
    public var journalID: String
    public var title: String
    public var version: String
    public var entryCount: Int?
    public var updatedAt: Date?
    public var entries: [JournalEntry]

    private enum Keys: String, CodingKey { case journalID, title, version, entryCount, updatedAt, entries }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        self.journalID = try c.decode(String.self, forKey: .journalID)
        self.title = try c.decode(String.self, forKey: .title)
        self.version = try c.decode(String.self, forKey: .version)
        self.entryCount = try c.decodeIfPresent(Int.self, forKey: .entryCount)
        self.updatedAt = try c.decodeIfPresent(Date.self, forKey: .updatedAt)
        self.entries = try c.decodeIfPresent([JournalEntry].self, forKey: .entries) ?? []
    }
}

/// An entry of a journal; its photos resolved for the calling device.
public struct JournalEntry: Sendable, Hashable, Decodable {
    public var entryID: String
    public var text: String
    public var version: String
    public var photos: [JournalPhoto]
}

/// A photo of an entry: its cloud identifier, and this device's object for it or why there is
/// none (a placeholder the app can show).
public struct JournalPhoto: Sendable, Hashable, Decodable {
    public var cloudIdentifier: CloudIdentifier
    public var localIdentifier: String?
    public var error: ConcordPhotosError?

    private enum Keys: String, CodingKey { case cloudIdentifier, localIdentifier, error }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        self.cloudIdentifier = try c.decode(CloudIdentifier.self, forKey: .cloudIdentifier)
        self.localIdentifier = try c.decodeIfPresent(String.self, forKey: .localIdentifier)
        self.error = try c.decodeIfPresent(WireError.self, forKey: .error)?.photosError()
    }
}

/// A photo put in an entry: by cloud identifier (from another device) or by this device's
/// local identifier (mapped by the server in the same transaction).
public enum JournalPhotoReference: Sendable, Hashable, Codable {
    case cloud(CloudIdentifier)
    case local(String)

    private enum Keys: String, CodingKey { case cloudIdentifier, localIdentifier }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        if let id = try c.decodeIfPresent(CloudIdentifier.self, forKey: .cloudIdentifier) {
            self = .cloud(id)
        } else {
            self = .local(try c.decode(String.self, forKey: .localIdentifier))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        switch self {
        case .cloud(let id): try c.encode(id, forKey: .cloudIdentifier)
        case .local(let id): try c.encode(id, forKey: .localIdentifier)
        }
    }
}

/// An entry of a journal, as the journal change feed names it.
public struct JournalEntryID: Sendable, Hashable, Codable, CustomStringConvertible {
    public var journalID: String
    /// Chosen by the app that wrote the entry.
    public var entryID: String

    public init(journalID: String, entryID: String) {
        self.journalID = journalID
        self.entryID = entryID
    }

    /// `"<journalID>/<entryID>"`, as the feed carries it (the journal ID, made by the server, has no `/`).
    init?(path: String) {
        guard let slash = path.firstIndex(of: "/") else { return nil }
        self.init(journalID: String(path[..<slash]), entryID: String(path[path.index(after: slash)...]))
    }

    var path: String { "\(self.journalID)/\(self.entryID)" }

    public var description: String { self.path }
}

/// What one journal change did to journals (by ID) or to entries (by `JournalEntryID`), as
/// `PersistentObjectChangeDetails` tells it for library objects.
public struct JournalChangeDetails<Identifier: Sendable & Hashable>: Sendable, Hashable {
    public var inserted: Set<Identifier>
    public var updated: Set<Identifier>
    public var deleted: Set<Identifier>

    public init(inserted: Set<Identifier> = [], updated: Set<Identifier> = [], deleted: Set<Identifier> = []) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
    }

    /// Nothing inserted, updated or deleted.
    public var isEmpty: Bool { self.inserted.isEmpty && self.updated.isEmpty && self.deleted.isEmpty }
}

/// Inserted, updated and deleted IDs in one journal change, as strings.
@available(*, deprecated, message: "Use JournalChange.journalIDs and .entryIDs (JournalChangeDetails).")
public struct JournalChangeParts: Sendable, Hashable, Decodable {
    public var inserted: [String]
    public var updated: [String]
    public var deleted: [String]

    init(inserted: [String], updated: [String], deleted: [String]) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
    }

    private enum Keys: String, CodingKey { case inserted, updated, deleted }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        self.inserted = try c.decodeIfPresent([String].self, forKey: .inserted) ?? []
        self.updated = try c.decodeIfPresent([String].self, forKey: .updated) ?? []
        self.deleted = try c.decodeIfPresent([String].self, forKey: .deleted) ?? []
    }
}

/// One change of the account's journals, like `PersistentChange` for the library.
public struct JournalChange: Sendable, Hashable, Decodable {
    /// The token of this change: pass it as `since` to fetch what came after it.
    public var changeToken: ChangeToken
    /// Journals created, renamed, deleted.
    public var journalIDs: JournalChangeDetails<String>
    /// Entries written (`putEntry`, a selection), deleted.
    public var entryIDs: JournalChangeDetails<JournalEntryID>

    public init(changeToken: ChangeToken, journalIDs: JournalChangeDetails<String> = .init(), entryIDs: JournalChangeDetails<JournalEntryID> = .init()) {
        self.changeToken = changeToken
        self.journalIDs = journalIDs
        self.entryIDs = entryIDs
    }

    private enum Keys: String, CodingKey { case changeToken, journals, entries }
    private struct Wire: Decodable { var inserted: [String]?; var updated: [String]?; var deleted: [String]? }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        self.changeToken = try c.decode(ChangeToken.self, forKey: .changeToken)
        let journals = try c.decodeIfPresent(Wire.self, forKey: .journals)
        self.journalIDs = JournalChangeDetails(
            inserted: Set(journals?.inserted ?? []), updated: Set(journals?.updated ?? []), deleted: Set(journals?.deleted ?? []))
        let entries = try c.decodeIfPresent(Wire.self, forKey: .entries)
        func ids(_ paths: [String]?) throws -> Set<JournalEntryID> {
            Set(try (paths ?? []).map { path in
                guard let id = JournalEntryID(path: path) else {
                    throw DecodingError.dataCorruptedError(forKey: .entries, in: c, debugDescription: "Not <journalID>/<entryID>: \(path)")
                }
                return id
            })
        }
        self.entryIDs = JournalChangeDetails(inserted: try ids(entries?.inserted), updated: try ids(entries?.updated), deleted: try ids(entries?.deleted))
    }

    @available(*, deprecated, renamed: "journalIDs")
    public var journals: JournalChangeParts? {
        JournalChangeParts(inserted: self.journalIDs.inserted.sorted(), updated: self.journalIDs.updated.sorted(), deleted: self.journalIDs.deleted.sorted())
    }

    @available(*, deprecated, renamed: "entryIDs", message: "entryIDs names entries as JournalEntryID, not \"<journalID>/<entryID>\" strings.")
    public var entries: JournalChangeParts? {
        func paths(_ ids: Set<JournalEntryID>) -> [String] { ids.map(\.path).sorted() }
        return JournalChangeParts(inserted: paths(self.entryIDs.inserted), updated: paths(self.entryIDs.updated), deleted: paths(self.entryIDs.deleted))
    }
}

/// Every journal change since a token, like `PersistentChangeFetchResult`: the changes, oldest
/// first, as a collection, and the token to store.
public struct JournalChangeFetchResult: Sendable, Hashable, RandomAccessCollection {
    /// The changes, oldest first.
    public var changes: [JournalChange]
    /// The token to store and pass as `since` next time.
    public var changeToken: ChangeToken

    public init(changes: [JournalChange], changeToken: ChangeToken) {
        self.changes = changes
        self.changeToken = changeToken
    }

    public var startIndex: Int { self.changes.startIndex }
    public var endIndex: Int { self.changes.endIndex }
    public subscript(position: Int) -> JournalChange { self.changes[position] }
}

/// One page of the journal change feed, like `PersistentChangePage`.
public struct JournalChangePage: Sendable, Hashable, Decodable {
    public var changes: [JournalChange]
    /// The next `since`: the last listed change's token, or `since` when none is listed.
    public var changeToken: ChangeToken
    /// More changes follow this page.
    public var hasMore: Bool
}

/// One answer of `GET /v1/journals/{journalID}`: the journal, and `hasMore` when it is a page.
struct JournalPage: Decodable {
    var journal: Journal
    var hasMore: Bool?
    private enum Keys: String, CodingKey { case hasMore }
    init(from decoder: any Decoder) throws {
        self.journal = try Journal(from: decoder)
        self.hasMore = try decoder.container(keyedBy: Keys.self).decodeIfPresent(Bool.self, forKey: .hasMore)
    }
}

/// How a selection changes an entry.
public enum SelectionMode: String, Sendable, Hashable, Codable {
    /// The picker's whole selection: the entry's photos become the picked ones, in the picked
    /// order; photos this device cannot show (only other devices hold them) are kept after them.
    case replace
    /// Only what was just chosen (the limited-library picker's completion handler): appended
    /// after the entry's photos, nothing dropped or reordered.
    case add
}

/// A selection request's body.
struct SelectionBody: Encodable {
    var cancelled: Bool
    var localIdentifiers: [String]
    var mode: SelectionMode?
    var session: String?
    var sequence: Int?
}

/// A selection's answer: the entry, and with a session whether this selection was applied.
struct SelectionAnswer: Decodable {
    var entry: JournalEntry
    var applied: Bool?
    private enum Keys: String, CodingKey { case applied }
    init(from decoder: any Decoder) throws {
        self.entry = try JournalEntry(from: decoder)
        self.applied = try decoder.container(keyedBy: Keys.self).decodeIfPresent(Bool.self, forKey: .applied)
    }
}

extension ConcordClient {
    /// Creates a journal of the account (device token).
    public func createJournal(title: String) async throws -> Journal {
        struct Body: Encodable { var title: String }
        return try await self.call(try self.request("POST", "/v1/journals", body: Body(title: title), idempotent: false))
    }

    /// The account's journals.
    public func listJournals() async throws -> [JournalSummary] {
        struct Answer: Decodable { var journals: [JournalSummary] }
        return try await self.call(APIRequest(method: "GET", path: "/v1/journals", idempotent: true), as: Answer.self).journals
    }

    /// A journal with its entries, photos resolved for this device. A journal larger than one
    /// answer of the server holds (`server.limits.journalAnswerBytes`) comes in pages
    /// (`"hasMore"`): they are fetched in turn, `after` the last entry of the one before, and put
    /// together; when the journal's version changes between pages, it is read again from the start
    /// (up to three times; then the pages as read are returned).
    public func journal(_ journalID: String) async throws -> Journal {
        var attempts = 0
        while true {
            attempts += 1
            var page = try await self.call(APIRequest(method: "GET", path: Self.journalPath(journalID), idempotent: true), as: JournalPage.self)
            var journal = page.journal
            var changed = false
            while page.hasMore == true, let last = page.journal.entries.last {
                page = try await self.call(APIRequest(method: "GET", path: Self.journalPath(journalID), query: [("after", last.entryID)], idempotent: true),
                                           as: JournalPage.self)
                if page.journal.version != journal.version { changed = true }
                journal.entries += page.journal.entries
            }
            if !changed || attempts >= 3 { return journal }
        }
    }

    /// Renames a journal; with `ifMatch`, only if its version is still that one (else
    /// `ConcordError` `versionMismatch` carrying the current `version`).
    @discardableResult
    public func renameJournal(_ journalID: String, title: String, ifMatch version: String? = nil) async throws -> Journal {
        struct Body: Encodable { var title: String }
        return try await self.call(try self.request("PUT", Self.journalPath(journalID), body: Body(title: title), idempotent: true, ifMatch: version))
    }

    /// Deletes a journal (with `ifMatch`: only at that version).
    public func deleteJournal(_ journalID: String, ifMatch version: String? = nil) async throws {
        _ = try await self.send(APIRequest(method: "DELETE", path: Self.journalPath(journalID), idempotent: true, ifMatch: version))
    }

    /// Creates or replaces entry `entryID` (chosen by the app). Local identifiers are mapped to
    /// cloud identifiers by the server; if any cannot be, `ConcordError` `unprocessable` (422)
    /// with the per-photo errors in `details` and nothing is stored.
    @discardableResult
    public func putEntry(journalID: String, entryID: String, text: String, photos: [JournalPhotoReference], ifMatch version: String? = nil) async throws -> JournalEntry {
        struct Body: Encodable { var text: String; var photos: [JournalPhotoReference] }
        return try await self.call(
            try self.request("PUT", Self.entryPath(journalID, entryID), body: Body(text: text, photos: photos), idempotent: true, ifMatch: version))
    }

    /// Deletes an entry (with `ifMatch`: only at that version).
    public func deleteEntry(journalID: String, entryID: String, ifMatch version: String? = nil) async throws {
        _ = try await self.send(APIRequest(method: "DELETE", path: Self.entryPath(journalID, entryID), idempotent: true, ifMatch: version))
    }

    /// Applies a photo picker's whole result to an entry (`PHPickerViewController` with
    /// `preselectedAssetIdentifiers` set to the entry's photos that resolve on this device):
    /// `localIdentifiers` in the order the person picked. The entry's photos become the picked
    /// ones in that order; a picked photo already in the entry keeps its cloud identifier; new ones
    /// are mapped local → cloud; preselected ones no longer picked are dropped. Photos that do not
    /// resolve on this device (only other devices hold them) could not be shown in its picker: they
    /// are kept, after the picked ones. `cancelled` changes nothing. A photo that cannot be mapped:
    /// `ConcordError` `unprocessable` (422) with the per-photo errors, and nothing changes.
    @discardableResult
    public func applySelection(journalID: String, entryID: String, localIdentifiers: [String], cancelled: Bool = false, ifMatch version: String? = nil) async throws -> JournalEntry {
        try await self.sendSelection(journalID: journalID, entryID: entryID,
                                     SelectionBody(cancelled: cancelled, localIdentifiers: localIdentifiers), ifMatch: version).entry
    }

    /// Adds what a picker reports as just chosen — the limited-library picker's completion
    /// handler (`presentLimitedLibraryPicker(from:completionHandler:)`) gives the identifiers the
    /// person added — to an entry: each one not already in it (as this device resolves the entry's
    /// photos) is mapped local → cloud and appended in the given order; one given twice is taken
    /// once. Nothing is dropped or reordered; an empty list changes nothing. A photo that cannot be
    /// mapped: `ConcordError` `unprocessable` (422), and nothing changes.
    @discardableResult
    public func addToEntry(journalID: String, entryID: String, localIdentifiers: [String], ifMatch version: String? = nil) async throws -> JournalEntry {
        try await self.sendSelection(journalID: journalID, entryID: entryID,
                                     SelectionBody(cancelled: false, localIdentifiers: localIdentifiers, mode: .add), ifMatch: version).entry
    }

    /// A selection's request. Sent with an Idempotency-Key (as every POST): a resend after a lost
    /// connection is answered from the server's record, not applied again.
    func sendSelection(journalID: String, entryID: String, _ body: SelectionBody, ifMatch version: String?) async throws -> SelectionAnswer {
        try await self.call(try self.request("POST", Self.entryPath(journalID, entryID) + "/selection", body: body, idempotent: false, ifMatch: version))
    }

    /// The account's current journal change token.
    public func currentJournalChangeToken() async throws -> ChangeToken {
        struct Answer: Decodable { var changeToken: ChangeToken }
        return try await self.call(APIRequest(method: "GET", path: "/v1/journals/token", idempotent: true), as: Answer.self).changeToken
    }

    /// Every journal change after `token`, fetching page after page until the server has no more.
    public func fetchJournalChanges(since token: ChangeToken, pageSize: Int? = nil) async throws -> JournalChangeFetchResult {
        var changes: [JournalChange] = []
        var since = token
        while true {
            let page = try await self.fetchJournalChangePage(since: since, limit: pageSize, wait: nil)
            changes += page.changes
            // A page that says "more" but moves nowhere would loop forever.
            guard page.hasMore, page.changeToken != since else { return JournalChangeFetchResult(changes: changes, changeToken: page.changeToken) }
            since = page.changeToken
        }
    }

    /// The journal changes after `token` page by page, fetched as they are consumed (as
    /// `persistentChangePages(since:)`): store each page's `changeToken` before asking for the next.
    public func journalChangePages(since token: ChangeToken, pageSize: Int? = nil) -> AsyncThrowingStream<JournalChangePage, any Error> {
        let cursor = FeedCursor<JournalChangePage>(since: token) { since in
            let page = try await self.fetchJournalChangePage(since: since, limit: pageSize)
            return (page, page.changeToken, page.hasMore)
        }
        return AsyncThrowingStream(unfolding: { try await cursor.next() })
    }

    /// One page of journal changes after `token` (`limit`: the server's default 1000 when nil).
    public func fetchJournalChangePage(since token: ChangeToken, limit: Int? = nil) async throws -> JournalChangePage {
        try await self.fetchJournalChangePage(since: token, limit: limit, wait: nil)
    }

    /// One page of the journal feed, long-polled when `wait` is given.
    func fetchJournalChangePage(since token: ChangeToken, limit: Int?, wait: Double?) async throws -> JournalChangePage {
        try await self.call(Self.feedRequest("/v1/journals/changes", since: token, limit: limit, wait: wait), as: JournalChangePage.self)
    }

    static func journalPath(_ journalID: String) -> String { "/v1/journals/" + percentEncoded(journalID) }
    static func entryPath(_ journalID: String, _ entryID: String) -> String {
        Self.journalPath(journalID) + "/entries/" + percentEncoded(entryID)
    }
}
