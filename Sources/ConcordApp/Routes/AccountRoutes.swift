import ConcordDomain
import ConcordHTTP
import ConcordJSON
import Foundation

/// Accounts (admin token) and devices (account token).
func accountRoutes(_ app: AppContext) -> [Route] {
    [
        app.adminRoute("POST", "/v1/accounts", operation: "createAccount", idempotent: true) { request, _ in
            let body = try request.jsonBody()
            let name = try Codec.requiredString(body, "name", path: "name")
            let created = try app.service.accounts.createAccount(name: name)
            app.audit("token issued", request, ["kind": "account", "accountID": .string(created.accountID)])
            return Codec.strings(status: 201, [("accountID", created.accountID), ("accountToken", created.accountToken)])
        },
        app.accountRoute("POST", "/v1/devices", operation: "createDevice", idempotent: true) { request, accountID in
            let body = try request.jsonBody()
            let name = try Codec.requiredString(body, "name", path: "name")
            let platform = try Codec.string(body, "platform", path: "platform")
            let created = try app.service.accounts.createDevice(accountID: accountID, name: name, platform: platform, idempotency: request.idempotency)
            app.audit("token issued", request, ["kind": "device", "accountID": .string(accountID), "deviceID": .string(created.deviceID)])
            return Codec.strings(status: 201, [("deviceID", created.deviceID), ("deviceToken", created.deviceToken)])
        },
        // A new phone, a restored backup, a reinstalled app: the account's token, or the device's own.
        app.accountOrDeviceRoute("POST", "/v1/devices/{deviceID}/successor", operation: "createSuccessor", idempotent: true) { request, caller in
            let deviceID = try request.pathParameter("deviceID")
            let body = try request.jsonBody()
            let name = try Codec.requiredString(body, "name", path: "name")
            let platform = try Codec.string(body, "platform", path: "platform")
            let created = try app.service.accounts.createSuccessor(accountID: caller.accountID, of: deviceID, name: name, platform: platform,
                                                                   caller: caller.device, idempotency: request.idempotency)
            app.audit("token issued", request, ["kind": "device", "accountID": .string(caller.accountID), "deviceID": .string(created.deviceID),
                                                "replaces": .string(deviceID)])
            app.audit("token revoked", request, ["kind": "device", "accountID": .string(caller.accountID), "deviceID": .string(deviceID),
                                                 "reason": "device replaced"])
            return Codec.strings(status: 201, [("deviceID", created.deviceID), ("deviceToken", created.deviceToken), ("replaces", created.replaces)])
        },
        app.accountRoute("GET", "/v1/devices", operation: "listDevices") { request, accountID in
            let page = try Codec.pageRequest(request)
            let (devices, hasMore) = try app.service.accounts.listDevices(accountID: accountID, page: page)
            return Codec.devices(devices, hasMore: page != nil ? hasMore : nil)
        },
        app.accountRoute("DELETE", "/v1/devices/{deviceID}", operation: "deleteDevice") { request, accountID in
            let deviceID = try request.pathParameter("deviceID")
            try app.service.accounts.deleteDevice(accountID: accountID, deviceID: deviceID)
            app.audit("token revoked", request, ["kind": "device", "accountID": .string(accountID), "deviceID": .string(deviceID), "reason": "device deleted"])
            return .noContent
        },
        // Token lifecycle (docs/api-notes.md): rotate, revoke, delete the account.
        app.accountRoute("POST", "/v1/account/token", operation: "rotateAccountToken", idempotent: true) { request, accountID in
            let token = try app.service.accounts.rotateAccountToken(accountID: accountID, idempotency: request.idempotency)
            app.audit("token rotated", request, ["kind": "account", "accountID": .string(accountID)])
            return Codec.strings([("accountToken", token)])
        },
        app.accountRoute("POST", "/v1/devices/{deviceID}/token", operation: "rotateDeviceToken", idempotent: true) { request, accountID in
            let deviceID = try request.pathParameter("deviceID")
            let created = try app.service.accounts.rotateDeviceToken(accountID: accountID, deviceID: deviceID, idempotency: request.idempotency)
            app.audit("token rotated", request, ["kind": "device", "accountID": .string(accountID), "deviceID": .string(deviceID)])
            return Codec.strings([("deviceID", created.deviceID), ("deviceToken", created.deviceToken)])
        },
        app.accountRoute("DELETE", "/v1/account", operation: "deleteAccount") { request, accountID in
            try app.service.accounts.deleteAccount(accountID: accountID)
            app.audit("token revoked", request, ["kind": "account", "accountID": .string(accountID), "reason": "account deleted"])
            return .noContent
        },
        app.adminRoute("DELETE", "/v1/accounts/{accountID}", operation: "deleteAccountAsAdmin") { request, _ in
            let accountID = try request.pathParameter("accountID")
            try app.service.accounts.deleteAccount(accountID: accountID)
            app.audit("token revoked", request, ["kind": "account", "accountID": .string(accountID), "reason": "account deleted by the admin"])
            return .noContent
        },
    ]
}
