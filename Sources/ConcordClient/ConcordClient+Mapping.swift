import Foundation

/// The answer for one local identifier, like PhotoKit's `PHCloudIdentifierMapping`: either
/// `cloudIdentifier` or `error` is set.
public struct CloudIdentifierMapping: Sendable, Hashable {
    /// The local identifier asked about.
    public var localIdentifier: String
    /// The account-wide identifier of the object.
    public var cloudIdentifier: CloudIdentifier?
    /// Why there is none (`identifierNotFound`).
    public var error: ConcordPhotosError?

    public init(localIdentifier: String, cloudIdentifier: CloudIdentifier?, error: ConcordPhotosError?) {
        self.localIdentifier = localIdentifier
        self.cloudIdentifier = cloudIdentifier
        self.error = error
    }
}

/// The answer for one cloud identifier, like PhotoKit's `PHLocalIdentifierMapping`: either
/// `localIdentifier` or `error` is set.
public struct LocalIdentifierMapping: Sendable, Hashable {
    /// The cloud identifier asked about.
    public var cloudIdentifier: CloudIdentifier
    /// This device's object for it.
    public var localIdentifier: String?
    /// Why there is none: `identifierNotFound`, `multipleIdentifiersFound` (candidates in
    /// `error.localIdentifiers`; let the person choose, then `link`), `invalidIdentifier`.
    public var error: ConcordPhotosError?

    public init(cloudIdentifier: CloudIdentifier, localIdentifier: String?, error: ConcordPhotosError?) {
        self.cloudIdentifier = cloudIdentifier
        self.localIdentifier = localIdentifier
        self.error = error
    }
}

/// The mapping answers of both directions as they travel: per item the identifier asked about,
/// and the answer or an error.
private struct MappingsBody: Decodable {
    struct Item: Decodable {
        var localIdentifier: String?
        var cloudIdentifier: CloudIdentifier?
        var error: WireError?
    }
    var mappings: [Item]
}

private struct LinkBody: Codable {
    var cloudIdentifier: CloudIdentifier
    var localIdentifier: String
}

extension ConcordClient {
    /// Local → cloud for this device (device token), keyed by local identifier as PhotoKit's
    /// `cloudIdentifierMappings(forLocalIdentifiers:)` answers. Batches larger than the
    /// server's `maxBatch` are split.
    public func cloudIdentifierMappings(forLocalIdentifiers localIdentifiers: [String]) async throws -> [String: CloudIdentifierMapping] {
        let ordered = try await self.orderedCloudIdentifierMappings(forLocalIdentifiers: localIdentifiers)
        return Dictionary(ordered.map { ($0.localIdentifier, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Local → cloud, one mapping per item in the request's order (duplicates answered each time).
    public func orderedCloudIdentifierMappings(forLocalIdentifiers localIdentifiers: [String]) async throws -> [CloudIdentifierMapping] {
        try await self.batched(localIdentifiers) { chunk in
            struct Body: Encodable { var localIdentifiers: [String] }
            let request = try self.request("POST", "/v1/library/cloud-identifiers", body: Body(localIdentifiers: chunk), idempotent: true)
            let answer = try await self.call(request, as: MappingsBody.self)
            try Self.expectCount(answer.mappings.count, chunk.count)
            // Positions are the contract ("answers keep the request's order"); the echoed
            // identifier is ours already.
            return zip(chunk, answer.mappings).map { id, item in
                CloudIdentifierMapping(
                    localIdentifier: id, cloudIdentifier: item.error == nil ? item.cloudIdentifier : nil,
                    error: item.error?.photosError() ?? (item.cloudIdentifier == nil ? Self.missingAnswer : nil))
            }
        }
    }

    /// Cloud → local for this device, keyed by cloud identifier as PhotoKit's
    /// `localIdentifierMappings(for:)` answers.
    ///
    /// The server looks for the object by the record's link, then by the keys the record carries
    /// (PhotoKit's cloud identifiers), then by content. `contentMatch: false` skips content
    /// (an identifier not found by link or key is `identifierNotFound`), for an app that will not
    /// hash anything now; by default it is not sent, so the server takes its usual path.
    public func localIdentifierMappings(for cloudIdentifiers: [CloudIdentifier], contentMatch: Bool = true) async throws -> [CloudIdentifier: LocalIdentifierMapping] {
        let ordered = try await self.orderedLocalIdentifierMappings(for: cloudIdentifiers, contentMatch: contentMatch)
        return Dictionary(ordered.map { ($0.cloudIdentifier, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Cloud → local, one mapping per item in the request's order (`contentMatch` as in
    /// `localIdentifierMappings(for:contentMatch:)`).
    public func orderedLocalIdentifierMappings(for cloudIdentifiers: [CloudIdentifier], contentMatch: Bool = true) async throws -> [LocalIdentifierMapping] {
        try await self.batched(cloudIdentifiers) { chunk in
            struct Body: Encodable {
                var cloudIdentifiers: [CloudIdentifier]
                /// Nil (not sent) for the default, true: the body stays the one the server reads fastest.
                var contentMatch: Bool?
            }
            let body = Body(cloudIdentifiers: chunk, contentMatch: contentMatch ? nil : false)
            let request = try self.request("POST", "/v1/library/local-identifiers", body: body, idempotent: true)
            let answer = try await self.call(request, as: MappingsBody.self)
            try Self.expectCount(answer.mappings.count, chunk.count)
            return zip(chunk, answer.mappings).map { id, item in
                LocalIdentifierMapping(
                    cloudIdentifier: id, localIdentifier: item.error == nil ? item.localIdentifier : nil,
                    error: item.error?.photosError() ?? (item.localIdentifier == nil ? Self.missingAnswer : nil))
            }
        }
    }

    /// Records the person's choice of which object `cloudIdentifier` means on this device
    /// (after `multipleIdentifiersFound`). Throws `ConcordError` `notFound` (no such record in
    /// the account, or no such object) or `fingerprintMismatch`.
    public func link(cloudIdentifier: CloudIdentifier, toLocalIdentifier localIdentifier: String) async throws {
        let request = try self.request(
            "POST", "/v1/library/links", body: LinkBody(cloudIdentifier: cloudIdentifier, localIdentifier: localIdentifier), idempotent: true)
        _ = try await self.send(request)
    }

    static func expectCount(_ answered: Int, _ asked: Int) throws {
        guard answered == asked else {
            throw ConcordError(status: 200, name: "invalidResponse", message: "Asked \(asked) items, answered \(answered).")
        }
    }

    /// An item the server answered with neither an identifier nor an error.
    static var missingAnswer: ConcordPhotosError {
        ConcordPhotosError(code: .invalid, name: "invalidResponse", message: "The server answered neither an identifier nor an error.")
    }
}
