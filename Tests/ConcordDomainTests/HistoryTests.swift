import ConcordDomain
import ConcordStorage
import ConcordTestSupport
import Foundation
import Testing

@Suite struct HistoryTests {
    @Test(arguments: TestEngine.available) func tokenOfEmptyLibraryYieldsEveryLaterChangeInOrder(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        let t0 = try env.service.history.currentChangeToken(device: d)
        #expect(try env.service.history.changes(since: t0, limit: nil, device: d) == ChangePage(changes: [], changeToken: t0, hasMore: false))
        let r1 = try env.put(d, assets: [("a1", fp(1))])
        let r2 = try env.put(d, assets: [("a1", fp(2)), ("a2", fp(3))])
        let r3 = try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(delete: ["a1"])), device: d)
        let page = try env.service.history.changes(since: t0, limit: nil, device: d)
        #expect(page.changes.map(\.changeToken) == [r1.changeToken, r2.changeToken, r3.changeToken])
        #expect(page.changes.map(\.details) == [
            ChangeDetails(assets: ChangeLists(inserted: ["a1"])),
            ChangeDetails(assets: ChangeLists(inserted: ["a2"], updated: ["a1"])),
            ChangeDetails(assets: ChangeLists(deleted: ["a1"])),
        ])
        #expect(page.changeToken == r3.changeToken)
        #expect(!page.hasMore)
        #expect(try env.service.history.currentChangeToken(device: d) == r3.changeToken)
        // Strictly after since.
        #expect(try env.service.history.changes(since: r2.changeToken, limit: nil, device: d).changes.map(\.changeToken) == [r3.changeToken])
        #expect(Set([t0, r1.changeToken, r2.changeToken, r3.changeToken]).count == 4)
    }

    @Test(arguments: TestEngine.available) func pagingWithLimitAndHasMore(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        var since = try env.service.history.currentChangeToken(device: d)
        for i in 0..<7 { try env.put(d, assets: [("a\(i)", fp(i))]) }
        var seen: [String] = []
        var pages = 0
        while true {
            let page = try env.service.history.changes(since: since, limit: 3, device: d)
            pages += 1
            seen += page.changes.flatMap { $0.details?.assets.inserted ?? [] }
            since = page.changeToken
            if !page.hasMore { break }
            #expect(page.changes.count == 3)
        }
        #expect(pages == 3)
        #expect(seen == (0..<7).map { "a\($0)" })
        expectError(.badRequest(message: "limit must be between 1 and 10000.", field: "limit")) { try env.service.history.changes(since: since, limit: 0, device: d) }
        expectErrorNamed("badRequest") { try env.service.history.changes(since: since, limit: 10_001, device: d) }
        #expect(try env.service.history.changes(since: since, limit: 10_000, device: d).changes.isEmpty)
    }

    @Test(arguments: TestEngine.available) func foreignForgedOrGarbledTokenIsInvalidChangeToken(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        try env.put(a, assets: [("a1", fp(1))])
        let ta = try env.service.history.currentChangeToken(device: a)
        let other = try env.service.accounts.createAccount(name: "Other")
        let o = try env.device("o", accountID: other.accountID)
        for bad in ["", "garbage", String(ta.dropLast()) + (ta.hasSuffix("A") ? "B" : "A"), try env.service.history.currentChangeToken(device: o)] {
            expectError(.invalidChangeToken) { try env.service.history.changes(since: bad, limit: nil, device: a) }
        }
        expectError(.invalidChangeToken) { try env.service.history.changes(since: ta, limit: nil, device: b) }
        // A token from another server secret (another database) is invalid too.
        let codec = ChangeTokenCodec(secret: Array("not the secret".utf8))
        expectError(.invalidChangeToken) { try env.service.history.changes(since: codec.encode(seq: 0, scope: .library(a)), limit: nil, device: a) }
    }

    /// A device of a service whose history settings `configure` sets, and its empty library's token.
    static func deviceWithHistory(_ engine: TestEngine, _ configure: (inout DomainConfiguration) -> Void) throws -> (TestEnv, DeviceRef, String) {
        var config = DomainConfiguration()
        configure(&config)
        let env = try TestEnv(engine, configuration: config)
        let d = try env.device()
        return (env, d, try env.service.history.currentChangeToken(device: d))
    }

    @Test(arguments: TestEngine.available) func expiryByCount(_ engine: TestEngine) throws {
        let (env, d, t0) = try Self.deviceWithHistory(engine) { $0.historyMaxChanges = 3 }
        var tokens: [String] = []
        for i in 0..<5 { tokens.append(try env.put(d, assets: [("a\(i)", fp(i))]).changeToken) }
        // Kept: changes 3, 4, 5. A token at 2 still sees everything after it; 1 and 0 do not.
        expectError(.persistentChangeTokenExpired) { try env.service.history.changes(since: t0, limit: nil, device: d) }
        expectError(.persistentChangeTokenExpired) { try env.service.history.changes(since: tokens[0], limit: nil, device: d) }
        #expect(try env.service.history.changes(since: tokens[1], limit: nil, device: d).changes.count == 3)
        #expect(try env.service.history.changes(since: tokens[4], limit: nil, device: d).changes.isEmpty)
        // Its status, 410, is the app's to give (ErrorMapperTests).
        #expect(DomainError.persistentChangeTokenExpired.photosErrorCode == 3105)
    }

    @Test(arguments: TestEngine.available) func expiryByAgeWithInjectedClock(_ engine: TestEngine) throws {
        let (env, d, t0) = try Self.deviceWithHistory(engine) { $0.historyMaxAge = 3600 }
        let r1 = try env.put(d, assets: [("a1", fp(1))])
        env.clock.advance(1800)
        let r2 = try env.put(d, assets: [("a2", fp(2))])
        #expect(try env.service.history.changes(since: t0, limit: nil, device: d).changes.count == 2)
        env.clock.advance(2000)   // change 1 is now 3800 s old, change 2 1800 s old
        expectError(.persistentChangeTokenExpired) { try env.service.history.changes(since: t0, limit: nil, device: d) }
        #expect(try env.service.history.changes(since: r1.changeToken, limit: nil, device: d).changes.map(\.changeToken) == [r2.changeToken])
        env.clock.advance(10_000)  // everything old: the current token stays valid, with nothing new
        #expect(try env.service.history.changes(since: r2.changeToken, limit: nil, device: d).changes.isEmpty)
        expectError(.persistentChangeTokenExpired) { try env.service.history.changes(since: r1.changeToken, limit: nil, device: d) }
        // A write prunes physically; later changes are listed after the current token.
        let r3 = try env.put(d, assets: [("a3", fp(3))])
        #expect(try env.service.history.changes(since: r2.changeToken, limit: nil, device: d).changes.map(\.changeToken) == [r3.changeToken])
    }

    @Test(arguments: TestEngine.available) func resetChangeIsDetailsUnavailable(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        let t0 = try env.service.history.currentChangeToken(device: d)
        try env.put(d, assets: [("a1", fp(1))])
        try env.service.library.replaceLibrary(LibrarySnapshot(objects: []), reset: true, device: d)
        try env.put(d, assets: [("a2", fp(2))])
        let page = try env.service.history.changes(since: t0, limit: nil, device: d)
        #expect(page.changes.map { $0.details == nil } == [false, true, false])
        #expect(ItemError.persistentChangeDetailsUnavailable.photosErrorCode == 3210)
    }

    @Test(arguments: TestEngine.available) func failedRequestLeavesNoTraceAndTokensStayDense(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        let r1 = try env.put(d, assets: [("a1", fp(1))])
        expectErrorNamed("unprocessable") {
            try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(upsert: [.asset("a2", fingerprint: fp(2))]),
                                                              assetCollections: .init(upsert: [.assetCollection("c", fingerprint: fp(3), assets: ["zz"])])), device: d)
        }
        #expect(try env.service.history.currentChangeToken(device: d) == r1.changeToken)
        expectErrorNamed("notFound") { try env.service.library.object(localIdentifier: "a2", device: d) }
    }
}

@Suite struct ConvergenceTests {
    /// Two devices × many threads map the same new content at once: exactly one record results,
    /// and every answer names it.
    @Test(arguments: TestEngine.available) func racingDevicesConvergeOnOneRecord(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        let contents = 40
        try env.put(a, assets: (0..<contents).map { ("a\($0)", fp($0)) })
        try env.put(b, assets: (0..<contents).map { ("b\($0)", fp($0)) })
        let threads = 8
        let lock = NSLock()
        // nonisolated(unsafe): both are only touched while holding `lock`.
        nonisolated(unsafe) var answers: [Int: Set<String>] = [:]
        nonisolated(unsafe) var failures: [String] = []
        let service = env.service
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            let device = t % 2 == 0 ? a : b
            let prefix = t % 2 == 0 ? "a" : "b"
            // Each thread walks the contents in its own order, one request per identifier.
            let order = t % 4 < 2 ? Array(0..<contents) : Array((0..<contents).reversed())
            for i in order {
                do {
                    let r = try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["\(prefix)\(i)"], device: device)
                    if case .found(let c) = r[0].result {
                        lock.withLock { _ = answers[i, default: []].insert(c) }
                    } else {
                        lock.withLock { failures.append("\(r)") }
                    }
                } catch {
                    lock.withLock { failures.append("\(error)") }
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        for i in 0..<contents { #expect(answers[i]?.count == 1, "content \(i): \(answers[i] ?? [])") }
        // And cloud → local on each device gives back its own object.
        for i in 0..<contents {
            guard let c = answers[i]?.first else { continue }
            #expect(try env.local(a, [c]) == [.found("a\(i)")])
            #expect(try env.local(b, [c]) == [.found("b\(i)")])
        }
    }
}

@Suite struct SharedDatabaseTests {
    /// Two "servers" (two stores, two services) on one database file: devices racing through
    /// different servers still converge on one record, and each device's tokens stay ordered.
    @Test(arguments: TestEngine.available) func twoServersSharingOneFileConverge(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let second = try env.anotherInstance()
        let a = try env.device("A")
        let b = try env.device("B")
        let contents = 30
        try env.put(a, assets: (0..<contents).map { ("a\($0)", fp($0)) })
        try second.library.applyChanges(LibraryChangeRequest(assets: .init(upsert: (0..<contents).map { .asset("b\($0)", fingerprint: fp($0)) })), device: b)
        let services = [env.service, second]
        let lock = NSLock()
        // nonisolated(unsafe): both are only touched while holding `lock`.
        nonisolated(unsafe) var answers: [Int: Set<String>] = [:]
        nonisolated(unsafe) var failures: [String] = []
        DispatchQueue.concurrentPerform(iterations: 8) { t in
            let service = services[t % 2]
            let (device, prefix) = (t / 2) % 2 == 0 ? (a, "a") : (b, "b")
            for i in 0..<contents {
                do {
                    let r = try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["\(prefix)\(i)"], device: device)
                    if case .found(let c) = r[0].result { lock.withLock { _ = answers[i, default: []].insert(c) } }
                    else { lock.withLock { failures.append("\(r)") } }
                } catch {
                    lock.withLock { failures.append("\(error)") }
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        for i in 0..<contents { #expect(answers[i]?.count == 1, "content \(i)") }
        // Tokens from either server are the same device history.
        let t1 = try env.service.history.currentChangeToken(device: a)
        try second.library.applyChanges(LibraryChangeRequest(assets: .init(upsert: [.asset("a-new", fingerprint: fp(999))])), device: a)
        #expect(try env.service.history.changes(since: t1, limit: nil, device: a).changes.count == 1)
    }
}
