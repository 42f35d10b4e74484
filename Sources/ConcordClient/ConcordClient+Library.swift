import Foundation

extension ConcordClient {
    /// Applies upserts and deletes to this device's library atomically (one history entry when
    /// anything changed). Not split: the request must stay one change.
    ///
    /// Retried after a lost connection: sending what is already stored changes nothing, so a
    /// repeat is harmless, though its counts then say `unchanged`.
    ///
    /// `ifMatch`: the write precondition (API.md §4) — applied only while the library's change
    /// token is still this one (the token of this installation's last write, or
    /// `currentChangeToken()`); otherwise nothing is stored and `LibraryChangedElsewhereError` is
    /// thrown with the current token.
    @discardableResult
    public func applyChanges(_ changes: LibraryChanges, ifMatch: ChangeToken? = nil) async throws -> LibraryChangeResult {
        // Sent with an Idempotency-Key: a resend is answered from the server's record, not
        // recorded as a second change (nor refused as stale by the token its first send moved).
        try await Self.libraryWrite {
            try await self.call(try self.request("POST", "/v1/library/changes", body: changes, idempotent: false, ifMatch: ifMatch?.rawValue))
        }
    }

    /// Replaces the whole library; the server works out what changed. `reset`: the library was
    /// replaced wholesale (restored, erased): one change without details, and every link of
    /// this device is dropped.
    ///
    /// `ifMatch`: the write precondition, as for `applyChanges` (`LibraryChangedElsewhereError`
    /// when the token moved). With it the PUT is not resent after a connection lost once it may
    /// have been delivered: the resend would find the token its first send moved, and look like a
    /// copy of this installation had written.
    ///
    /// A library of more than `partObjects` objects goes as an upload in parts (API.md §4): each
    /// part small enough to resend alone, `progress` told after each, one change at the commit,
    /// the same answer. A phone's first upload of a large library should take this path.
    @discardableResult
    public func replaceLibrary(_ library: LibrarySnapshot, reset: Bool = false, ifMatch: ChangeToken? = nil,
                               partObjects: Int = ConcordClient.defaultUploadPartObjects,
                               progress: (@Sendable (LibraryUploadProgress) -> Void)? = nil) async throws -> LibraryChangeResult {
        if library.objectCount > partObjects {
            return try await self.replaceLibraryInParts(library, reset: reset, ifMatch: ifMatch, partObjects: partObjects, progress: progress)
        }
        let query = reset ? [(name: "reset", value: "true")] : []
        return try await Self.libraryWrite {
            try await self.call(try self.request("PUT", "/v1/library", query: query, body: library, idempotent: ifMatch == nil, ifMatch: ifMatch?.rawValue))
        }
    }

    /// A library write whose `412 versionMismatch` (API.md §4) is thrown as `LibraryChangedElsewhereError`.
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
