#if canImport(Glibc)
import Glibc
#endif
import ConcordJSON
import ConcordObservability
import ConcordTestSupport
import Foundation
import Synchronization
import Testing

@testable import ConcordApp

/// Runs `count` bodies on their own threads at once and waits for all of them.
private func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        Thread {
            body(i)
            group.leave()
        }.start()
    }
    group.wait()
}

/// Two `concord serve` processes (the built binary) on one PostgreSQL database (/// "on one server or on several sharing one database").
@Suite(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason + " (PostgresInstancesTests: two concord serve processes on one database; the postgres cases of racingDevicesGetOneCloudIdentifierPerContent and of the journal route tests in JournalRoutesTests.swift)")))
struct PostgresInstancesTests {
    @Test func twoInstancesConvergeOnOneCloudIdentifierAndHandOutTokensInCommitOrder() throws {
        try TwoInstances.run { instances in
            let (port1, port2) = (instances.port1, instances.port2)

            // One account; the phone talks to instance one, the tablet to instance two.
            let (_, phone, tablet) = try instances.accountWithPhoneAndTablet()
            let contents = 30
            @Sendable func upsert(_ port: Int, _ token: String, _ items: [(String, String)]) throws {
                let body = #"{"assets":{"upsert":["# + items.map { #"{"localIdentifier":\#(json($0.0)),"fingerprint":"\#($0.1)"}"# }.joined(separator: ",") + "]}}"
                let r = try send(port, "POST", "/v1/library/changes", token: token, body: body)
                try #require(r.status == 200, "\(r.raw.body)")
            }
            try upsert(port1, phone, (0..<contents).map { ("phone-\($0)", fingerprint($0)) })
            try upsert(port2, tablet, (0..<contents).map { ("tablet-\($0)", fingerprint($0)) })

            // The same new content through both instances at once: one cloud identifier per content.
            let answers = Mutex<[Int: Set<String>]>([:])
            let failures = Mutex<[String]>([])
            onThreads(8) { t in
                let (port, token, prefix) = t % 2 == 0 ? (port1, phone, "phone") : (port2, tablet, "tablet")
                var generator = SystemRandomNumberGenerator()
                for _ in 0..<4 {
                    let slice = Array((0..<contents).shuffled(using: &generator).prefix(10))
                    do {
                        let r = try send(port, "POST", "/v1/library/cloud-identifiers", token: token,
                                         body: #"{"localIdentifiers":\#(jsonArray(slice.map { "\(prefix)-\($0)" }))}"#)
                        for (n, m) in zip(slice, r["mappings"]?.arrayValue ?? []) {
                            if let c = m["cloudIdentifier"]?.stringValue { answers.withLock { _ = $0[n, default: []].insert(c) } } else { failures.withLock { $0.append("\(m)") } }
                        }
                        if r.status != 200 { failures.withLock { $0.append("status \(r.status): \(r.raw.body)") } }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
            #expect(failures.withLock { $0 } == [])
            let seen = answers.withLock { $0 }
            for n in 0..<contents { #expect(seen[n, default: []].count <= 1, "content \(n): \(seen[n] ?? [])") }
            let phoneMap = try send(port2, "POST", "/v1/library/cloud-identifiers", token: phone,
                                    body: #"{"localIdentifiers":\#(jsonArray((0..<contents).map { "phone-\($0)" }))}"#)["mappings"]?.arrayValue?.map { $0["cloudIdentifier"]?.stringValue }
            let tabletMap = try send(port1, "POST", "/v1/library/cloud-identifiers", token: tablet,
                                     body: #"{"localIdentifiers":\#(jsonArray((0..<contents).map { "tablet-\($0)" }))}"#)["mappings"]?.arrayValue?.map { $0["cloudIdentifier"]?.stringValue }
            #expect(phoneMap != nil && phoneMap == tabletMap)
            #expect(Set((phoneMap ?? []).compactMap { $0 }).count == contents)

            // Writers of one device through both instances, a reader following its feed through
            // instance two: every acknowledged change shows up exactly once (a change committing below
            // a token the reader already passed would be missed for good).
            let start = try #require(try send(port2, "GET", "/v1/library/token", token: phone)["changeToken"]?.stringValue)
            let writers = 4, writesEach = 12
            let done = Mutex(0)
            let feed = Mutex<[String]>([])
            onThreads(writers + 1) { t in
                if t == writers {
                    var since = start
                    while true {
                        let finished = done.withLock { $0 == writers }
                        guard let page = try? send(port2, "GET", "/v1/library/changes?since=\(percentEncoded(since))&limit=1000", token: phone),
                              page.status == 200, let next = page["changeToken"]?.stringValue else {
                            failures.withLock { $0.append("reader failed") }
                            return
                        }
                        let changes = page["changes"]?.arrayValue ?? []
                        for c in changes { feed.withLock { $0 += c["assets"]?["inserted"]?.arrayValue?.compactMap(\.stringValue) ?? [] } }
                        since = next
                        if finished && changes.isEmpty { return }
                    }
                }
                for i in 0..<writesEach {
                    do {
                        try upsert(t % 2 == 0 ? port1 : port2, phone, [("w\(t)-\(i)", fingerprint(1000 + t * 100 + i))])
                    } catch {
                        failures.withLock { $0.append("writer \(t): \(error)") }
                    }
                }
                done.withLock { $0 += 1 }
            }
            #expect(failures.withLock { $0 } == [])
            let got = feed.withLock { $0 }
            let expected = Set((0..<writers).flatMap { t in (0..<writesEach).map { "w\(t)-\($0)" } })
            #expect(got.count == expected.count && Set(got) == expected, "the reader saw \(got.count) of \(expected.count) changes")
        }
    }
}

extension PostgresInstancesTests {
    /// If-Match across two `concord serve` processes: a version read on instance two and overtaken
    /// on instance one is 412 versionMismatch naming the current version.
    @Test func staleIfMatchOnTheOtherInstanceIs412() throws {
        try TwoInstances.run { instances in
            let (port1, port2) = (instances.port1, instances.port2)
            func call(_ port: Int, _ method: String, _ target: String, token: String, body: String, ifMatch: String? = nil) throws -> APIResponse {
                var headers = ["Authorization: Bearer \(token)", "Content-Type: application/json"]
                if let ifMatch { headers.append("If-Match: \"\(ifMatch)\"") }
                return APIResponse(raw: try rawRequest(port: port, method, target, headers: headers, body: body))
            }

            let accountToken = try #require(try send(port1, "POST", "/v1/accounts", token: testAdminToken, body: #"{"name":"Two"}"#)["accountToken"]?.stringValue)
            let phone = try #require(try send(port1, "POST", "/v1/devices", token: accountToken, body: #"{"name":"Phone"}"#)["deviceToken"]?.stringValue)
            let tablet = try #require(try send(port2, "POST", "/v1/devices", token: accountToken, body: #"{"name":"Tablet"}"#)["deviceToken"]?.stringValue)
            let journal = try #require(try call(port1, "POST", "/v1/journals", token: phone, body: #"{"title":"Trip"}"#)["journalID"]?.stringValue)
            let entry = "/v1/journals/\(journal)/entries/e"
            let first = try call(port1, "PUT", entry, token: phone, body: #"{"text":"one","photos":[]}"#)
            try #require(first.status == 200, "\(first.raw.body)")

            let seen = try #require(try send(port2, "GET", "/v1/journals/\(journal)", token: tablet)["entries"]?[0]?["version"]?.stringValue)
            let moved = try call(port1, "PUT", entry, token: phone, body: #"{"text":"two","photos":[]}"#, ifMatch: seen)
            try #require(moved.status == 200, "\(moved.raw.body)")
            let current = try #require(moved["version"]?.stringValue)
            let stale = try call(port2, "PUT", entry, token: tablet, body: #"{"text":"stale","photos":[]}"#, ifMatch: seen)
            #expect(stale.status == 412 && stale.errorName == "versionMismatch" && stale.json?["error"]?["version"]?.stringValue == current,
                    "\(stale.raw.body)")
            let now = try send(port2, "GET", "/v1/journals/\(journal)", token: tablet)["entries"]?[0]
            #expect(now?["text"]?.stringValue == "two" && now?["version"]?.stringValue == current)
        }
    }
}

/// PostgreSQL stops under load and comes back: 503 + Retry-After and /ready 503 while it is down,
/// recovery without restarting Concord, no acknowledged write lost. Uses a cluster of its own
/// (`CONCORD_TEST_PG_CTL init DIR`), so stopping it does not disturb the other PostgreSQL tests.
@Suite(.enabled(if: TestEngine.postgresAvailable && TestEngine.postgresControl != nil,
                "CONCORD_TEST_POSTGRES_URL or CONCORD_TEST_PG_CTL not set: PostgreSQL fault test (PostgresFaultTests) skipped"))
struct PostgresFaultTests {
    /// Runs the cluster control command (posix_spawn + waitpid: nothing else may reap it, and its
    /// output goes to a file, so no pipe can be held open by a server it starts); true on exit 0.
    private func control(_ arguments: [String], directory: String) throws -> (Bool, String) {
        let output = directory + ".out"
        let command = ([TestEngine.postgresControl ?? "/bin/false"] + arguments).map { "'" + $0 + "'" }.joined(separator: " ")
        let script = "CONCORD_PG_DIR='\(directory)' \(command) >'\(output)' 2>&1 </dev/null"
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup(script), nil]
        defer { for p in argv { free(p) } }
        guard posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0 else { return (false, "cannot spawn /bin/sh") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: output)
        // Exited normally with status 0 (WIFEXITED && WEXITSTATUS == 0).
        return ((status & 0x7F) == 0 && (status >> 8) & 0xFF == 0, text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Webhook deliveries hold while PostgreSQL is down and resume after it, without a restart: a
    /// retry that fell due during the outage is made once it is back.
    @Test func webhookDeliveriesHoldDuringAnOutageAndResume() throws {
        let clusterDirectory = NSTemporaryDirectory() + "concord-fault-" + UUID().uuidString
        let (created, url) = try self.control(["init", clusterDirectory], directory: clusterDirectory)
        try #require(created, "cannot create a cluster: \(url)")
        defer { _ = try? self.control(["destroy"], directory: clusterDirectory) }
        let receiver = try LocalWebhookReceiver()
        defer { receiver.stop() }
        var configuration = testServerConfiguration(.postgres(url: url))
        configuration.webhooks.allowedHosts = ["127.0.0.1"]
        configuration.webhooks.secretKey = String(repeating: "cd", count: 32)
        configuration.webhooks.settings.retrySchedule = [2, 2, 2]
        // An attempt whose outcome could not be recorded during the outage is released after its lease.
        configuration.webhooks.settings.timeoutSeconds = 5
        configuration.webhooks.settings.leaseSeconds = 15
        let app = try startApp(configuration, sink: LogSink(flushInterval: 0, output: { _ in }))
        defer { app.shutdown() }
        let port = app.port
        let accountToken = try #require(try send(port, "POST", "/v1/accounts", token: testAdminToken, body: #"{"name":"Fault"}"#)["accountToken"]?.stringValue)
        let hook = try send(port, "POST", "/v1/account/webhooks", token: accountToken,
                            body: #"{"url":"http://127.0.0.1:\#(receiver.port)/","events":["library.changed"]}"#)
        try #require(hook.status == 201, "\(hook.raw.body)")
        let device = try #require(try send(port, "POST", "/v1/devices", token: accountToken, body: #"{"name":"Phone"}"#)["deviceToken"]?.stringValue)
        receiver.answer.withLock { $0 = (500, "") }
        let write = try send(port, "POST", "/v1/library/changes", token: device,
                             body: #"{"assets":{"upsert":[{"localIdentifier":"a","fingerprint":"\#(fingerprint(1))"}]}}"#)
        let token = try #require(write["changeToken"]?.stringValue)
        try #require(receiver.wait { $0.type == "library.changed" }.count >= 1)

        let (stopped, stopOutput) = try self.control(["stop"], directory: clusterDirectory)
        try #require(stopped, "pg_ctl stop: \(stopOutput)")
        receiver.answer.withLock { $0 = (204, "") }
        let before = receiver.all.count
        usleep(4_000_000)   // the retry falls due while the database is down: nothing can be claimed
        #expect(receiver.all.count <= before + 1)
        let (started, startOutput) = try self.control(["start"], directory: clusterDirectory)
        try #require(started, "pg_ctl start: \(startOutput)")
        let delivered = receiver.wait(for: 2, seconds: 90) { $0.type == "library.changed" && $0.data?["changeToken"] as? String == token }
        #expect(delivered.count >= 2)
        // Every attempt before the stop was answered 500: a success is one made after the outage.
        let webhookID = try #require(hook["webhookID"]?.stringValue)
        // The outcome is recorded just after the receiver answers: look until it is.
        var succeeded = try send(port, "GET", "/v1/account/webhooks/\(webhookID)/deliveries?status=succeeded", token: accountToken)
        let until = Date().addingTimeInterval(30)
        while succeeded["deliveries"]?.arrayValue?.count != 1, Date() < until {
            usleep(50_000)
            succeeded = try send(port, "GET", "/v1/account/webhooks/\(webhookID)/deliveries?status=succeeded", token: accountToken)
        }
        #expect(succeeded["deliveries"]?.arrayValue?.count == 1, "\(succeeded.raw.body)")
    }

    @Test func postgresGoingAwayAnswers503ThenRecoversWithoutRestartAndLosesNothing() throws {
        let clusterDirectory = NSTemporaryDirectory() + "concord-fault-" + UUID().uuidString
        let (created, url) = try self.control(["init", clusterDirectory], directory: clusterDirectory)
        try #require(created, "cannot create a cluster: \(url)")
        defer { _ = try? self.control(["destroy"], directory: clusterDirectory) }

        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let app = try startApp(testServerConfiguration(.postgres(url: url)), sink: LogSink(flushInterval: 0, output: { _ in }))
        defer { app.shutdown() }
        let port = app.port

        let accountToken = try #require(try send(port, "POST", "/v1/accounts", token: testAdminToken, body: #"{"name":"Fault"}"#)["accountToken"]?.stringValue)
        let device = try #require(try send(port, "POST", "/v1/devices", token: accountToken, body: #"{"name":"Phone"}"#)["deviceToken"]?.stringValue)

        // A writer streams one new asset per request; every 200 is acknowledged, every 503 must
        // carry Retry-After, anything else is a failure.
        struct Stream { var acknowledged: [String] = []; var unavailable = 0; var failures: [String] = []; var stop = false }
        let stream = Mutex(Stream())
        let finished = DispatchSemaphore(value: 0)
        Thread {
            var k = 0
            while !stream.withLock({ $0.stop }) {
                let id = "fault-\(k)"
                do {
                    let r = try send(port, "POST", "/v1/library/changes", token: device,
                                     body: #"{"assets":{"upsert":[{"localIdentifier":"\#(id)","fingerprint":"\#(fingerprint(k))"}]}}"#)
                    switch r.status {
                    case 200: stream.withLock { $0.acknowledged.append(id) }; k += 1
                    case 503:
                        if r.raw.header("Retry-After") == nil || r.errorName != "unavailable" {
                            stream.withLock { $0.failures.append("503 without Retry-After/unavailable: \(r.raw.body)") }
                        }
                        stream.withLock { $0.unavailable += 1 }
                        usleep(20_000)
                    default: stream.withLock { $0.failures.append("status \(r.status): \(r.raw.body)") }
                    }
                } catch {
                    stream.withLock { $0.failures.append("request failed: \(error)") }
                }
            }
            finished.signal()
        }.start()
        defer { stream.withLock { $0.stop = true } }

        func waitFor(_ what: String, seconds: Double = 20, _ condition: () throws -> Bool) throws {
            let deadline = Date().addingTimeInterval(seconds)
            while try !condition() {
                guard Date() < deadline else { Issue.record("timed out waiting for \(what)"); return }
                usleep(20_000)
            }
        }
        try waitFor("writes before the stop") { stream.withLock { $0.acknowledged.count } >= 20 }

        let (stopped, stopOutput) = try self.control(["stop"], directory: clusterDirectory)
        try #require(stopped, "pg_ctl stop: \(stopOutput)")
        let ready = try send(port, "GET", "/ready", token: nil)
        #expect(ready.status == 503)
        let down = try send(port, "POST", "/v1/library/changes", token: device,
                            body: #"{"assets":{"upsert":[{"localIdentifier":"while-down","fingerprint":"\#(fingerprint(999_999))"}]}}"#)
        #expect(down.status == 503 && down.errorName == "unavailable" && down.raw.header("Retry-After") != nil, "\(down.status) \(down.raw.body)")
        try waitFor("503s from the writer") { stream.withLock { $0.unavailable } >= 3 }
        let ackedWhileDown = stream.withLock { $0.acknowledged.count }

        let (started, startOutput) = try self.control(["start"], directory: clusterDirectory)
        try #require(started, "pg_ctl start: \(startOutput)")
        try waitFor("/ready after the restart") { try send(port, "GET", "/ready", token: nil).status == 200 }
        try waitFor("writes after the restart") { stream.withLock { $0.acknowledged.count } >= ackedWhileDown + 20 }
        stream.withLock { $0.stop = true }
        #expect(finished.wait(timeout: .now() + 10) == .success)

        let result = stream.withLock { $0 }
        #expect(result.failures.isEmpty, "\(result.failures.prefix(3))")
        // Nothing acknowledged is lost: every acknowledged asset is in the library.
        var objects = Set<String>()
        var after: String?
        repeat {
            let page = try send(port, "GET", "/v1/library/objects?type=assets&limit=10000" + (after.map { "&after=" + percentEncoded($0) } ?? ""), token: device)
            #expect(page.status == 200)
            objects.formUnion(page["objects"]?.arrayValue?.compactMap { $0["localIdentifier"]?.stringValue } ?? [])
            after = page["next"]?.stringValue
        } while after != nil
        let lost = Set(result.acknowledged).subtracting(objects)
        #expect(lost.isEmpty, "lost: \(lost.sorted().prefix(5))")
        #expect(!objects.contains("while-down"))
    }
}

/// The mapping index stays exact across instances: each write goes through one `concord serve`
/// process and the very next mapping request through the other, whose index was loaded before the
/// write (the API does not change with several instances).
@Suite(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason + " (MappingIndexAcrossInstancesTests)")))
struct MappingIndexAcrossInstancesTests {
    /// With the default `mappingIndexInlineLoadObjects` each catch-up loads in the request; with 0,
    /// every one runs in the background and storage answers meanwhile: the same answers either way.
    @Test(arguments: [nil, 0] as [Int?]) func aWriteThroughOneInstanceIsSeenByTheNextMappingThroughTheOther(_ inlineLoadObjects: Int?) throws {
        let instances = try TwoInstances(environment: inlineLoadObjects.map { ["CONCORD_MAPPING_INDEX_INLINE_LOAD_OBJECTS": "\($0)"] } ?? [:])
        defer { withExtendedLifetime(instances) {} }   // the servers live until the test ends
        let (port1, port2) = (instances.port1, instances.port2)

        let (_, phone, tablet) = try instances.accountWithPhoneAndTablet()
        func change(_ port: Int, _ token: String, upsert: [(String, String)] = [], delete: [String] = []) throws {
            let items = upsert.map { #"{"localIdentifier":\#(json($0.0)),"fingerprint":"\#($0.1)"}"# }.joined(separator: ",")
            let deletes = delete.map { json($0) }.joined(separator: ",")
            let r = try send(port, "POST", "/v1/library/changes", token: token, body: #"{"assets":{"upsert":[\#(items)],"delete":[\#(deletes)]}}"#)
            try #require(r.status == 200, "\(r.raw.body)")
        }
        func map(_ port: Int, _ token: String, _ direction: String, _ ids: [String]) throws -> [JSONValue] {
            let key = direction == "cloud-identifiers" ? "localIdentifiers" : "cloudIdentifiers"
            let r = try send(port, "POST", "/v1/library/" + direction, token: token, body: #"{"\#(key)":[\#(ids.map { json($0) }.joined(separator: ","))]}"#)
            try #require(r.status == 200, "\(r.raw.body)")
            return r["mappings"]?.arrayValue ?? []
        }
        // Both instances load the account's index before the writes start.
        try change(port1, phone, upsert: [("phone-base", fingerprint(0))])
        try change(port2, tablet, upsert: [("tablet-base", fingerprint(0))])
        for port in [port1, port2] {
            _ = try map(port, phone, "cloud-identifiers", ["phone-base"])
            _ = try map(port, tablet, "cloud-identifiers", ["tablet-base"])
        }

        for i in 1...15 {
            let (writer, reader) = i % 2 == 0 ? (port1, port2) : (port2, port1)
            // A new object through one instance is mapped through the other at once.
            try change(writer, phone, upsert: [("phone-\(i)", fingerprint(i))])
            let cloud = try #require(try map(reader, phone, "cloud-identifiers", ["phone-\(i)"]).first?["cloudIdentifier"]?.stringValue, "step \(i)")
            // The other device's copy, uploaded through the reader, is found by content through the writer.
            try change(reader, tablet, upsert: [("tablet-\(i)", fingerprint(i))])
            #expect(try map(writer, tablet, "local-identifiers", [cloud]).first?["localIdentifier"]?.stringValue == "tablet-\(i)", "step \(i)")
            // A second copy on the tablet, through the writer: the reader now answers "several".
            try change(writer, tablet, upsert: [("tablet-\(i)-copy", fingerprint(i))])
            let links = try send(reader, "POST", "/v1/library/links", token: tablet, body: #"{"cloudIdentifier":"\#(cloud)","localIdentifier":"tablet-\#(i)-copy"}"#)
            #expect(links.status == 200, "step \(i): \(links.raw.body)")
            // The person's choice, stored through the reader, is what the writer answers next.
            #expect(try map(writer, tablet, "local-identifiers", [cloud]).first?["localIdentifier"]?.stringValue == "tablet-\(i)-copy", "step \(i)")
            // A deletion through one instance: the other no longer knows the object.
            try change(writer, phone, delete: ["phone-\(i)"])
            let gone = try map(reader, phone, "cloud-identifiers", ["phone-\(i)"]).first
            #expect(gone?["error"]?["name"]?.stringValue == "identifierNotFound", "step \(i): \(String(describing: gone))")
        }
        // Every read after the other instance wrote caught up with it from the mapping log, without
        // a reload (a stale index would have failed above).
        for port in [port1, port2] {
            let metrics = try rawRequest(port: port, "GET", "/metrics").body
            let value = { (name: String) -> Double in
                metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") } ?? -1
            }
            #expect(value("concord_mapping_index_log_catch_ups_total") > 5, "port \(port)")
            #expect(value("concord_mapping_index_catch_ups_total") == value("concord_mapping_index_log_catch_ups_total"), "port \(port)")
            if inlineLoadObjects == 0 {
                // The first load only ran off the request path.
                #expect(value("concord_mapping_index_deferred_loads_total") >= 1, "port \(port)")
                #expect(value("concord_mapping_index_loads_total") == 0, "port \(port)")
            } else {
                #expect(value("concord_mapping_index_loads_total") >= 1, "port \(port)")
            }
        }
    }
}

/// Two `concord serve` processes on one new PostgreSQL database, stopped (SIGTERM) and removed
/// when the value goes away.
final class TwoInstances {
    let database: TestDatabase
    let directory: URL
    let processes: [Process]
    let port1: Int
    let port2: Int

    init(environment: [String: String] = [:]) throws {
        self.database = try TestDatabase(.postgres, poolSize: 1)
        self.directory = makeTemporaryDirectory()
        let (one, port1) = try launchServer(database: self.database.url, directory: self.directory, log: "one.log", environment: environment)
        do {
            let (two, port2) = try launchServer(database: self.database.url, directory: self.directory, log: "two.log", environment: environment)
            self.processes = [one, two]
            self.port1 = port1
            self.port2 = port2
        } catch {
            kill(one.processIdentifier, SIGTERM)
            one.waitUntilExit()
            throw error
        }
    }

    /// Runs `body` with two fresh instances, kept running until it returns (they stop in `deinit`,
    /// which could otherwise come right after the last use of `instances`, say of its ports).
    static func run(_ body: (TwoInstances) throws -> Void) throws {
        let instances = try TwoInstances()
        try withExtendedLifetime(instances) { try body(instances) }
    }

    /// One account; its phone is made through instance one, its tablet through instance two.
    func accountWithPhoneAndTablet() throws -> (accountToken: String, phone: String, tablet: String) {
        let account = try send(self.port1, "POST", "/v1/accounts", token: testAdminToken, body: #"{"name":"Two"}"#)
        let accountToken = try #require(account["accountToken"]?.stringValue)
        let phone = try #require(try send(self.port1, "POST", "/v1/devices", token: accountToken, body: #"{"name":"Phone"}"#)["deviceToken"]?.stringValue)
        let tablet = try #require(try send(self.port2, "POST", "/v1/devices", token: accountToken, body: #"{"name":"Tablet"}"#)["deviceToken"]?.stringValue)
        return (accountToken, phone, tablet)
    }

    deinit {
        for p in self.processes { kill(p.processIdentifier, SIGTERM) }
        for p in self.processes { p.waitUntilExit() }
        try? FileManager.default.removeItem(at: self.directory)
    }
}
