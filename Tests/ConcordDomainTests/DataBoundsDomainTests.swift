import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

/// The bounds where their rules live (the services), on both engines.
@Suite struct DataBoundsDomainTests {
    static let fingerprint = [UInt8](repeating: 7, count: 32)

    /// An account's keys fill their room: an answer that would pass it is replaced by the fallback,
    /// a new key at the room is `quotaExceeded`, a known key still replays, other accounts are not counted.
    @Test(arguments: TestEngine.available)
    func keptAnswersStayWithinTheAccountsRoom(_ engine: TestEngine) throws {
        let env = try TestEnv(engine) { $0.dataBounds.idempotencyBytesPerAccount = 3000 }
        let keys = env.service.idempotency
        let owner = [UInt8](repeating: 1, count: 32)
        let account = env.account.accountID
        let big = [UInt8](repeating: 65, count: 1500), fallback = [UInt8](repeating: 66, count: 100)

        #expect(try keys.claim(owner: owner, accountID: account, key: "a", fingerprint: Self.fingerprint) == .claimed)
        try keys.complete(owner: owner, key: "a", answer: big, fallback: fallback, accountID: account)   // 1500 + 1 + 256
        #expect(try keys.claim(owner: owner, accountID: account, key: "b", fingerprint: Self.fingerprint) == .claimed)
        try keys.complete(owner: owner, key: "b", answer: big, fallback: fallback, accountID: account)   // would pass 3000
        #expect(try keys.claim(owner: owner, accountID: account, key: "a", fingerprint: Self.fingerprint) == .replay(big))
        #expect(try keys.claim(owner: owner, accountID: account, key: "b", fingerprint: Self.fingerprint) == .replay(fallback))
        // 1757 + 357 taken: a third key fits its claim, its big answer does not.
        #expect(try keys.claim(owner: owner, accountID: account, key: "c", fingerprint: Self.fingerprint) == .claimed)
        try keys.complete(owner: owner, key: "c", answer: big, fallback: [UInt8](repeating: 66, count: 700), accountID: account)
        expectError(.quotaExceeded(quota: "idempotencyBytesPerAccount", limit: 3000)) {
            try keys.claim(owner: owner, accountID: account, key: "d", fingerprint: Self.fingerprint)
        }
        #expect(try keys.claim(owner: owner, accountID: account, key: "a", fingerprint: Self.fingerprint) == .replay(big))
        // Keys free their room when they expire, purged or not.
        env.clock.advance(IdempotencyService.lifetime + 1)
        #expect(try keys.claim(owner: owner, accountID: account, key: "d", fingerprint: Self.fingerprint) == .claimed)
        // Another account's room is its own; the admin's keys (no account) are not counted.
        let other = try env.service.accounts.createAccount(name: "Other")
        #expect(try keys.claim(owner: [2], accountID: other.accountID, key: "d", fingerprint: Self.fingerprint) == .claimed)
        #expect(try keys.claim(owner: [3], accountID: nil, key: "d", fingerprint: Self.fingerprint) == .claimed)
        try keys.complete(owner: [3], key: "d", answer: big + big + big, fallback: fallback, accountID: nil)
        #expect(try keys.claim(owner: [3], accountID: nil, key: "d", fingerprint: Self.fingerprint) == .replay(big + big + big))
    }

    /// An admin's key tied to the account its request created goes when that account is deleted;
    /// tied to an account deleted already, it goes at once.
    @Test(arguments: TestEngine.available)
    func aKeyTiedToAnAccountIsDeletedWithIt(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let keys = env.service.idempotency
        let admin = [UInt8](repeating: 9, count: 32)
        let created = try env.service.accounts.createAccount(name: "Made by a key")
        #expect(try keys.claim(owner: admin, accountID: nil, key: "k", fingerprint: Self.fingerprint) == .claimed)
        try keys.complete(owner: admin, key: "k", answer: [1, 2, 3], fallback: [4], accountID: created.accountID)
        #expect(try keys.claim(owner: admin, accountID: nil, key: "k", fingerprint: Self.fingerprint) == .replay([1, 2, 3]))
        try env.service.accounts.deleteAccount(accountID: created.accountID)
        #expect(try keys.claim(owner: admin, accountID: nil, key: "k", fingerprint: Self.fingerprint) == .claimed)
        try keys.complete(owner: admin, key: "k", answer: [5], fallback: [6], accountID: created.accountID)
        #expect(try keys.claim(owner: admin, accountID: nil, key: "k", fingerprint: Self.fingerprint) == .claimed)
    }

    /// History kept within `historyBytesPerDevice`: a large change prunes the oldest ones.
    @Test(arguments: TestEngine.available)
    func historyIsPrunedToItsByteBudget(_ engine: TestEngine) throws {
        let (env, d, t0) = try HistoryTests.deviceWithHistory(engine) { $0.dataBounds.historyBytesPerDevice = 12_000 }
        func ids(_ range: Range<Int>) -> [(String, String)] { range.map { ("asset-\(String(repeating: "x", count: 40))-\($0)", fp($0)) } }
        let t1 = try env.put(d, assets: ids(0..<100)).changeToken      // ~5 KB of details
        let t2 = try env.put(d, assets: ids(100..<200)).changeToken
        #expect(try env.service.history.changes(since: t0, limit: nil, device: d).changes.count == 2)
        let t3 = try env.put(d, assets: ids(200..<300)).changeToken    // three pass 12 000 bytes
        expectError(.persistentChangeTokenExpired) { try env.service.history.changes(since: t0, limit: nil, device: d) }
        #expect(try env.service.history.changes(since: t1, limit: nil, device: d).changes.map(\.changeToken) == [t2, t3])
        // A change larger than the whole budget leaves only the current token valid.
        let t4 = try env.put(d, assets: ids(300..<600)).changeToken
        expectError(.persistentChangeTokenExpired) { try env.service.history.changes(since: t3, limit: nil, device: d) }
        #expect(try env.service.history.changes(since: t4, limit: nil, device: d).changes.isEmpty)
    }

    /// Small changes are measured every 64th change: until then the budget may be passed by them.
    @Test(arguments: TestEngine.available)
    func smallChangesAreMeasuredEverySixtyFourth(_ engine: TestEngine) throws {
        let (env, d, t0) = try HistoryTests.deviceWithHistory(engine) { $0.dataBounds.historyBytesPerDevice = 100 }
        var tokens: [String] = []
        for i in 1...63 { tokens.append(try env.put(d, assets: [("a\(i)", fp(i))]).changeToken) }
        #expect(try env.service.history.changes(since: t0, limit: nil, device: d).changes.count == 63)
        tokens.append(try env.put(d, assets: [("a64", fp(64))]).changeToken)
        expectError(.persistentChangeTokenExpired) { try env.service.history.changes(since: t0, limit: nil, device: d) }
        // 5 bytes a change ("ai" + "a64"): the newest 20 fit in 100 bytes; the token of seq 44 is the oldest valid.
        let kept = try env.service.history.changes(since: tokens[43], limit: nil, device: d).changes.count
        #expect(kept == 20)
        expectError(.persistentChangeTokenExpired) { try env.service.history.changes(since: tokens[42], limit: nil, device: d) }
    }

    /// `GET /v1/journals/{id}` answers at most `journalAnswerBytes` (estimated: 129 + 256 a photo for
    /// these entries): whole journals within it, pages (at least one entry each) beyond it.
    @Test(arguments: TestEngine.available)
    func journalAnswersAreCutByTheirSize(_ engine: TestEngine) throws {
        let env = try TestEnv(engine) { $0.dataBounds.journalAnswerBytes = 1300 }
        let d = try env.device()
        let j = try env.journal(d)
        func put(_ entryID: String, _ count: Int) throws {
            let photos: [JournalPhotoInput] = (0..<count).map { _ in .cloudIdentifier("\(UUID().uuidString):001:\(fp(1))") }
            _ = try env.service.journals.putEntry(journalID: j.journalID, entryID: entryID, text: "", photos: photos, ifMatch: nil, device: d)
        }
        try put("a", 2)
        try put("b", 2)
        let whole = try env.service.journals.journal(j.journalID, device: d)
        #expect(whole.entries.map(\.entryID) == ["a", "b"] && !whole.paged && !whole.hasMore)
        try put("c", 6)
        try put("d", 1)
        let first = try env.service.journals.journal(j.journalID, device: d)
        #expect(first.entries.map(\.entryID) == ["a", "b"] && first.paged && first.hasMore)
        let second = try env.service.journals.journal(j.journalID, device: d, page: PageRequest(after: "b"))
        #expect(second.entries.map(\.entryID) == ["c"] && second.hasMore)
        let third = try env.service.journals.journal(j.journalID, device: d, page: PageRequest(after: "c"))
        #expect(third.entries.map(\.entryID) == ["d"] && third.paged && !third.hasMore)
        // One entry is always answered whole.
        #expect(try env.service.journals.entry(journalID: j.journalID, entryID: "c", device: d).photos.count == 6)
        // Text counts too: entries of 1000 bytes of text and no photos come one to a page.
        let texts = try env.journal(d, "Texts")
        for id in ["x", "y", "z"] {
            _ = try env.service.journals.putEntry(journalID: texts.journalID, entryID: id, text: String(repeating: "w", count: 1000), photos: [], ifMatch: nil, device: d)
        }
        var seen: [String] = []
        var page = try env.service.journals.journal(texts.journalID, device: d)
        while true {
            #expect(page.entries.count == 1 && page.paged)
            seen += page.entries.map(\.entryID)
            guard page.hasMore, let last = seen.last else { break }
            page = try env.service.journals.journal(texts.journalID, device: d, page: PageRequest(after: last))
        }
        #expect(seen == ["x", "y", "z"])
        // More entries than are read from storage at once (16) are answered whole while they fit.
        let roomy = try TestEnv(engine)
        let r = try roomy.device()
        let many = try roomy.journal(r, "Many")
        for i in 0..<40 { _ = try roomy.service.journals.putEntry(journalID: many.journalID, entryID: "m\(i)", text: "", photos: [], ifMatch: nil, device: r) }
        let all = try roomy.service.journals.journal(many.journalID, device: r)
        #expect(all.entries.map(\.entryID) == (0..<40).map { "m\($0)" } && !all.paged)
        let paged = try roomy.service.journals.journal(many.journalID, device: r, page: PageRequest(limit: 20, after: "m9"))
        #expect(paged.entries.map(\.entryID) == (10..<30).map { "m\($0)" } && paged.hasMore)
    }
}
