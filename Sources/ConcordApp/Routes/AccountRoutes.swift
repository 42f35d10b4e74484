import ConcordDomain
import ConcordHTTP
import ConcordJSON
import Foundation

/// API.md §3: accounts (admin token) and devices (account token).
func accountRoutes(_ app: AppContext) -> [Route] {
    [
        Route("POST", "/v1/accounts") { request throws(APIError) in
            try app.requireAdmin(request)
            let body = try request.jsonBody()
            let name = try Codec.requiredString(body, "name", path: "name")
            let created = try app.call(.createAccount, request) { () throws(DomainError) in try app.service.createAccount(name: name) }
            return Codec.json(status: 201) { w in
                w.beginObject()
                w.key("accountID"); w.string(created.accountID)
                w.key("accountToken"); w.string(created.accountToken)
                w.endObject()
            }
        },
        Route("POST", "/v1/devices") { request throws(APIError) in
            let accountID = try app.requireAccount(request)
            let body = try request.jsonBody()
            let name = try Codec.requiredString(body, "name", path: "name")
            let platform = try Codec.string(body, "platform", path: "platform")
            let created = try app.call(.createDevice, request) { () throws(DomainError) in
                try app.service.createDevice(accountID: accountID, name: name, platform: platform)
            }
            return Codec.json(status: 201) { w in
                w.beginObject()
                w.key("deviceID"); w.string(created.deviceID)
                w.key("deviceToken"); w.string(created.deviceToken)
                w.endObject()
            }
        },
        Route("GET", "/v1/devices") { request throws(APIError) in
            let accountID = try app.requireAccount(request)
            let devices = try app.call(.listDevices, request) { () throws(DomainError) in try app.service.listDevices(accountID: accountID) }
            return Codec.json(capacity: 64 + 256 * devices.count) { w in
                w.beginObject()
                w.key("devices")
                w.beginArray()
                for d in devices {
                    w.beginObject()
                    w.key("deviceID"); w.string(d.deviceID)
                    w.key("name"); w.string(d.name)
                    w.key("platform"); Codec.optional(d.platform, &w)
                    w.key("createdAt"); w.string(RFC3339.format(d.createdAt))
                    w.key("objectCount"); w.int(d.objectCount)
                    w.key("changeToken"); w.string(d.changeToken)
                    w.endObject()
                }
                w.endArray()
                w.endObject()
            }
        },
        Route("DELETE", "/v1/devices/{deviceID}") { request throws(APIError) in
            let accountID = try app.requireAccount(request)
            let deviceID = try request.pathParameter("deviceID")
            try app.call(.deleteDevice, request) { () throws(DomainError) in
                try app.service.deleteDevice(accountID: accountID, deviceID: deviceID)
            }
            return .noContent
        },
    ]
}
