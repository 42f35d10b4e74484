import ConcordDomain
import ConcordStorage
import ConcordTestSupport
import Foundation
import Testing

/// What a warm mapping request sends PostgreSQL, counted (`PostgresStore.statementsExecuted`): who
/// holds the token, and the device with its account's mapping version — two statements, no BEGIN or
/// COMMIT — each way, when the account's mapping index is current. A request the index cannot answer
/// alone (the other instance wrote) begins its read with its second statement and answers the same.
@Suite(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason + " (WarmMappingStatementsTests)")))
struct WarmMappingStatementsTests {
    @Test func aWarmMappingRequestIsTwoStatementsEachWay() throws {
        let env = try TestEnv(.postgres)
        let store = try #require(env.store as? PostgresStore)
        let accountID = env.account.accountID
        let phone = try env.service.accounts.createDevice(accountID: accountID, name: "phone", platform: "test")
        let tablet = try env.service.accounts.createDevice(accountID: accountID, name: "tablet", platform: "test")
        let d1 = DeviceRef(accountID: accountID, deviceID: phone.deviceID), d2 = DeviceRef(accountID: accountID, deviceID: tablet.deviceID)
        let n = 200
        let phoneIDs = (0..<n).map { "P\($0)/L0/001" }, tabletIDs = (0..<n).map { "T\($0)/L0/001" }
        try env.put(d1, assets: (0..<n).map { (phoneIDs[$0], fp($0)) })
        try env.put(d2, assets: (0..<n).map { (tabletIDs[$0], fp($0)) })
        // First mappings: records created, then linked by content.
        let clouds = try env.service.mapping.cloudIdentifiers(forLocalIdentifiers: phoneIDs, device: d1).map(\.result)
        let cloudIDs = clouds.compactMap { if case .found(let c) = $0 { c } else { nil } }
        try #require(cloudIDs.count == n)
        #expect(try env.local(d2, cloudIDs) == tabletIDs.map { .found($0) })
        // Each token's first use is noted (once a minute at most, in the background): done before counting.
        for token in [phone.deviceToken, tablet.deviceToken] { _ = try env.service.accounts.authenticate(token: token) }
        env.service.flushPendingWrites()

        func statements(_ body: () throws -> Void) rethrows -> Int {
            let before = store.statementsExecuted
            try body()
            return store.statementsExecuted - before
        }
        var principal: Principal?, answers: [MappingResult] = []
        for _ in 0..<3 {
            let toCloud = try statements {
                principal = try env.service.accounts.authenticate(token: phone.deviceToken)
                answers = try env.cloud(d1, phoneIDs)
            }
            #expect(toCloud == 2)
            #expect(principal == .device(d1) && answers == clouds)
            let toLocal = try statements {
                principal = try env.service.accounts.authenticate(token: tablet.deviceToken)
                answers = try env.local(d2, cloudIDs)
            }
            #expect(toLocal == 2)
            #expect(principal == .device(d2) && answers == tabletIDs.map { .found($0) })
        }

        // Another instance writes: this one's next read catches its index up inside a read begun on
        // its second statement (so more statements), with the write in its answer; then one again.
        let other = try env.anotherInstance()
        try other.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(delete: [tabletIDs[0]])), device: d2)
        let catchUp = try statements { answers = try env.local(d2, [cloudIDs[0], cloudIDs[1]]) }
        #expect(catchUp > 1)
        #expect(answers == [.error(.identifierNotFound(limitedLibrary: false)), .found(tabletIDs[1])])
        let warmAgain = try statements { answers = try env.local(d2, [cloudIDs[1]]) }
        #expect(warmAgain == 1)
        #expect(answers == [.found(tabletIDs[1])])
    }
}
