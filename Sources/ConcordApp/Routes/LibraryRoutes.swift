import ConcordDomain
import ConcordHTTP
import ConcordJSON

/// A device's library (device token). Both library writes take the write precondition
/// (`If-Match` with the library's change token), evaluated by the service inside the write
/// transaction after the body's own checks (`Codec.underIfMatch`).
func libraryRoutes(_ app: AppContext) -> [Route] {
    [
        app.deviceRoute("POST", "/v1/library/changes", operation: "applyChanges", body: .manifest, idempotent: true) { request, device in
            let changes = try Codec.changeRequest(try request.jsonBody(maxElements: app.configuration.server.limits.changeElements(bodyBytes: request.request.body.count)))
            let result = try Codec.underIfMatch(request) { ifMatch in try app.service.library.applyChanges(changes, ifMatch: ifMatch, device: device, idempotency: request.idempotency) }
            return Codec.changeResult(result)
        },
        app.deviceRoute("PUT", "/v1/library", operation: "replaceLibrary", body: .manifest) { request, device in
            let reset = try Codec.boolQuery(request, "reset") ?? false
            let snapshot = try Codec.snapshot(request, maxElements: app.configuration.server.limits.manifestElements(bodyBytes: request.request.body.count))
            try Codec.checkLibraryItems(snapshot, app)
            let result = try Codec.underIfMatch(request) { ifMatch in
                try app.service.library.replaceLibrary(snapshot, reset: reset, ifMatch: ifMatch, device: device)
            }
            return Codec.changeResult(result)
        },
        // Uploads in parts: a whole library as slices, applied by the commit as one PUT.
        app.deviceRoute("POST", "/v1/library/uploads", operation: "openUpload", idempotent: true) { request, device in
            try Codec.emptyObjectBody(request)
            let opened = try app.service.uploads.open(device: device, idempotency: request.idempotency)
            return Codec.strings(status: 201, [("uploadID", opened.uploadID), ("expiresAt", RFC3339.format(opened.expiresAt))])
        },
        app.deviceRoute("PUT", "/v1/library/uploads/{uploadID}/parts/{n}", operation: "putUploadPart", body: .manifest) { request, device in
            let uploadID = try request.pathParameter("uploadID")
            let n = try Codec.partNumber(try request.pathParameter("n"))
            let slice = try Codec.snapshot(request, maxElements: app.configuration.server.limits.manifestElements(bodyBytes: request.request.body.count))
            try Codec.checkLibraryItems(slice, app)
            let progress = try app.service.uploads.putPart(n, of: uploadID, slice, device: device)
            return Codec.uploadProgress(progress)
        },
        app.deviceRoute("POST", "/v1/library/uploads/{uploadID}/commit", operation: "commitUpload", idempotent: true) { request, device in
            let uploadID = try request.pathParameter("uploadID")
            let reset = try Codec.boolQuery(request, "reset") ?? false
            try Codec.emptyObjectBody(request)
            let result = try Codec.underIfMatch(request) { ifMatch in
                try app.service.uploads.commit(uploadID, reset: reset, ifMatch: ifMatch, device: device, idempotency: request.idempotency)
            }
            return Codec.changeResult(result)
        },
        app.deviceRoute("DELETE", "/v1/library/uploads/{uploadID}", operation: "deleteUpload") { request, device in
            try app.service.uploads.delete(try request.pathParameter("uploadID"), device: device)
            return .noContent
        },
        // Local identifiers contain '/': the rest of the path is the identifier, with raw
        // slashes or %2F alike (the router decodes the remainder as a whole).
        app.deviceRoute("GET", "/v1/library/objects/{localIdentifier...}", operation: "getObject") { request, device in
            let localIdentifier = try request.pathParameter("localIdentifier")
            let object = try app.service.library.object(localIdentifier: localIdentifier, device: device)
            return Codec.object(object)
        },
        app.deviceRoute("GET", "/v1/library/objects", operation: "listObjects") { request, device in
            var type: ObjectType?
            if let text = request.query("type") {
                guard let parsed = Codec.objectType(query: text) else {
                    throw APIError.badRequest("type must be assets, assetCollections or collectionLists.", field: "type")
                }
                type = parsed
            }
            let after = request.query("after")
            let limit = try Codec.intQuery(request, "limit")
            let page = try app.service.library.listObjects(type: type, after: after, limit: limit, device: device)
            return Codec.objectsPage(page.objects, next: page.next)
        },
        app.deviceRoute("PUT", "/v1/library/authorization", operation: "setAuthorization") { request, device in
            let body = try request.jsonBody()
            let text = try Codec.requiredString(body, "status", path: "status")
            guard let status = AuthorizationStatus(rawValue: text) else {
                throw APIError.badRequest("status must be authorized, limited or denied.", field: "status")
            }
            try app.service.library.setAuthorization(status, device: device)
            return Codec.strings([("status", status.rawValue)])
        },
    ]
}

extension Codec {
    /// A manifest (or an upload's part) lists at most `server.limits.libraryItems` objects; the
    /// `413` names the setting and the way around it.
    static func checkLibraryItems(_ snapshot: LibrarySnapshot, _ app: AppContext) throws(APIError) {
        let items = app.configuration.server.limits.libraryItems
        guard snapshot.count > items else { return }
        throw APIError.payloadTooLarge("A library manifest may list at most \(items) objects (setting server.limits.libraryItems); "
            + "send a larger library as an upload in parts: POST /v1/library/uploads, then its parts and commit.")
    }

    /// A part number of the path: 1–10 000, else `400` naming `n`.
    static func partNumber(_ text: String) throws(APIError) -> Int {
        guard !text.isEmpty, text.utf8.count <= 5, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let n = Int(text),
              (1...UploadService.maxPartNumber).contains(n) else {
            throw APIError.badRequest("A part number is an integer from 1 to \(UploadService.maxPartNumber).", field: "n")
        }
        return n
    }

    /// A body of `{}` (opening and committing an upload); an empty body means the same, and
    /// members are ignored as everywhere. Anything but a JSON object is `400`.
    static func emptyObjectBody(_ request: RequestContext) throws(APIError) {
        guard !request.request.body.isEmpty else { return }
        _ = try request.jsonBody()
    }

    /// Runs a library write under the request's `If-Match` ("Write precondition"). A malformed
    /// one is `400` naming `If-Match`, but a body that is `400`/`422` stays so whatever `If-Match`
    /// says, checks against the stored library included: the write runs once with a precondition
    /// nothing matches, so the body's own error comes first, and only its `412` (nothing stored)
    /// becomes the header's `400`.
    static func underIfMatch<T>(_ request: RequestContext, _ write: (IfMatch?) throws -> T) throws -> T {
        let ifMatch: IfMatch?
        do {
            ifMatch = try Codec.ifMatch(request)
        } catch {
            do {
                _ = try write(.versions([]))
            } catch DomainError.changeTokenMismatch {
                throw error
            }
            throw error   // not reached: an empty list of entity tags matches no token
        }
        return try write(ifMatch)
    }
}
