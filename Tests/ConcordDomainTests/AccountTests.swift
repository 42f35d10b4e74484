import ConcordDomain
import ConcordMappingIndex
import ConcordTestSupport
import Foundation
import Testing

@Suite struct AccountTests {
    @Test(arguments: TestEngine.available) func tokensAuthenticateToTheirPrincipalAndUnknownTokensDoNot(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.service.accounts.createDevice(accountID: env.account.accountID, name: "iPhone", platform: "iOS")
        #expect(try env.service.accounts.authenticate(token: env.account.accountToken) == .account(accountID: env.account.accountID))
        #expect(try env.service.accounts.authenticate(token: d.deviceToken) == .device(DeviceRef(accountID: env.account.accountID, deviceID: d.deviceID)))
        #expect(try env.service.accounts.authenticate(token: d.deviceToken + "x") == nil)
        #expect(try env.service.accounts.authenticate(token: "") == nil)
        #expect(UUID(uuidString: env.account.accountID) != nil)
        #expect(UUID(uuidString: d.deviceID) != nil)
    }

    @Test(arguments: TestEngine.available) func listDevicesShowsCountsAndCurrentToken(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let a = try env.device("A")
        env.clock.advance(1)   // listed by creation time
        let b = try env.device("B")
        try env.put(a, assets: [("a1", fp(1)), ("a2", fp(2))])
        let list = try env.service.accounts.listDevices(accountID: env.account.accountID)
        #expect(list.map(\.deviceID) == [a.deviceID, b.deviceID])
        #expect(list.map(\.objectCount) == [2, 0])
        #expect(list[0].changeToken == (try env.service.history.currentChangeToken(device: a)))
        #expect(list[0].platform == "test")
        #expect(try env.service.accounts.listDevices(accountID: "00000000-0000-0000-0000-000000000000").isEmpty)
    }

    @Test(arguments: TestEngine.available) func deleteDeviceRemovesLibraryHistoryLinksAndToken(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let created = try env.service.accounts.createDevice(accountID: env.account.accountID, name: "A", platform: nil)
        let a = DeviceRef(accountID: env.account.accountID, deviceID: created.deviceID)
        let b = try env.device("B")
        try env.put(a, assets: [("a1", fp(1))])
        try env.put(b, assets: [("b1", fp(1))])
        let cid = try env.cloudID(a, "a1")
        try env.service.accounts.deleteDevice(accountID: a.accountID, deviceID: a.deviceID)
        #expect(try env.service.accounts.authenticate(token: created.deviceToken) == nil)
        expectErrorNamed("notFound") { try env.service.library.object(localIdentifier: "a1", device: a) }
        expectErrorNamed("notFound") { try env.service.history.currentChangeToken(device: a) }
        // The record stays in the account: the other device still resolves it.
        #expect(try env.cloudID(b, "b1") == cid)
        // Deleting again, or another account's device, is notFound.
        expectErrorNamed("notFound") { try env.service.accounts.deleteDevice(accountID: a.accountID, deviceID: a.deviceID) }
        let other = try env.service.accounts.createAccount(name: "Other")
        expectErrorNamed("notFound") { try env.service.accounts.deleteDevice(accountID: other.accountID, deviceID: b.deviceID) }
        #expect(try env.service.accounts.listDevices(accountID: env.account.accountID).map(\.deviceID) == [b.deviceID])
    }

    @Test(arguments: TestEngine.available) func namesAreValidatedAndUnknownAccountIsNotFound(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        expectError(.badRequest(message: "name must be 1 to 1024 bytes.", field: "name")) { try env.service.accounts.createAccount(name: "") }
        expectErrorNamed("notFound") { try env.service.accounts.createDevice(accountID: UUID().uuidString, name: "x", platform: nil) }
    }

    @Test(arguments: TestEngine.available) func changeTokenSecretSurvivesReopening(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let a = try env.device()
        try env.put(a, assets: [("a1", fp(1))])
        let token = try env.service.history.currentChangeToken(device: a)
        let reopened = try ConcordService(store: env.store)
        #expect(try reopened.history.currentChangeToken(device: a) == token)
        #expect(try reopened.history.changes(since: token, limit: nil, device: a).changes.isEmpty)
    }
}
