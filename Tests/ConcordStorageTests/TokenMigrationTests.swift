import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// Migration 4 (token times) on a database written at schema 3, on both engines: the
/// tokens issued before it still authenticate, and they date from their account or device.
@Suite struct TokenMigrationTests {
    static let accountHash: [UInt8] = Array(repeating: 1, count: 32)
    static let deviceHash: [UInt8] = Array(repeating: 2, count: 32)

    @Test(arguments: TestEngine.available)
    func tokensFromSchema3StillWorkAndDateFromTheirOwners(_ engine: TestEngine) throws {
        let account = String(repeating: "01", count: 32), device = String(repeating: "02", count: 32)
        try OldSchemaDatabase.open(engine, atVersion: 3, seed: (sqlite: """
            INSERT INTO accounts (account_key, account_id, name, created_at) VALUES (1, 'acc', 'A', 1000);
            INSERT INTO devices (account_key, device_key, device_id, name, created_at) VALUES (1, 1, 'dev', 'D', 2000);
            INSERT INTO tokens (token_hash, kind, account_key, device_key) VALUES (X'\(account)', 1, 1, NULL);
            INSERT INTO tokens (token_hash, kind, account_key, device_key) VALUES (X'\(device)', 2, 1, 1);
            """, postgres: """
            INSERT INTO accounts (account_id, name, created_at) VALUES ('acc', 'A', 1000);
            INSERT INTO devices (account_id, device_id, name, created_at) VALUES ('acc', 'dev', 'D', 2000);
            INSERT INTO tokens (token_hash, kind, account_id, device_id) VALUES ('\\x\(account)', 1, 'acc', NULL);
            INSERT INTO tokens (token_hash, kind, account_id, device_id) VALUES ('\\x\(device)', 2, 'acc', 'dev');
            """), Self.expectMigrated)
    }

    static func expectMigrated(_ store: any ConcordStore) throws {
        let account = try store.readServer { tx in try tx.tokenOwner(tokenHash: Self.accountHash) }
        #expect(account == TokenOwner(principal: .account(accountID: "acc"), lastUsedAt: nil))
        let device = try store.readServer { tx in try tx.tokenOwner(tokenHash: Self.deviceHash) }
        #expect(device?.principal == .device(DeviceRef(accountID: "acc", deviceID: "dev")) && device?.lastUsedAt == nil)
        // PostgreSQL reads the device and its account's mapping version with the token (`DeviceCheck`).
        #expect(device?.deviceCheck.map { $0.device.name == "D" && $0.mappingVersion == 0 } ?? true)
        let times = try store.read(account: "acc") { tx in try tx.deviceTokenTimes() }
        #expect(times == ["dev": TokenTimes(createdAt: 2000, lastUsedAt: nil)])
    }
}
