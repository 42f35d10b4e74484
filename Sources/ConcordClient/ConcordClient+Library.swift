import Foundation

extension ConcordClient {
    /// Applies upserts and deletes to this device's library atomically (one history entry when
    /// anything changed). Not split: the request must stay one change.
    ///
    /// The write precondition: sent with `If-Match` carrying the token of this client's last
    /// library write (`librarySyncState`; none before the first), so it applies only while nobody
    /// else wrote to the library since; otherwise nothing is stored and
    /// `LibraryChangedElsewhereError` is thrown with the current token — another installation
    /// holds this device's token (see docs/client.md, "A copied installation"). The answer's token
    /// is kept for the next write. `ifMatch` overrides the kept token for this write (`.any`: apply
    /// whatever the token). The client's library writes go one at a time.
    ///
    /// Retried after a lost connection: it goes with an `Idempotency-Key`, so a resend is
    /// answered from the server's record of the first send, not applied twice.
    @discardableResult
    public func applyChanges(_ changes: LibraryChanges, ifMatch: ChangeToken? = nil) async throws -> LibraryChangeResult {
        let body = try Self.makeEncoder().encode(changes)
        return try await self.trackedLibraryWrite(ifMatch: ifMatch) { precondition in
            try await self.call(APIRequest(method: "POST", path: "/v1/library/changes", body: body, idempotent: false, ifMatch: precondition?.rawValue))
        }
    }

    /// Replaces the whole library; the server works out what changed. `reset`: the library was
    /// replaced wholesale (restored, erased): one change without details, and every link of
    /// this device is dropped.
    ///
    /// The write precondition as for `applyChanges`: `If-Match` with the kept token, which the
    /// answer's replaces. With a precondition the PUT is not resent after a connection lost once
    /// it may have been delivered (the resend would find the token its first send moved); the
    /// `URLError` is thrown, and the next write first reads the history to learn whether it applied.
    ///
    /// A library of more than `partObjects` objects goes as an upload in parts: each part small
    /// enough to resend alone, `progress` told after each, one change at the commit, the same
    /// answer. A phone's first upload of a large library should take this path.
    @discardableResult
    public func replaceLibrary(_ library: LibrarySnapshot, reset: Bool = false, ifMatch: ChangeToken? = nil,
                               partObjects: Int = ConcordClient.defaultUploadPartObjects,
                               progress: (@Sendable (LibraryUploadProgress) -> Void)? = nil) async throws -> LibraryChangeResult {
        if library.objectCount > partObjects {
            return try await self.replaceLibraryInParts(library, reset: reset, ifMatch: ifMatch, partObjects: partObjects, progress: progress)
        }
        let query = reset ? [(name: "reset", value: "true")] : []
        let body = try Self.makeEncoder().encode(library)
        return try await self.trackedLibraryWrite(ifMatch: ifMatch) { precondition in
            let resendable = precondition == nil || precondition == .any
            return try await self.call(APIRequest(method: "PUT", path: "/v1/library", query: query, body: body, idempotent: resendable, ifMatch: precondition?.rawValue))
        }
    }

    /// A library write whose `412 versionMismatch` is thrown as `LibraryChangedElsewhereError`.
    static func libraryWrite<T>(_ write: () async throws -> T) async throws -> T {
        do {
            return try await write()
        } catch let error as ConcordError where error.status == 412 && error.name == "versionMismatch" {
            guard let token = error.details["changeToken"]?.stringValue else { throw error }
            throw LibraryChangedElsewhereError(currentChangeToken: ChangeToken(rawValue: token), message: error.message)
        }
    }

    /// Tells the server what the person allowed (`denied` blocks mapping with
    /// `accessUserDenied`; `limited` marks not-found errors with `limitedLibrary`).
    public func setAuthorizationStatus(_ status: AuthorizationStatus) async throws {
        struct Body: Encodable { var status: AuthorizationStatus }
        _ = try await self.send(try self.request("PUT", "/v1/library/authorization", body: Body(status: status), idempotent: true))
    }

    /// The stored object with this local identifier (`ConcordError` `notFound` when absent).
    public func object(withLocalIdentifier localIdentifier: String) async throws -> LibraryObject {
        try await self.call(APIRequest(method: "GET", path: "/v1/library/objects/" + percentEncoded(localIdentifier), idempotent: true))
    }

    /// A page of stored objects in local-identifier byte order (all types when `type` is nil).
    public func objects(ofType type: PersistentObjectType? = nil, after: String? = nil, limit: Int? = nil) async throws -> LibraryObjectPage {
        var query: [(name: String, value: String)] = []
        if let type { query.append(("type", type.rawValue)) }
        if let after { query.append(("after", after)) }
        if let limit { query.append(("limit", String(limit))) }
        return try await self.call(APIRequest(method: "GET", path: "/v1/library/objects", query: query, idempotent: true))
    }
}
