import Foundation

extension ConcordClient {
    /// Applies upserts and deletes to this device's library atomically (one history entry when
    /// anything changed). Not split: the request must stay one change.
    ///
    /// Retried after a lost connection: sending what is already stored changes nothing, so a
    /// repeat is harmless, though its counts then say `unchanged`.
    @discardableResult
    public func applyChanges(_ changes: LibraryChanges) async throws -> LibraryChangeResult {
        // Sent with an Idempotency-Key: a resend is answered from the server's record, not
        // recorded as a second change.
        try await self.call(try self.request("POST", "/v1/library/changes", body: changes, idempotent: false))
    }

    /// Replaces the whole library; the server works out what changed. `reset`: the library was
    /// replaced wholesale (restored, erased): one change without details, and every link of
    /// this device is dropped.
    @discardableResult
    public func replaceLibrary(_ library: LibrarySnapshot, reset: Bool = false) async throws -> LibraryChangeResult {
        let query = reset ? [(name: "reset", value: "true")] : []
        return try await self.call(try self.request("PUT", "/v1/library", query: query, body: library, idempotent: true))
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
