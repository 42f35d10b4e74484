import ConcordDomain
import ConcordStorage
import ConcordTestSupport
import Foundation
import Testing

/// What a warm mapping request sends PostgreSQL, counted (`PostgresStore.statementsExecuted`): one
/// statement — who holds the token, with the device and its account's mapping version — and no BEGIN
/// or COMMIT, each way, when the account's mapping index is current at that version. A request the
/// index cannot answer alone (another instance wrote) reads storage, its transaction begun on its
/// second statement, and answers with the write.
@Suite(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason + " (WarmMappingStatementsTests)")))
struct WarmMappingStatementsTests {
    @Test func aWarmMappingRequestIsOneStatementEachWay() throws {
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
            // As the routes do: the token's statement brings the device and the mapping version along.
            let toCloud = try statements {
                let found = try env.service.accounts.authenticateWithDeviceCheck(token: phone.deviceToken)
                principal = found?.principal
                let a = try env.service.mapping.cloudIdentifierAnswers(forLocalIdentifiers: IdentifierBatch(phoneIDs), device: d1, checked: found?.deviceCheck)
                answers = a.answers.indices.map { a.result($0) }
            }
            #expect(toCloud == 1)
            #expect(principal == .device(d1) && answers == clouds)
            let toLocal = try statements {
                let found = try env.service.accounts.authenticateWithDeviceCheck(token: tablet.deviceToken)
                principal = found?.principal
                answers = try env.service.mapping.localIdentifierAnswers(forCloudIdentifiers: IdentifierBatch(cloudIDs), device: d2, checked: found?.deviceCheck).results
            }
            #expect(toLocal == 1)
            #expect(principal == .device(d2) && answers == tabletIDs.map { .found($0) })
            // Without the check (a caller that authenticated elsewhere): the token, then the device with the mapping version.
            let unchecked = try statements {
                principal = try env.service.accounts.authenticate(token: tablet.deviceToken)
                answers = try env.local(d2, cloudIDs)
            }
            #expect(unchecked == 2)
            #expect(answers == tabletIDs.map { .found($0) })
        }

        // Another instance writes: this one's next read catches its index up inside a read begun on
        // its second statement (more statements), with the write in its answer; then one again.
        let other = try env.anotherInstance()
        try other.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(delete: [tabletIDs[0]])), device: d2)
        func checkedLocal(_ ids: [String]) throws -> [MappingResult] {
            let found = try env.service.accounts.authenticateWithDeviceCheck(token: tablet.deviceToken)
            return try env.service.mapping.localIdentifierAnswers(forCloudIdentifiers: IdentifierBatch(ids), device: d2, checked: found?.deviceCheck).results
        }
        let catchUp = try statements { answers = try checkedLocal([cloudIDs[0], cloudIDs[1]]) }
        #expect(catchUp > 2)
        #expect(answers == [.error(.identifierNotFound(limitedLibrary: false)), .found(tabletIDs[1])])
        let warmAgain = try statements { answers = try checkedLocal([cloudIDs[1]]) }
        #expect(warmAgain == 1)
        #expect(answers == [.found(tabletIDs[1])])
    }
}
