import ConcordDomain
import ConcordHTTP
import ConcordJSON
import Foundation

/// API.md §3: accounts (admin token) and devices (account token).
func accountRoutes(_ app: AppContext) -> [Route] {
    [
        app.adminRoute("POST", "/v1/accounts", operation: "createAccount") { request, _ in
            let body = try request.jsonBody()
            let name = try Codec.requiredString(body, "name", path: "name")
            let created = try app.service.accounts.createAccount(name: name)
            return Codec.json(status: 201) { w in
                w.beginObject()
                w.key("accountID"); w.string(created.accountID)
                w.key("accountToken"); w.string(created.accountToken)
                w.endObject()
            }
        },
        app.accountRoute("POST", "/v1/devices", operation: "createDevice") { request, accountID in
            let body = try request.jsonBody()
            let name = try Codec.requiredString(body, "name", path: "name")
            let platform = try Codec.string(body, "platform", path: "platform")
            let created = try app.service.accounts.createDevice(accountID: accountID, name: name, platform: platform)
            return Codec.json(status: 201) { w in
                w.beginObject()
                w.key("deviceID"); w.string(created.deviceID)
                w.key("deviceToken"); w.string(created.deviceToken)
                w.endObject()
            }
        },
        app.accountRoute("GET", "/v1/devices", operation: "listDevices") { request, accountID in
            let devices = try app.service.accounts.listDevices(accountID: accountID)
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
        app.accountRoute("DELETE", "/v1/devices/{deviceID}", operation: "deleteDevice") { request, accountID in
            let deviceID = try request.pathParameter("deviceID")
            try app.service.accounts.deleteDevice(accountID: accountID, deviceID: deviceID)
            return .noContent
        },
    ]
}
