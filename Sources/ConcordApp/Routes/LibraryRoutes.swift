import ConcordDomain
import ConcordHTTP
import ConcordJSON

/// API.md §4: a device's library (device token).
func libraryRoutes(_ app: AppContext) -> [Route] {
    [
        Route("POST", "/v1/library/changes") { request throws(APIError) in
            let device = try app.requireDevice(request)
            let changes = try Codec.changeRequest(try request.jsonBody())
            let result = try app.call(.applyChanges, request) { () throws(DomainError) in
                try app.service.applyChanges(changes, device: device)
            }
            return Codec.json { Codec.write(result, into: &$0) }
        },
        Route("PUT", "/v1/library") { request throws(APIError) in
            let device = try app.requireDevice(request)
            let reset = try Codec.boolQuery(request, "reset") ?? false
            let snapshot = try Codec.snapshot(try request.jsonBody())
            let result = try app.call(.replaceLibrary, request) { () throws(DomainError) in
                try app.service.replaceLibrary(snapshot, reset: reset, device: device)
            }
            return Codec.json { Codec.write(result, into: &$0) }
        },
        // Local identifiers contain '/': the rest of the path is the identifier, with raw
        // slashes or %2F alike (the router decodes the remainder as a whole).
        Route("GET", "/v1/library/objects/{localIdentifier...}") { request throws(APIError) in
            let device = try app.requireDevice(request)
            let localIdentifier = try request.pathParameter("localIdentifier")
            let object = try app.call(.getObject, request) { () throws(DomainError) in
                try app.service.object(localIdentifier: localIdentifier, device: device)
            }
            return Codec.json { Codec.write(object, into: &$0) }
        },
        Route("GET", "/v1/library/objects") { request throws(APIError) in
            let device = try app.requireDevice(request)
            var types = ObjectType.allCases
            if let text = request.query("type") {
                guard let type = Codec.objectType(query: text) else {
                    throw APIError.badRequest("type must be assets, assetCollections or collectionLists.", field: "type")
                }
                types = [type]
            }
            let after = request.query("after")
            let limit = try Codec.intQuery(request, "limit")
            let page = try app.call(.listObjects, request) { () throws(DomainError) in
                try listObjects(app.service, types: types, after: after, limit: limit, device: device)
            }
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
        Route("PUT", "/v1/library/authorization") { request throws(APIError) in
            let device = try app.requireDevice(request)
            let body = try request.jsonBody()
            let text = try Codec.requiredString(body, "status", path: "status")
            guard let status = AuthorizationStatus(rawValue: text) else {
                throw APIError.badRequest("status must be authorized, limited or denied.", field: "status")
            }
            try app.call(.setAuthorization, request) { () throws(DomainError) in try app.service.setAuthorization(status, device: device) }
            return Codec.json { w in
                w.beginObject()
                w.key("status"); w.string(status.rawValue)
                w.endObject()
            }
        },
    ]
}

/// One page over `types` in local identifier byte order. With several types (no `type`
/// parameter), each type's page after `after` is read and the pages merged: identifiers
/// are unique across types, so the merged first `limit` are the library's next `limit`.
private func listObjects(_ service: ConcordService, types: [ObjectType], after: String?, limit: Int?, device: DeviceRef) throws(DomainError) -> (objects: [LibraryObject], next: String?) {
    if types.count == 1 {
        let page = try service.listObjects(type: types[0], after: after, limit: limit, device: device)
        return (page.objects, page.next)
    }
    var all: [LibraryObject] = []
    var more = false
    for type in types {
        let page = try service.listObjects(type: type, after: after, limit: limit, device: device)
        all += page.objects
        if page.next != nil { more = true }
    }
    let max = limit ?? service.configuration.defaultObjectsLimit
    all.sort { $0.localIdentifier.utf8.lexicographicallyPrecedes($1.localIdentifier.utf8) }
    if all.count > max {
        all.removeLast(all.count - max)
        more = true
    }
    return (all, more ? all.last?.localIdentifier : nil)
}
