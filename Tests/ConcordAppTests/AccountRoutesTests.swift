import ConcordJSON
import Foundation
import Testing

@testable import ConcordApp

@Test func accountsNeedTheAdminTokenAndValidateTheirName() throws {
    let server = try APIServer()
    let created = try server.call("POST", "/v1/accounts", token: testAdminToken, body: #"{"name":"Ana","extra":[1,2]}"#)
    #expect(created.status == 201)
    #expect(created.raw.header("Content-Type") == "application/json")
    let accountToken = try #require(created["accountToken"]?.stringValue)
    #expect(created["accountID"]?.stringValue?.isEmpty == false)
    let device = try server.device(accountToken)

    // Missing or unknown token: 401. A valid token of another kind: 403.
    #expect(try server.call("POST", "/v1/accounts", token: nil, body: #"{"name":"x"}"#).status == 401)
    #expect(try server.call("POST", "/v1/accounts", token: "nope", body: #"{"name":"x"}"#).errorName == "unauthorized")
    let asAccount = try server.call("POST", "/v1/accounts", token: accountToken, body: #"{"name":"x"}"#)
    #expect(asAccount.status == 403 && asAccount.errorName == "forbidden")
    #expect(try server.call("POST", "/v1/accounts", token: device.token, body: #"{"name":"x"}"#).status == 403)

    // Body errors name the field.
    let cases: [(body: String, field: String?)] = [
        (#"{}"#, "name"),
        (#"{"name":null}"#, "name"),
        (#"{"name":5}"#, "name"),
        (#"{"name":""}"#, "name"),
        (#"{"name":"#, nil),
        (#"[1]"#, nil),
    ]
    for c in cases {
        let r = try server.call("POST", "/v1/accounts", token: testAdminToken, body: c.body)
        #expect(r.status == 400 && r.errorName == "badRequest", "\(c.body)")
        #expect(r.errorField == c.field, "\(c.body): \(r.raw.body)")
    }
}

@Test func devicesAreCreatedListedAndDeletedByTheirAccountOnly() throws {
    let server = try APIServer()
    let ana = try server.account("Ana")
    let bob = try server.account("Bob")
    let phone = try server.device(ana.token, "Phone")
    let tablet = try server.device(ana.token, "Tablet")
    let bobs = try server.device(bob.token, "Bob's")

    // Only an account token manages devices.
    #expect(try server.call("POST", "/v1/devices", token: testAdminToken, body: #"{"name":"x"}"#).status == 403)
    #expect(try server.call("POST", "/v1/devices", token: phone.token, body: #"{"name":"x"}"#).status == 403)
    #expect(try server.call("GET", "/v1/devices", token: nil).status == 401)
    #expect(try server.call("GET", "/v1/devices", token: phone.token).status == 403)
    #expect(try server.call("POST", "/v1/devices", token: ana.token, body: #"{"name":"x","platform":7}"#).errorField == "platform")
    #expect(try server.call("POST", "/v1/devices", token: ana.token, body: #"{"platform":"iOS"}"#).errorField == "name")

    try server.upsert(phone.token, assets: [(assetID(1), fingerprint(1)), (assetID(2), fingerprint(2))])
    let list = try server.call("GET", "/v1/devices", token: ana.token)
    #expect(list.status == 200)
    let devices = try #require(list["devices"]?.arrayValue)
    #expect(devices.map { $0["deviceID"]?.stringValue } == [phone.id, tablet.id])
    #expect(devices[0]["name"]?.stringValue == "Phone" && devices[0]["platform"]?.stringValue == "iOS")
    #expect(devices[0]["objectCount"]?.intValue == 2 && devices[1]["objectCount"]?.intValue == 0)
    let createdAt = try #require(devices[0]["createdAt"]?.stringValue)
    #expect(createdAt.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"#, options: .regularExpression) != nil, "\(createdAt)")
    // The listed change token is the device's current one.
    let current = try server.call("GET", "/v1/library/token", token: phone.token)
    #expect(devices[0]["changeToken"]?.stringValue == current["changeToken"]?.stringValue)

    // Another account's device is not found, exactly like a device that never existed.
    let foreign = try server.call("DELETE", "/v1/devices/\(bobs.id)", token: ana.token)
    let missing = try server.call("DELETE", "/v1/devices/00000000-0000-0000-0000-000000000000", token: ana.token)
    #expect(foreign.status == 404 && missing.status == 404)
    #expect(foreign.raw.body == missing.raw.body)

    let deleted = try server.call("DELETE", "/v1/devices/\(phone.id)", token: ana.token)
    #expect(deleted.status == 204 && deleted.raw.body.isEmpty)
    #expect(try server.call("GET", "/v1/library/token", token: phone.token).status == 401)
    #expect(try server.call("DELETE", "/v1/devices/\(phone.id)", token: ana.token).status == 404)
    let after = try server.call("GET", "/v1/devices", token: ana.token)
    #expect(after["devices"]?.arrayValue?.map { $0["deviceID"]?.stringValue } == [tablet.id])
    // Bob's device is untouched.
    #expect(try server.call("GET", "/v1/library/token", token: bobs.token).status == 200)
}
