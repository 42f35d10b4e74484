import Foundation

/// Inserted, updated and deleted objects of one type in one change, like PhotoKit's
/// `PHPersistentObjectChangeDetails`.
public struct PersistentObjectChangeDetails: Sendable, Hashable {
    public var objectType: PersistentObjectType
    public var insertedLocalIdentifiers: Set<String>
    public var updatedLocalIdentifiers: Set<String>
    public var deletedLocalIdentifiers: Set<String>
}

/// One change of the library, like PhotoKit's `PHPersistentChange`.
public struct PersistentChange: Sendable, Hashable {
    /// The token of this change: pass it as `since` to fetch what came after it.
    public var changeToken: ChangeToken
    let details: [PersistentObjectType: PersistentObjectChangeDetails]
    let error: ConcordPhotosError?

    /// What changed among objects of `objectType`. Throws `persistentChangeDetailsUnavailable`
    /// for a reset library: refetch everything you track.
    public func changeDetails(for objectType: PersistentObjectType) throws -> PersistentObjectChangeDetails {
        if let error = self.error { throw error }
        return self.details[objectType]
            ?? PersistentObjectChangeDetails(objectType: objectType, insertedLocalIdentifiers: [], updatedLocalIdentifiers: [], deletedLocalIdentifiers: [])
    }
}

/// Every change since a token, like PhotoKit's `PHPersistentChangeFetchResult`.
public struct PersistentChangeFetchResult: Sendable, RandomAccessCollection {
    /// The changes, oldest first.
    public var changes: [PersistentChange]
    /// The token to store and pass as `since` next time.
    public var changeToken: ChangeToken

    public var startIndex: Int { self.changes.startIndex }
    public var endIndex: Int { self.changes.endIndex }
    public subscript(position: Int) -> PersistentChange { self.changes[position] }
}

/// One page of the change feed.
public struct PersistentChangePage: Sendable {
    public var changes: [PersistentChange]
    /// The next `since`: the last listed change's token, or `since` when none is listed.
    public var changeToken: ChangeToken
    /// More changes follow this page.
    public var hasMore: Bool
}

/// A page of the library feed as it travels.
struct WireChangePage: Decodable {
    struct Parts: Decodable {
        var inserted: [String]?
        var updated: [String]?
        var deleted: [String]?
    }
    struct Change: Decodable {
        var changeToken: ChangeToken
        var assets: Parts?
        var assetCollections: Parts?
        var collectionLists: Parts?
        var error: WireError?
    }
    var changes: [Change]
    var changeToken: ChangeToken
    var hasMore: Bool
}

extension ConcordClient {
    /// The library's current token (cheap): store it after a full fetch of the library.
    public func currentChangeToken() async throws -> ChangeToken {
        struct Answer: Decodable { var changeToken: ChangeToken }
        return try await self.call(APIRequest(method: "GET", path: "/v1/library/token", idempotent: true), as: Answer.self).changeToken
    }

    /// Every change of this device's library after `token`, fetching page after page until
    /// the server has no more. Throws `ConcordPhotosError` `persistentChangeTokenExpired`
    /// (refetch everything, start from `currentChangeToken()`), `ConcordError`
    /// `invalidChangeToken`.
    public func fetchPersistentChanges(since token: ChangeToken, pageSize: Int? = nil) async throws -> PersistentChangeFetchResult {
        var changes: [PersistentChange] = []
        var since = token
        while true {
            let page = try await self.fetchPersistentChangePage(since: since, limit: pageSize)
            changes += page.changes
            // A page that says "more" but moves nowhere would loop forever.
            guard page.hasMore, page.changeToken != since else { return PersistentChangeFetchResult(changes: changes, changeToken: page.changeToken) }
            since = page.changeToken
        }
    }

    /// The changes after `token` page by page, fetched as they are consumed: a sync engine can
    /// process each page and store its `changeToken` before asking for the next.
    public func persistentChangePages(since token: ChangeToken, pageSize: Int? = nil) -> AsyncThrowingStream<PersistentChangePage, any Error> {
        let cursor = FeedCursor<PersistentChangePage>(since: token) { since in
            let page = try await self.fetchPersistentChangePage(since: since, limit: pageSize)
            return (page, page.changeToken, page.hasMore)
        }
        return AsyncThrowingStream(unfolding: { try await cursor.next() })
    }

    /// One page of changes after `token` (`limit`: the server's default 1000 when nil).
    public func fetchPersistentChangePage(since token: ChangeToken, limit: Int? = nil) async throws -> PersistentChangePage {
        try await self.fetchPersistentChangePage(since: token, limit: limit, wait: nil)
    }

    /// A page, long-polled when `wait` is given (see `pollPersistentChangePage`).
    func fetchPersistentChangePage(since token: ChangeToken, limit: Int?, wait: Double?) async throws -> PersistentChangePage {
        let request = Self.feedRequest("/v1/library/changes", since: token, limit: limit, wait: wait)
        let page = try await self.call(request, as: WireChangePage.self)
        return PersistentChangePage(changes: page.changes.map(Self.change), changeToken: page.changeToken, hasMore: page.hasMore)
    }

    /// A GET of a change feed; a long-poll's answer is waited for past its `wait`.
    static func feedRequest(_ path: String, since token: ChangeToken, limit: Int?, wait: Double?) -> APIRequest {
        var query = [(name: "since", value: token.rawValue)]
        if let limit { query.append(("limit", String(limit))) }
        var request = APIRequest(method: "GET", path: path, query: query, idempotent: true)
        if let wait, wait > 0 {
            request.query.append(("wait", String(wait)))
            request.timeout = wait + 15
        }
        return request
    }

    private static func change(_ wire: WireChangePage.Change) -> PersistentChange {
        var details: [PersistentObjectType: PersistentObjectChangeDetails] = [:]
        for (type, parts) in [(PersistentObjectType.asset, wire.assets), (.assetCollection, wire.assetCollections), (.collectionList, wire.collectionLists)] {
            details[type] = PersistentObjectChangeDetails(
                objectType: type, insertedLocalIdentifiers: Set(parts?.inserted ?? []),
                updatedLocalIdentifiers: Set(parts?.updated ?? []), deletedLocalIdentifiers: Set(parts?.deleted ?? []))
        }
        return PersistentChange(changeToken: wire.changeToken, details: details, error: wire.error?.photosError())
    }
}

/// Where a stream of feed pages stands (`persistentChangePages`, `journalChangePages`).
actor FeedCursor<Page: Sendable> {
    private var since: ChangeToken
    private var finished = false
    private let fetch: @Sendable (ChangeToken) async throws -> (page: Page, next: ChangeToken, hasMore: Bool)

    init(since: ChangeToken, fetch: @escaping @Sendable (ChangeToken) async throws -> (page: Page, next: ChangeToken, hasMore: Bool)) {
        self.since = since
        self.fetch = fetch
    }

    /// The next page, or nil once a page said nothing more follows.
    func next() async throws -> Page? {
        guard !self.finished else { return nil }
        let (page, next, hasMore) = try await self.fetch(self.since)
        // A page that says "more" but moves nowhere would loop forever.
        self.finished = !hasMore || next == self.since
        self.since = next
        return page
    }
}
