import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordDomain
import ConcordMappingIndex

/// Change-token keys rotate, on both engines: a token from before a rotation stays
/// valid for the process that ran through it and for a new one; tokens after it carry the new
/// key and are accepted by a process that started before it (it looks the key up); a forged
/// key ID or tag is refused.
@Suite struct ChangeKeyRotationTests {
    @Test(arguments: TestEngine.available)
    func tokensOfEveryKeyStayValidAcrossARotation(_ engine: TestEngine) throws {
        let db = try TestDatabase(engine)
        let before = try ConcordService(store: db.store)
        let account = try before.accounts.createAccount(name: "A")
        let created = try before.accounts.createDevice(accountID: account.accountID, name: "D", platform: nil)
        let device = DeviceRef(accountID: account.accountID, deviceID: created.deviceID)
        let oldToken = try before.history.currentChangeToken(device: device)
        #expect(Base64URL.decode(oldToken)?.first == 1)   // signed with the original secret

        #expect(try ConcordService.rotateChangeKey(store: db.store) == 1)
        let after = try ConcordService(store: db.store)
        let newToken = try after.history.currentChangeToken(device: device)
        #expect(Base64URL.decode(newToken)?.prefix(2) == [2, 1])   // version 2, key 1
        for service in [before, after] {
            for token in [oldToken, newToken] {
                #expect(try service.history.changes(since: token, limit: nil, device: device).changes.isEmpty)
            }
        }
        #expect(try ConcordService.rotateChangeKey(store: db.store) == 2)
        let third = try ConcordService(store: db.store)
        let newest = try third.history.currentChangeToken(device: device)
        #expect(Base64URL.decode(newest)?.prefix(2) == [2, 2])
        #expect(try before.history.changes(since: newest, limit: nil, device: device).changes.isEmpty)

        // A key ID nobody made, and a tag that does not match: invalid, whoever asks.
        var forged = try #require(Base64URL.decode(newest))
        forged[1] = 9
        #expect(throws: DomainError.invalidChangeToken) { try third.history.changes(since: Base64URL.encode(forged), limit: nil, device: device) }
        var garbled = try #require(Base64URL.decode(newest))
        garbled[garbled.count - 1] ^= 1
        #expect(throws: DomainError.invalidChangeToken) { try before.history.changes(since: Base64URL.encode(garbled), limit: nil, device: device) }
    }
}
