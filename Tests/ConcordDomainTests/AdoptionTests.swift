import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

/// Device successors and `POST /v1/library/adopt`'s tiers, both engines.
@Suite struct AdoptionTests {
    static func asset(_ id: String, fingerprint: String = "", key: String? = nil) -> LibraryObject {
        .asset(id, fingerprint: fingerprint, photoKitCloudIdentifier: key.map { "\($0):001:h" })
    }

    static func put(_ env: TestEnv, _ d: DeviceRef, _ objects: [LibraryObject]) throws {
        try env.service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: objects)), device: d)
    }

    static func successor(_ env: TestEnv, of d: DeviceRef) throws -> DeviceRef {
        let s = try env.service.accounts.createSuccessor(accountID: d.accountID, of: d.deviceID, name: "new", platform: nil)
        return DeviceRef(accountID: d.accountID, deviceID: s.deviceID)
    }

    @Test(arguments: TestEngine.available) func theTiersTakeTheFirstThatHasCandidates(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let old = try env.device("old")
        try Self.put(env, old, [
            Self.asset("SAME", fingerprint: fp(1)),               // (1) same identifier, same content
            Self.asset("MOVED", fingerprint: fp(2)),              // (1) refused: content differs → (3) by content
            Self.asset("KEYED", key: "K3"),                       // (2) by key
            Self.asset("DUP", fingerprint: fp(4)),                // (3) two candidates: ambiguous
            Self.asset("GONE", fingerprint: fp(5)),               // nothing: unmatched
        ])
        let records = try env.cloud(old, ["SAME", "MOVED", "KEYED", "DUP", "GONE"]).map { r -> String in
            if case .found(let c) = r { return c } else { return "" }
        }
        let new = try Self.successor(env, of: old)
        try Self.put(env, new, [
            Self.asset("SAME", fingerprint: fp(1)),
            Self.asset("MOVED", fingerprint: fp(9)), Self.asset("MOVED-COPY", fingerprint: fp(2)),
            Self.asset("K-OBJECT", key: "K3"),
            Self.asset("DUP-A", fingerprint: fp(4)), Self.asset("DUP-B", fingerprint: fp(4)),
        ])
        let result = try env.service.mapping.adopt(device: new)
        #expect(result.adopted == 3 && result.unmatched == 1 && result.alreadyLinked == 0)
        #expect(result.ambiguous.map(\.cloudIdentifier) == [records[3]] && result.ambiguous.map(\.localIdentifiers) == [["DUP-A", "DUP-B"]])
        #expect(try env.cloud(new, ["SAME", "MOVED-COPY", "K-OBJECT"]) == [.found(records[0]), .found(records[1]), .found(records[2])])
        // Repeatable: what is linked counts as already linked; the person's choice settles the rest.
        try env.service.mapping.link(cloudIdentifier: records[3], localIdentifier: "DUP-B", device: new)
        let again = try env.service.mapping.adopt(device: new)
        #expect(again.adopted == 0 && again.alreadyLinked == 4 && again.unmatched == 1 && again.ambiguous.isEmpty)
        // The adopted links outlive the predecessor; then there is none to adopt from.
        try env.service.accounts.deleteDevice(accountID: old.accountID, deviceID: old.deviceID)
        #expect(try env.local(new, [records[2]]) == [.found("K-OBJECT")])
        expectError(.noPredecessor) { try env.service.mapping.adopt(device: new) }
    }

    @Test(arguments: TestEngine.available) func anObjectLinkedOnceInACallIsNotACandidateAgain(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let old = try env.device("old")
        try Self.put(env, old, [Self.asset("A", fingerprint: fp(1)), Self.asset("B", fingerprint: fp(1))])   // two records of one content
        _ = try env.cloud(old, ["A", "B"])
        let new = try Self.successor(env, of: old)
        try Self.put(env, new, [Self.asset("X", fingerprint: fp(1))])
        let result = try env.service.mapping.adopt(device: new)
        #expect(result.adopted == 1 && result.unmatched == 1, "\(result)")
    }

    @Test(arguments: TestEngine.available) func successorsRulesAndRefusals(_ engine: TestEngine) throws {
        let env = try TestEnv(engine) { $0.quotas.devicesPerAccount = 2 }
        let old = try env.device("old")
        let other = try env.device("other")
        // The quota counts successors; a device may name only itself; unknown and foreign are notFound.
        expectErrorNamed("quotaExceeded") { try Self.successor(env, of: old) }
        try env.service.accounts.deleteDevice(accountID: other.accountID, deviceID: other.deviceID)
        let stranger = try env.service.accounts.createAccount(name: "other")
        expectError(.forbidden) {
            try env.service.accounts.createSuccessor(accountID: old.accountID, of: UUID().uuidString, name: "n", platform: nil, caller: old)
        }
        expectErrorNamed("notFound") { try env.service.accounts.createSuccessor(accountID: old.accountID, of: UUID().uuidString, name: "n", platform: nil) }
        expectErrorNamed("notFound") { try env.service.accounts.createSuccessor(accountID: stranger.accountID, of: old.deviceID, name: "n", platform: nil) }
        expectError(.noPredecessor) { try env.service.mapping.adopt(device: old) }
        let new = try Self.successor(env, of: old)
        expectError(.deviceAlreadyReplaced(replacedBy: new.deviceID)) { try Self.successor(env, of: old) }
        // The predecessor answers nothing more to its own token's requests (a request authenticated just before).
        expectError(.unauthorized) { try env.service.history.currentChangeToken(device: old) }
        let listed = try env.service.accounts.listDevices(accountID: old.accountID)
        #expect(listed.first { $0.deviceID == old.deviceID }?.replacedBy == new.deviceID)
        #expect(listed.first { $0.deviceID == new.deviceID }?.replaces == old.deviceID)
    }
}
