import ConcordJSON
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordApp

/// Device successors and adoption over real sockets.
@Suite struct SuccessorRoutesTests {
    @Test(arguments: TestEngine.available)
    func aNewPhoneTakesOverAdoptsAndTheOldTokenIsDead(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine)
        let (account, phone, tablet) = try server.phoneAndTablet()
        try #require(try server.call("PUT", "/v1/library", token: phone.token, body: """
            {"assets":[{"localIdentifier":"IMG-1/L0/001","photoKitCloudIdentifier":"K1:001:h"},{"localIdentifier":"IMG-2/L0/001"}]}
            """).status == 200)
        let ids = try server.call("POST", "/v1/library/cloud-identifiers", token: phone.token, body: #"{"localIdentifiers":["IMG-1/L0/001","IMG-2/L0/001"]}"#)
        let beach = try #require(ids["mappings"]?.arrayValue?[0]["cloudIdentifier"]?.stringValue)
        let oldToken = try #require(try server.call("GET", "/v1/library/token", token: phone.token)["changeToken"]?.stringValue)

        // Refused requests store nothing: another device's token, an unknown or foreign device.
        #expect(try server.call("POST", "/v1/devices/\(phone.id)/successor", token: tablet.token, body: #"{"name":"x"}"#).status == 403)
        let unknown = try server.call("POST", "/v1/devices/\(UUID().uuidString)/successor", token: account.token, body: #"{"name":"x"}"#)
        #expect(unknown.status == 404 && unknown.errorName == "notFound")
        let stranger = try server.account()
        #expect(try server.call("POST", "/v1/devices/\(phone.id)/successor", token: stranger.token, body: #"{"name":"x"}"#).status == 404)
        #expect(try server.call("POST", "/v1/devices/\(phone.id)/successor", token: account.token, body: #"{}"#).errorField == "name")
        #expect(try server.call("GET", "/v1/devices", token: account.token)["devices"]?.arrayValue?.count == 2)

        // The phone's own token registers its successor; from then on that token is 401.
        let created = try server.call("POST", "/v1/devices/\(phone.id)/successor", token: phone.token, body: #"{"name":"New iPhone","platform":"iOS"}"#)
        try #require(created.status == 201, "\(created.raw.body)")
        #expect(created["replaces"]?.stringValue == phone.id)
        let newToken = try #require(created["deviceToken"]?.stringValue)
        let newID = try #require(created["deviceID"]?.stringValue)
        #expect(try server.call("GET", "/v1/library/token", token: phone.token).status == 401)
        let again = try server.call("POST", "/v1/devices/\(phone.id)/successor", token: account.token, body: #"{"name":"x"}"#)
        #expect(again.status == 409 && again.errorName == "deviceAlreadyReplaced" && again.json?["error"]?["replacedBy"]?.stringValue == newID)

        // The device list says who replaced whom.
        let devices = try #require(try server.call("GET", "/v1/devices", token: account.token)["devices"]?.arrayValue)
        let old = try #require(devices.first { $0["deviceID"]?.stringValue == phone.id })
        let new = try #require(devices.first { $0["deviceID"]?.stringValue == newID })
        #expect(old["replacedBy"]?.stringValue == newID && old["replaces"] == .null)
        #expect(new["replaces"]?.stringValue == phone.id && new["replacedBy"] == .null)

        // The predecessor's change token: 410 on the successor; another device's: 400.
        let expired = try server.call("GET", "/v1/library/changes?since=\(percentEncoded(oldToken))", token: newToken)
        #expect(expired.status == 410 && expired.errorName == "persistentChangeTokenExpired")
        let tabletToken = try #require(try server.call("GET", "/v1/library/token", token: tablet.token)["changeToken"]?.stringValue)
        #expect(try server.call("GET", "/v1/library/changes?since=\(percentEncoded(tabletToken))", token: newToken).errorName == "invalidChangeToken")

        // The new phone uploads (a transfer keeps one identifier; the other photo only by key) and adopts.
        try #require(try server.call("PUT", "/v1/library", token: newToken, body: """
            {"assets":[{"localIdentifier":"NEW-1/L0/001","photoKitCloudIdentifier":"K1:001:x"},{"localIdentifier":"IMG-2/L0/001"}]}
            """).status == 200)
        let adopted = try server.call("POST", "/v1/library/adopt", token: newToken, body: "{}")
        #expect(adopted.status == 200 && adopted["adopted"]?.intValue == 2 && adopted["unmatched"]?.intValue == 0
                && adopted["alreadyLinked"]?.intValue == 0 && adopted["ambiguous"]?.arrayValue == [], "\(adopted.raw.body)")
        let repeated = try server.call("POST", "/v1/library/adopt", token: newToken, body: "{}")
        #expect(repeated["adopted"]?.intValue == 0 && repeated["alreadyLinked"]?.intValue == 2)
        // A journal entry written on the old phone still opens on the new one, and the links stay
        // when the old phone is deleted.
        #expect(try server.call("DELETE", "/v1/devices/\(phone.id)", token: account.token).status == 204)
        let back = try server.call("POST", "/v1/library/local-identifiers", token: newToken, body: #"{"cloudIdentifiers":["\#(beach)"],"contentMatch":false}"#)
        #expect(back["mappings"]?.arrayValue?[0]["localIdentifier"]?.stringValue == "NEW-1/L0/001", "\(back.raw.body)")
        let none = try server.call("POST", "/v1/library/adopt", token: newToken, body: "{}")
        #expect(none.status == 409 && none.errorName == "noPredecessor")
        let list = try #require(try server.call("GET", "/v1/devices", token: account.token)["devices"]?.arrayValue)
        #expect(list.first { $0["deviceID"]?.stringValue == newID }?["replaces"] == .null)
        #expect(try server.call("POST", "/v1/library/adopt", token: tablet.token, body: "{}").errorName == "noPredecessor")
    }

    /// A poll held with the predecessor's token ends with 401 when its successor is created: no
    /// answer carries data after the token died. (On a manual clock its wait never passes: the
    /// 401 is the wake-up's.)
    @Test(arguments: TestEngine.available)
    func aPollHeldWithThePredecessorsTokenEndsWith401(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine, scheduler: ManualScheduler())
        let (account, phone, _) = try server.phoneAndTablet()
        let since = try #require(try server.call("GET", "/v1/library/token", token: phone.token)["changeToken"]?.stringValue)
        let poll = LongPollTests.Poll(port: server.port, token: phone.token, "/v1/library/changes?since=\(percentEncoded(since))&wait=4")
        try LongPollTests.waitUntilHeld(server, 1)
        try #require(try server.call("POST", "/v1/devices/\(phone.id)/successor", token: account.token, body: #"{"name":"New"}"#).status == 201)
        let (answer, _) = try poll.result()
        #expect(answer.status == 401 && answer.errorName == "unauthorized", "\(answer.raw.body)")
    }
}
