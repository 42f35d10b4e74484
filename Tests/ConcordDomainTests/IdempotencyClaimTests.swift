import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

/// What a resend finds after the server died with a key claimed, on both engines: a
/// request whose write never committed runs again; one whose write committed is `answerLost`,
/// never applied twice. "Died" is a second service on the same database, as after a restart.
@Suite struct IdempotencyClaimTests {
    static let fingerprint = [UInt8](repeating: 7, count: 32)

    @Test(arguments: TestEngine.available)
    func aClaimWhoseWriteNeverCommittedRunsAgainOnceItsProcessIsGone(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let owner = [UInt8](repeating: 1, count: 32)
        #expect(try env.service.idempotency.claim(owner: owner, accountID: env.account.accountID, key: "k", fingerprint: Self.fingerprint) == .claimed)
        // The same process, still running it: in progress.
        #expect(try env.service.idempotency.claim(owner: owner, accountID: env.account.accountID, key: "k", fingerprint: Self.fingerprint) == .inProgress)
        let restarted = try env.anotherInstance()
        let expected: IdempotencyClaim = engine == .sqlite ? .claimed : .inProgress   // PostgreSQL: the other may be alive
        #expect(try restarted.idempotency.claim(owner: owner, accountID: env.account.accountID, key: "k", fingerprint: Self.fingerprint) == expected)
        env.clock.advance(IdempotencyService.abandonedAfter + 1)
        if engine == .postgres {
            #expect(try restarted.idempotency.claim(owner: owner, accountID: env.account.accountID, key: "k", fingerprint: Self.fingerprint) == .claimed)
        }
    }

    @Test(arguments: TestEngine.available)
    func aClaimWhoseWriteCommittedIsAnswerLostNotRunTwice(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let phone = try env.device("phone")
        let owner = [UInt8](repeating: 2, count: 32)
        #expect(try env.service.idempotency.claim(owner: owner, accountID: env.account.accountID, key: "j", fingerprint: Self.fingerprint) == .claimed)
        // The request's write commits (and marks the key in the same transaction); then the process dies.
        _ = try env.service.journals.createJournal(title: "Once", device: phone, idempotency: IdempotencyScope(owner: owner, key: "j"))
        env.clock.advance(IdempotencyService.abandonedAfter + 1)
        let restarted = try env.anotherInstance()
        #expect(try restarted.idempotency.claim(owner: owner, accountID: env.account.accountID, key: "j", fingerprint: Self.fingerprint) == .answerLost)
        #expect(try restarted.journals.listJournals(device: phone).count == 1)
        // A failed request that had committed a write keeps its claim too (release leaves it).
        try restarted.idempotency.release(owner: owner, key: "j")
        #expect(try restarted.idempotency.claim(owner: owner, accountID: env.account.accountID, key: "j", fingerprint: Self.fingerprint) == .answerLost)
        // A key whose answer was stored replays, whatever happened to its process.
        #expect(try restarted.idempotency.claim(owner: owner, accountID: nil, key: "other", fingerprint: Self.fingerprint) == .claimed)
        try restarted.idempotency.complete(owner: owner, key: "other", answer: [1, 2, 3])
        #expect(try env.service.idempotency.claim(owner: owner, accountID: nil, key: "other", fingerprint: Self.fingerprint) == .replay([1, 2, 3]))
        #expect(try env.service.idempotency.claim(owner: owner, accountID: nil, key: "other", fingerprint: [9]) == .reused)
    }
}
