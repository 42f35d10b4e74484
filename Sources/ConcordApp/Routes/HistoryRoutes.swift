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
            return Codec.changeTokenResponse(token)
        },
        Route("GET", "/v1/library/changes") { request throws(APIError) in
            let device = try app.requireDevice(request)
            guard let since = request.query("since") else { throw APIError.missingField("since") }
            let limit = try Codec.intQuery(request, "limit")
            let page = try app.call(.changes, request) { () throws(DomainError) in
                try app.service.changes(since: since, limit: limit, device: device)
            }
            return Codec.changePageResponse(page.changes, changeToken: page.changeToken, hasMore: page.hasMore) { change, w in
                Codec.write(change, into: &w)
            }
        },
    ]
}
