import Foundation

/// A journal as listed (API.md §6).
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

/// Inserted, updated and deleted IDs in one journal change.
public struct JournalChangeParts: Sendable, Hashable, Decodable {
    public var inserted: [String]
    public var updated: [String]
    public var deleted: [String]

    private enum Keys: String, CodingKey { case inserted, updated, deleted }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        self.inserted = try c.decodeIfPresent([String].self, forKey: .inserted) ?? []
        self.updated = try c.decodeIfPresent([String].self, forKey: .updated) ?? []
        self.deleted = try c.decodeIfPresent([String].self, forKey: .deleted) ?? []
    }
}

/// One change of the account's journals: journal IDs, and entries as `"<journalID>/<entryID>"`.
public struct JournalChange: Sendable, Hashable, Decodable {
    public var changeToken: ChangeToken
    public var journals: JournalChangeParts?
    public var entries: JournalChangeParts?
}

/// Every journal change since a token.
public struct JournalChangeFetchResult: Sendable, Hashable {
    public var changes: [JournalChange]
    /// The token to pass as `since` next time.
    public var changeToken: ChangeToken
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

struct JournalChangePage: Decodable {
    var changes: [JournalChange]
    var changeToken: ChangeToken
    var hasMore: Bool
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

    /// Applies a photo picker's result to an entry: `localIdentifiers` in the order the person
    /// picked; `cancelled` changes nothing. Photos only other devices hold are kept.
    @discardableResult
    public func applySelection(journalID: String, entryID: String, localIdentifiers: [String], cancelled: Bool = false, ifMatch version: String? = nil) async throws -> JournalEntry {
        struct Body: Encodable { var cancelled: Bool; var localIdentifiers: [String] }
        // Sent with an Idempotency-Key (as every non-idempotent POST): a resend after a lost
        // connection is answered from the server's record, not applied again.
        return try await self.call(
            try self.request(
                "POST", Self.entryPath(journalID, entryID) + "/selection", body: Body(cancelled: cancelled, localIdentifiers: localIdentifiers),
                idempotent: false, ifMatch: version))
    }

    /// The account's current journal change token.
    public func currentJournalChangeToken() async throws -> ChangeToken {
        struct Answer: Decodable { var changeToken: ChangeToken }
        return try await self.call(APIRequest(method: "GET", path: "/v1/journals/token", idempotent: true), as: Answer.self).changeToken
    }

    /// Every journal change after `token`, page after page.
    public func fetchJournalChanges(since token: ChangeToken, pageSize: Int? = nil) async throws -> JournalChangeFetchResult {
        var changes: [JournalChange] = []
        var since = token
        while true {
            let page = try await self.fetchJournalChangePage(since: since, limit: pageSize, wait: nil)
            changes += page.changes
            guard page.hasMore, page.changeToken != since else { return JournalChangeFetchResult(changes: changes, changeToken: page.changeToken) }
            since = page.changeToken
        }
    }

    /// One page of the journal feed, long-polled when `wait` is given.
    func fetchJournalChangePage(since token: ChangeToken, limit: Int?, wait: Double?) async throws -> JournalChangePage {
        try await self.call(Self.feedRequest("/v1/journals/changes", since: token, limit: limit, wait: wait), as: JournalChangePage.self)
    }

    private static func journalPath(_ journalID: String) -> String { "/v1/journals/" + percentEncoded(journalID) }
    private static func entryPath(_ journalID: String, _ entryID: String) -> String {
        Self.journalPath(journalID) + "/entries/" + percentEncoded(entryID)
    }
}
