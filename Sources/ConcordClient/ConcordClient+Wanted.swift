import Foundation

/// An object of this device worth hashing (docs/client.md, "Fingerprints on demand").
public struct WantedObject: Sendable, Hashable, Decodable {
    public var localIdentifier: String
    public var type: PersistentObjectType
}

/// One page of `GET /v1/library/wanted`.
public struct WantedPage: Sendable, Hashable, Decodable {
    /// The page's objects, in local-identifier byte order.
    public var objects: [WantedObject]
    /// Pass as `after` for the next page; nil on the last.
    public var next: String?
    /// Every wanted object of the device, on every page (for a progress display).
    public var total: Int
}

/// Counts over this device's library (`GET /v1/library/status`), for an app's progress display.
public struct LibraryStatus: Sendable, Hashable, Decodable {
    /// Objects of every type.
    public var objects: Int
    /// Those with a fingerprint.
    public var withFingerprint: Int
    /// Those with a key (a `photoKitCloudIdentifier`).
    public var withKey: Int
    /// Those linked to a cloud record.
    public var linked: Int
    /// Those worth hashing: `WantedPage.total`.
    public var wanted: Int
}

/// The pages of `GET /v1/library/wanted`, fetched as they are consumed: each iteration starts
/// from `after` and follows `next` until it is null. Pages are in local-identifier order and
/// each starts after the last identifier of the one before, so an app may send the fingerprints
/// of one page before it asks for the next: objects that leave the list meanwhile shift nothing.
public struct WantedPages: AsyncSequence, Sendable {
    public typealias Element = WantedPage

    let client: ConcordClient
    let after: String?
    let limit: Int?

    public struct AsyncIterator: AsyncIteratorProtocol {
        let client: ConcordClient
        let limit: Int?
        var after: String?
        var finished = false

        public mutating func next() async throws -> WantedPage? {
            guard !self.finished else { return nil }
            let page = try await self.client.wantedPage(after: self.after, limit: self.limit)
            // A `next` that does not move on would loop forever.
            self.finished = page.next == nil || page.next == self.after
            self.after = page.next
            return page
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(client: self.client, limit: self.limit, after: self.after)
    }
}

extension ConcordClient {
    /// The objects of this device worth hashing, page by page: those with no
    /// fingerprint and no link that some other device's record could still match by content.
    /// Hash only these, send their fingerprints (`applyChanges`), and the server links them.
    ///
    /// `limit`: objects per page, 1–10 000 (nil: the server's 1000); outside that range the first
    /// page throws `ConcordError` `badRequest` with `field` `limit`. `after`: start after this
    /// local identifier. A `denied` device throws `ConcordPhotosError` `accessUserDenied`.
    public func wanted(after: String? = nil, limit: Int? = nil) -> WantedPages {
        WantedPages(client: self, after: after, limit: limit)
    }

    /// One page of `wanted(after:limit:)`, for an app that drives its own loop.
    public func wantedPage(after: String? = nil, limit: Int? = nil) async throws -> WantedPage {
        var query: [(name: String, value: String)] = []
        if let after { query.append(("after", after)) }
        if let limit { query.append(("limit", String(limit))) }
        return try await self.call(APIRequest(method: "GET", path: "/v1/library/wanted", query: query, idempotent: true))
    }

    /// Counts over this device's library: objects, with a fingerprint, with a key, linked, wanted.
    public func status() async throws -> LibraryStatus {
        try await self.call(APIRequest(method: "GET", path: "/v1/library/status", idempotent: true))
    }
}
