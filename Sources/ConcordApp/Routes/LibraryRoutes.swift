import ConcordDomain
import ConcordHTTP
import ConcordJSON

/// API.md §4: a device's library (device token).
func libraryRoutes(_ app: AppContext) -> [Route] {
    [
        app.deviceRoute("POST", "/v1/library/changes", operation: "applyChanges", body: .manifest, idempotent: true) { request, device in
            let changes = try Codec.changeRequest(try request.jsonBody(maxElements: app.configuration.server.limits.jsonElements))
            let result = try app.service.library.applyChanges(changes, device: device)
            return Codec.json { Codec.write(result, into: &$0) }
        },
        app.deviceRoute("PUT", "/v1/library", operation: "replaceLibrary", body: .manifest) { request, device in
            let reset = try Codec.boolQuery(request, "reset") ?? false
            let snapshot = try Codec.snapshot(try request.jsonBody(maxElements: app.configuration.server.limits.jsonElements))
            let items = app.configuration.server.limits.libraryItems
            guard snapshot.objects.count <= items else {
                throw APIError.payloadTooLarge("A library manifest may list at most \(items) objects.")
            }
            let result = try app.service.library.replaceLibrary(snapshot, reset: reset, device: device)
            return Codec.json { Codec.write(result, into: &$0) }
        },
        // Local identifiers contain '/': the rest of the path is the identifier, with raw
        // slashes or %2F alike (the router decodes the remainder as a whole).
        app.deviceRoute("GET", "/v1/library/objects/{localIdentifier...}", operation: "getObject") { request, device in
            let localIdentifier = try request.pathParameter("localIdentifier")
            let object = try app.service.library.object(localIdentifier: localIdentifier, device: device)
            return Codec.json { Codec.write(object, into: &$0) }
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
            return Codec.json(capacity: 64 + 160 * page.objects.count) { w in
                w.beginObject()
                w.key("objects")
                w.beginArray()
                for o in page.objects { Codec.write(o, into: &w) }
                w.endArray()
                w.key("next"); Codec.optional(page.next, &w)
                w.endObject()
            }
        },
        app.deviceRoute("PUT", "/v1/library/authorization", operation: "setAuthorization") { request, device in
            let body = try request.jsonBody()
            let text = try Codec.requiredString(body, "status", path: "status")
            guard let status = AuthorizationStatus(rawValue: text) else {
                throw APIError.badRequest("status must be authorized, limited or denied.", field: "status")
            }
            try app.service.library.setAuthorization(status, device: device)
            return Codec.json { w in
                w.beginObject()
                w.key("status"); w.string(status.rawValue)
                w.endObject()
            }
        },
    ]
}
