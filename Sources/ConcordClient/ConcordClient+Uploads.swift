import Foundation

/// An upload in parts the server holds open: a whole library sent as slices, applied at the commit.
public struct LibraryUpload: Sendable, Hashable, Codable {
    public var uploadID: String
    /// When it expires if no further part arrives (24 hours after the last one).
    public var expiresAt: Date
}

/// Parts and objects the server holds for an upload so far.
public struct LibraryUploadPartResult: Sendable, Hashable, Codable {
    public var parts: Int
    public var objects: Int
}

/// How far `replaceLibrary` got with an upload in parts, reported after each part.
public struct LibraryUploadProgress: Sendable, Hashable {
    public var partsSent: Int
    public var partsTotal: Int
    public var objectsSent: Int
    public var objectsTotal: Int
}

extension LibrarySnapshot {
    /// Objects of every type.
    public var objectCount: Int { self.assets.count + self.assetCollections.count + self.collectionLists.count }

    /// The snapshot in slices of at most `size` objects (assets, then albums, then folders), for the
    /// parts of an upload. An empty snapshot is no slice.
    public func parts(of size: Int) -> [LibrarySnapshot] {
        precondition(size > 0, "a part holds at least one object")
        var parts: [LibrarySnapshot] = []
        var current = LibrarySnapshot()
        func flushIfFull() {
            if current.objectCount == size { parts.append(current); current = LibrarySnapshot() }
        }
        for a in self.assets { current.assets.append(a); flushIfFull() }
        for c in self.assetCollections { current.assetCollections.append(c); flushIfFull() }
        for l in self.collectionLists { current.collectionLists.append(l); flushIfFull() }
        if current.objectCount > 0 { parts.append(current) }
        return parts
    }
}

extension ConcordClient {
    /// Above this many objects `replaceLibrary` sends the library as an upload in parts.
    public static let defaultUploadPartObjects = 10_000

    /// Opens an upload in parts: send the library's slices with `sendPart`, then `commitUpload`.
    /// For a library too large to build in memory at once (enumerate PhotoKit a slice at a time).
    public func openLibraryUpload() async throws -> LibraryUpload {
        try await self.call(try self.request("POST", "/v1/library/uploads", body: [String: String](), idempotent: false))
    }

    /// Sends part `number` (1–10 000) of `upload`: any slice of the library; sending a number
    /// again replaces that part. Resent after a lost connection (a resend replaces it with itself).
    @discardableResult
    public func sendPart(_ number: Int, of upload: LibraryUpload, _ slice: LibrarySnapshot) async throws -> LibraryUploadPartResult {
        try await self.call(try self.request("PUT", "/v1/library/uploads/\(percentEncoded(upload.uploadID))/parts/\(number)", body: slice, idempotent: true))
    }

    /// Applies every part as one `replaceLibrary` would (one change); the upload is gone. A refused
    /// commit (a `400`, `422` or `LibraryChangedElsewhereError`) leaves it open to correct. The
    /// write precondition and the kept token as for `applyChanges`.
    @discardableResult
    public func commitUpload(_ upload: LibraryUpload, reset: Bool = false, ifMatch: ChangeToken? = nil) async throws -> LibraryChangeResult {
        try await self.trackedLibraryWrite(ifMatch: ifMatch) { precondition in
            try await self.commitUploadRequest(upload, reset: reset, precondition: precondition)
        }
    }

    /// The commit itself, in a library write's turn.
    private func commitUploadRequest(_ upload: LibraryUpload, reset: Bool, precondition: ChangeToken?) async throws -> LibraryChangeResult {
        let query = reset ? [(name: "reset", value: "true")] : []
        return try await self.call(try self.request("POST", "/v1/library/uploads/\(percentEncoded(upload.uploadID))/commit", query: query,
                                                    body: [String: String](), idempotent: false, ifMatch: precondition?.rawValue))
    }

    /// Discards an upload and its parts.
    public func discardUpload(_ upload: LibraryUpload) async throws {
        _ = try await self.send(APIRequest(method: "DELETE", path: "/v1/library/uploads/\(percentEncoded(upload.uploadID))", idempotent: true))
    }

    /// `replaceLibrary` as an upload in parts of `partObjects` objects: open, each part (progress
    /// after each), commit in the library write's turn. Any failure discards the upload (best
    /// effort) and is rethrown.
    func replaceLibraryInParts(_ library: LibrarySnapshot, reset: Bool, ifMatch: ChangeToken?, partObjects: Int,
                               progress: (@Sendable (LibraryUploadProgress) -> Void)?) async throws -> LibraryChangeResult {
        let parts = library.parts(of: partObjects)
        let upload = try await self.openLibraryUpload()
        do {
            var sent = 0
            for (i, part) in parts.enumerated() {
                try await self.sendPart(i + 1, of: upload, part)
                sent += part.objectCount
                progress?(LibraryUploadProgress(partsSent: i + 1, partsTotal: parts.count, objectsSent: sent, objectsTotal: library.objectCount))
            }
            return try await self.commitUpload(upload, reset: reset, ifMatch: ifMatch)
        } catch {
            try? await self.discardUpload(upload)
            throw error
        }
    }
}
