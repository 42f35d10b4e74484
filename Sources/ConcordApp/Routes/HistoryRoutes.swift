import ConcordDomain
import ConcordHTTP
import ConcordJSON

/// API.md §7: a device's change history (device token).
func historyRoutes(_ app: AppContext) -> [Route] {
    [
        Route("GET", "/v1/library/token") { request throws(APIError) in
            let device = try app.requireDevice(request)
            let token = try app.call(.currentChangeToken, request) { () throws(DomainError) in
                try app.service.currentChangeToken(device: device)
            }
            return Codec.json { w in
                w.beginObject()
                w.key("changeToken"); w.string(token)
                w.endObject()
            }
        },
        Route("GET", "/v1/library/changes") { request throws(APIError) in
            let device = try app.requireDevice(request)
            guard let since = request.query("since") else { throw APIError.missingField("since") }
            let limit = try Codec.intQuery(request, "limit")
            let page = try app.call(.changes, request) { () throws(DomainError) in
                try app.service.changes(since: since, limit: limit, device: device)
            }
            return Codec.json(capacity: 128 + 256 * page.changes.count) { w in
                w.beginObject()
                w.key("changes")
                w.beginArray()
                for change in page.changes { Codec.write(change, into: &w) }
                w.endArray()
                w.key("changeToken"); w.string(page.changeToken)
                w.key("hasMore"); w.bool(page.hasMore)
                w.endObject()
            }
        },
    ]
}
