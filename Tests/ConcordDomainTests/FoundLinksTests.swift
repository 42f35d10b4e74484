@testable import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

/// Links found by cloud → local are stored after the read that found them: without
/// re-reading records when the account's mapping version is still the one they were found at, and
/// re-checked in full when anything of the mapping changed in between.
@Suite struct FoundLinksTests {
    /// Device two has Y and Y2 (content 1, unlinked); device one's X and W (both content 1) made
    /// records R and another. Returns R and the mapping version then.
    private func world(_ env: TestEnv) throws -> (one: DeviceRef, two: DeviceRef, record: CloudRecord, version: Int64) {
        let one = try env.device("one"), two = try env.device("two")
        try env.put(one, assets: [("X/L0/001", fp(1)), ("W/L0/001", fp(1))])
        try env.put(two, assets: [("Y/L0/001", fp(1)), ("Y2/L0/001", fp(1))])
        let cloud = try #require(CloudIdentifier(parsing: try env.cloudID(one, "X/L0/001")))
        _ = try env.cloudID(one, "W/L0/001")
        let record = CloudRecord(guid: cloud.guid, type: .asset, fingerprint: cloud.fingerprint)
        let version = try env.store.read(account: env.account.accountID) { tx in try tx.mappingVersion() }
        return (one, two, record, version)
    }

    private func linkOf(_ env: TestEnv, _ device: DeviceRef, _ id: String) throws -> String? {
        try env.store.read(account: env.account.accountID) { tx in try tx.objects(device, localIdentifiers: [id]).first?.link?.guid }
    }

    @Test(arguments: TestEngine.available) func atTheVersionTheyWereFoundAtTheyAreStored(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let (_, two, record, version) = try self.world(env)
        try env.service.core.write(account: env.account.accountID, idempotency: nil) { tx in
            try MappingService.storeFoundLinks(tx, device: two, [("Y/L0/001", record)], resolvedAt: version, core: env.service.core)
        }
        #expect(try self.linkOf(env, two, "Y/L0/001") == record.guid)
    }

    @Test(arguments: TestEngine.available) func afterAnotherWriteTheyAreCheckedAgain(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let (one, two, record, version) = try self.world(env)
        // Meanwhile the person linked R to Y2 on device two (a record links one object per device).
        try env.service.mapping.link(cloudIdentifier: try env.cloudID(one, "X/L0/001"), localIdentifier: "Y2/L0/001", device: two)
        try env.service.core.write(account: env.account.accountID, idempotency: nil) { tx in
            try MappingService.storeFoundLinks(tx, device: two, [("Y/L0/001", record)], resolvedAt: version, core: env.service.core)
        }
        #expect(try self.linkOf(env, two, "Y/L0/001") == nil)
        #expect(try self.linkOf(env, two, "Y2/L0/001") == record.guid)
    }
}
