import ConcordDomain
import ConcordMappingIndex
@testable import ConcordStorage
import ConcordTestSupport
import Foundation
import Testing

/// The mapping log's entry format (`MappingLogCodec`): every mutation comes back as written, and
/// bytes of another version or cut short are refused, never read as something else.
@Suite struct MappingLogCodecTests {
    static let object = StoredObject(object: .asset("L-1/L0/001", fingerprint: fp(1), photoKitCloudIdentifier: "KEY-1:001:"),
                                     link: CloudRecord(guid: "0190A4B2-7C3D-7E4F-8A5B-6C7D8E9F0A1B", type: .asset, fingerprint: fp(1)))
    static let cases: [(String, MappingMutation)] = [
        ("insert device", .insertDevice("D-1")),
        ("delete device", .deleteDevice("D-2")),
        ("insert records", .insertRecords([CloudRecord(guid: "G-1", type: .asset, fingerprint: fp(2)), CloudRecord(guid: "G-2", type: .assetCollection, fingerprint: "")])),
        ("set links", .setLinks(device: "D-1", [("L-1", "G-1"), ("L-2 é", "G-2")])),
        ("drop links", .dropLinks(device: "D-1", guids: ["G-1", "G-2"])),
        ("drop all links", .dropAllLinks(device: "D-1")),
        ("put objects", .putting([object, StoredObject(object: .asset("L-2", fingerprint: ""), link: nil)], on: DeviceRef(accountID: "A", deviceID: "D-1"))),
        ("put no objects", .putObjects(device: "D-1", PackedObjectRows([]))),
        ("delete objects", .deleteObjects(device: "D-1", localIdentifiers: ["L-1", ""])),
        ("add record keys", .addRecordKeys([("G-1", ObjectKey(type: .asset, a: "KEY-1"))])),
        ("fill fingerprints", .fillRecordFingerprints([("G-1", fp(3))])),
    ]

    @Test func everyMutationRoundTrips() throws {
        for (name, m) in Self.cases {
            let bytes = try #require(MappingLogCodec.encode([m]), "\(name)")
            let decoded = try #require(MappingLogCodec.decode(bytes), "\(name)")
            #expect(decoded.count == 1, "\(name)")
            #expect(MappingLogCodec.encode(decoded) == bytes, "\(name)")
        }
        let all = try #require(MappingLogCodec.encode(Self.cases.map(\.1)))
        #expect(try MappingLogCodec.encode(#require(MappingLogCodec.decode(all))) == all)
        #expect(MappingLogCodec.decode([MappingLogCodec.version])?.isEmpty == true)
    }

    @Test func anotherVersionOrCutBytesAreRefused() throws {
        let bytes = try #require(MappingLogCodec.encode([Self.cases[6].1, Self.cases[2].1]))
        var other = bytes
        other[0] = MappingLogCodec.version + 1
        #expect(MappingLogCodec.decode(other) == nil)
        #expect(MappingLogCodec.decode([]) == nil)
        // Cut inside the first mutation (the object batch): refused at every length.
        let first = try #require(MappingLogCodec.encode([Self.cases[6].1])).count
        for length in 2..<first { #expect(MappingLogCodec.decode(Array(bytes.prefix(length))) == nil, "cut at \(length)") }
        #expect(MappingLogCodec.decode(bytes + [0xFF]) == nil)
        #expect(MappingLogCodec.encode([Self.cases[6].1], limit: 10) == nil)
    }
}

/// Two instances on one PostgreSQL: an index behind the other instance's writes applies their
/// changes from the mapping log (no reload), and then answers exactly as a fresh load does; a
/// version missing from the log (pruned) makes it reload, exact as well.
@Suite(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason)))
struct MappingLogAcrossInstancesTests {
    /// Every identifier the test used on each device, and every cloud identifier seen.
    final class Seen {
        var locals: [DeviceRef: Set<String>] = [:]
        var clouds: Set<String> = []
    }

    func put(_ service: ConcordService, _ d: DeviceRef, _ objects: [LibraryObject], _ seen: Seen) throws {
        try service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: objects)), device: d)
        seen.locals[d, default: []].formUnion(objects.map(\.localIdentifier))
    }

    func map(_ service: ConcordService, _ d: DeviceRef, _ ids: [String], _ seen: Seen) throws {
        for r in try service.mapping.cloudIdentifiers(forLocalIdentifiers: ids, device: d) {
            if case .found(let c) = r.result { seen.clouds.insert(c) }
        }
    }

    /// Both directions of every device, over every identifier seen: what `service` answers.
    func sweep(_ service: ConcordService, _ devices: [DeviceRef], _ seen: Seen) throws -> [String] {
        var out: [String] = []
        for d in devices {
            let locals = (seen.locals[d] ?? []).sorted(), clouds = seen.clouds.sorted()
            do {
                out.append("\(d.deviceID) l→c \(try service.mapping.cloudIdentifiers(forLocalIdentifiers: locals, device: d).map(\.result))")
                out.append("\(d.deviceID) c→l \(try service.mapping.localIdentifiers(forCloudIdentifiers: clouds, device: d).map(\.result))")
            } catch {
                out.append("\(d.deviceID): \(error)")
            }
        }
        return out
    }

    /// A fresh instance's answers (its index loaded from the tables now).
    func fresh(_ env: TestEnv, _ devices: [DeviceRef], _ seen: Seen) throws -> [String] {
        try self.sweep(try env.anotherInstance(), devices, seen)
    }

    @Test func anIndexBehindTheOtherInstanceCatchesUpFromTheLog() throws {
        let env = try TestEnv(.postgres)
        let a = env.service, b = try env.anotherInstance()
        let seen = Seen()
        let d1 = try env.device("one"), d2 = try env.device("two"), d3 = try env.device("three")
        let devices = [d1, d2, d3]
        for (i, d) in devices.enumerated() {
            try self.put(a, d, (0..<40).map { k in
                k % 4 == 0 ? .asset("\(i)-\(k)/L0/001", fingerprint: k % 8 == 0 ? "" : fp(k), photoKitCloudIdentifier: "KEY-\(k):001:")
                           : .asset("\(i)-\(k)/L0/001", fingerprint: fp(k))
            }, seen)
        }
        try self.map(a, d1, (seen.locals[d1] ?? []).sorted(), seen)
        // B loads the account.
        _ = try self.sweep(b, devices, seen)
        let before = try #require(b.mappingIndex?.statistics)

        // Through A: objects put and changed, records created and linked by mapping, fingerprints
        // filled, a link made by hand, objects deleted, a device deleted.
        try self.put(a, d2, (40..<60).map { .asset("1-\($0)/L0/001", fingerprint: fp($0)) }, seen)
        try self.map(a, d2, (seen.locals[d2] ?? []).sorted(), seen)
        try self.put(a, d1, [.asset("0-0/L0/001", fingerprint: fp(1000), photoKitCloudIdentifier: "KEY-0:001:"),
                             .asset("0-1/L0/001", fingerprint: fp(2))], seen)
        try self.map(a, d3, (seen.locals[d3] ?? []).sorted(), seen)
        let someCloud = try #require(seen.clouds.sorted().first)
        try? a.mapping.link(cloudIdentifier: someCloud, localIdentifier: "2-5/L0/001", device: d3)
        try a.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(delete: ["0-2/L0/001", "0-3/L0/001"])), device: d1)
        try a.accounts.deleteDevice(accountID: env.account.accountID, deviceID: d2.deviceID)

        let caughtUp = try self.sweep(b, devices, seen)
        let after = try #require(b.mappingIndex?.statistics)
        #expect(after.logCatchUps == before.logCatchUps + 1, "one catch-up from the log")
        #expect(after.loggedWritesApplied >= before.loggedWritesApplied + 5, "each write a version of its own")
        #expect(after.catchUps == before.catchUps + 1 && after.loads == before.loads, "no reload")
        #expect(caughtUp == (try self.fresh(env, devices, seen)))

        // The other way round: B writes (a device added too), A catches up.
        let d4 = DeviceRef(accountID: env.account.accountID,
                           deviceID: try b.accounts.createDevice(accountID: env.account.accountID, name: "four", platform: nil).deviceID)
        try self.put(b, d4, (0..<30).map { .asset("3-\($0)/L0/001", fingerprint: fp($0)) }, seen)
        try self.map(b, d4, (seen.locals[d4] ?? []).sorted(), seen)
        try b.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(delete: ["2-6/L0/001"])), device: d3)
        let aBefore = try #require(a.mappingIndex?.statistics)
        let all = devices + [d4]
        let fromA = try self.sweep(a, all, seen)
        let aAfter = try #require(a.mappingIndex?.statistics)
        #expect(aAfter.logCatchUps == aBefore.logCatchUps + 1 && aAfter.loads == aBefore.loads)
        #expect(fromA == (try self.fresh(env, all, seen)))
        #expect(fromA == (try self.sweep(b, all, seen)))
    }

    /// The account's rows in the log, read straight from the database.
    func loggedVersions(_ env: TestEnv) throws -> Int64 {
        try env.store.readServer { tx in
            try (tx as! PostgresTransaction).db.scalarInt("SELECT count(*)::int8 FROM mapping_deltas WHERE account_id = $1",
                                                          [.text(env.account.accountID)]) ?? -1
        }
    }

    @Test func theLogKeepsTheLastVersionsAndGoesWithItsAccount() throws {
        let env = try TestEnv(.postgres)
        let d = try env.device()
        for i in 0..<5 { try env.put(d, assets: [("\(i)/L0/001", fp(i))]) }
        #expect(try self.loggedVersions(env) == 6, "the device's insertion and five changes")
        for i in 5..<30 { try env.put(d, assets: [("\(i)/L0/001", fp(i))]) }
        #expect(try self.loggedVersions(env) == PostgresTransaction.keptMappingLogVersions)
        try env.service.accounts.deleteAccount(accountID: env.account.accountID)
        #expect(try self.loggedVersions(env) == 0)
    }

    @Test func anIndexFurtherBehindThanTheLogReloads() throws {
        let env = try TestEnv(.postgres)
        let a = env.service, b = try env.anotherInstance()
        let seen = Seen()
        let d = try env.device()
        try self.put(a, d, (0..<10).map { .asset("\($0)/L0/001", fingerprint: fp($0)) }, seen)
        try self.map(a, d, (seen.locals[d] ?? []).sorted(), seen)
        _ = try self.sweep(b, [d], seen)
        let before = try #require(b.mappingIndex?.statistics)
        // More mapping writes than the log keeps: the oldest B needs is pruned.
        for i in 0..<20 { try self.put(a, d, [.asset("n-\(i)/L0/001", fingerprint: fp(100 + i))], seen) }
        try self.map(a, d, (seen.locals[d] ?? []).sorted(), seen)
        let answers = try self.sweep(b, [d], seen)
        let after = try #require(b.mappingIndex?.statistics)
        #expect(after.logCatchUps == before.logCatchUps && after.catchUps == before.catchUps + 1, "a reload")
        #expect(answers == (try self.fresh(env, [d], seen)))
        // Then the next write is caught up from the log again.
        try a.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(delete: ["n-3/L0/001"])), device: d)
        let again = try self.sweep(b, [d], seen)
        #expect(try #require(b.mappingIndex?.statistics).logCatchUps == before.logCatchUps + 1)
        #expect(again == (try self.fresh(env, [d], seen)))
    }
}
