import ConcordClient
import Foundation
import Testing

@Test func accountsAndDevicesThroughTheClient() async throws {
    let server = try TestServer()
    let admin = server.client()
    #expect(await admin.isHealthy())
    let credentials = try await admin.createAccount(name: "Person")
    let account = admin.withToken(credentials.accountToken)
    let phone = try await account.createDevice(name: "Phone", platform: "iOS")
    let mac = try await account.createDevice(name: "Mac")

    let devices = try await account.listDevices()
    #expect(devices.map(\.deviceID) == [phone.deviceID, mac.deviceID])
    #expect(devices.map(\.name) == ["Phone", "Mac"])
    #expect(devices.map(\.platform) == ["iOS", nil])
    #expect(devices.allSatisfy { $0.objectCount == 0 && abs($0.createdAt.timeIntervalSinceNow) < 300 })
    // The listed token is the device's own current token.
    #expect(devices[0].changeToken == (try await account.withToken(phone.deviceToken).currentChangeToken()))

    // 401 unknown token, 403 a valid token of the wrong kind: ConcordError with status and name.
    let unknown = await thrown(ConcordError.self) { _ = try await account.withToken("nope").listDevices() }
    #expect(unknown?.status == 401 && unknown?.name == "unauthorized")
    let noToken = await thrown(ConcordError.self) { _ = try await account.withToken(nil).listDevices() }
    #expect(noToken?.status == 401)
    let wrongKind = await thrown(ConcordError.self) { _ = try await account.withToken(phone.deviceToken).listDevices() }
    #expect(wrongKind?.status == 403 && wrongKind?.name == "forbidden")
    let adminOnDevices = await thrown(ConcordError.self) { _ = try await admin.createDevice(name: "x") }
    #expect(adminOnDevices?.status == 403)
    let badName = await thrown(ConcordError.self) { _ = try await account.createDevice(name: "") }
    #expect(badName?.status == 400 && badName?.name == "badRequest" && badName?.field == "name")

    // Delete: gone from the list, its token dead at once; an unknown ID is 404.
    try await account.deleteDevice(mac.deviceID)
    #expect(try await account.listDevices().map(\.deviceID) == [phone.deviceID])
    let dead = await thrown(ConcordError.self) { _ = try await account.withToken(mac.deviceToken).currentChangeToken() }
    #expect(dead?.status == 401)
    let missing = await thrown(ConcordError.self) { try await account.deleteDevice(mac.deviceID) }
    #expect(missing?.status == 404 && missing?.name == "notFound")
}

@Test func tokensRotateAndAccountsAreDeletedThroughTheClient() async throws {
    let server = try TestServer()
    let admin = server.client()
    let credentials = try await admin.createAccount(name: "Person")
    var account = admin.withToken(credentials.accountToken)
    let phone = try await account.createDevice(name: "Phone")
    var listed = try await account.listDevices()
    #expect(listed[0].tokenCreatedAt != nil && listed[0].tokenLastUsedAt == nil)

    // The account token: the old one is dead at once.
    let newAccountToken = try await account.rotateAccountToken()
    let stale = await thrown(ConcordError.self) { _ = try await account.listDevices() }
    #expect(stale?.status == 401)
    account = account.withToken(newAccountToken)

    // A device token: the device keeps its library; the old token is dead at once.
    let device = account.withToken(phone.deviceToken)
    let before = try await device.currentChangeToken()
    let rotated = try await account.rotateDeviceToken(phone.deviceID)
    #expect(rotated.deviceID == phone.deviceID && rotated.deviceToken != phone.deviceToken)
    let dead = await thrown(ConcordError.self) { _ = try await device.currentChangeToken() }
    #expect(dead?.status == 401)
    #expect(try await account.withToken(rotated.deviceToken).currentChangeToken() == before)
    // The last use is written in the background: give it a moment.
    for _ in 0..<100 {
        listed = try await account.listDevices()
        if listed[0].tokenLastUsedAt != nil { break }
        try await Task.sleep(nanoseconds: 20_000_000)
    }
    #expect(listed[0].tokenLastUsedAt != nil)
    let foreign = await thrown(ConcordError.self) { _ = try await account.rotateDeviceToken(UUID().uuidString) }
    #expect(foreign?.status == 404 && foreign?.name == "notFound")

    // Deleting the account: its tokens are dead; the admin deletes by ID (404 once gone).
    try await account.deleteAccount()
    let gone = await thrown(ConcordError.self) { _ = try await account.listDevices() }
    #expect(gone?.status == 401)
    let other = try await admin.createAccount(name: "Other")
    try await admin.deleteAccount(other.accountID)
    let twice = await thrown(ConcordError.self) { try await admin.deleteAccount(other.accountID) }
    #expect(twice?.status == 404)
}
