#if canImport(Glibc)
import Glibc
#endif
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordApp

/// Webhooks across crashes and instances, with the built `concord` binary: an acknowledged write's
/// event survives `kill -9` (in the middle of an attempt, and of the commits after it), and
/// instances sharing one PostgreSQL database deliver each event once.
@Suite(.serialized) struct WebhookCrashTests {
    /// Creates an account webhook through the API; answers its ID.
    private func createWebhook(_ port: Int, _ accountToken: String, url: String, events: [String]) throws -> String {
        let body = #"{"url":\#(json(url)),"events":\#(jsonArray(events))}"#
        let r = try send(port, "POST", "/v1/account/webhooks", token: accountToken, body: body)
        try #require(r.status == 201, "\(r.raw.body)")
        return try #require(r["webhookID"]?.stringValue)
    }

    private func change(_ n: Int) -> String {
        #"{"assets":{"upsert":[{"localIdentifier":"crash-\#(n)/L0/001","fingerprint":"\#(fingerprint(n))"}]}}"#
    }

    @Test func anAcknowledgedWritesEventSurvivesKill9DuringAnAttempt() throws {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let receiver = try LocalWebhookReceiver()
        defer { receiver.stop() }
        receiver.answer.withLock { $0 = (0, "") }   // the first attempt hangs
        let database = "sqlite:" + directory.appendingPathComponent("hooks.sqlite").path
        let settings = ["CONCORD_WEBHOOKS_ALLOWED_HOSTS": "127.0.0.1", "CONCORD_WEBHOOKS_TIMEOUT_SECONDS": "30",
                        "CONCORD_WEBHOOKS_LEASE_SECONDS": "60"]
        let (first, port1) = try launchServer(database: database, directory: directory, log: "first.log", environment: settings)
        defer { if first.isRunning { kill(first.processIdentifier, SIGKILL) } }

        let account = try send(port1, "POST", "/v1/accounts", token: testAdminToken, body: #"{"name":"Crash"}"#)
        let accountToken = try #require(account["accountToken"]?.stringValue)
        let webhookID = try self.createWebhook(port1, accountToken, url: "http://127.0.0.1:\(receiver.port)/hook", events: ["library.changed"])
        let device = try send(port1, "POST", "/v1/devices", token: accountToken, body: #"{"name":"Phone"}"#)
        let deviceToken = try #require(device["deviceToken"]?.stringValue)
        let one = try send(port1, "POST", "/v1/library/changes", token: deviceToken, body: self.change(1))
        try #require(one.status == 200)
        // The first attempt is in flight (the receiver holds it); a second write commits meanwhile.
        try #require(receiver.wait { $0.type == "library.changed" }.count == 1)
        let two = try send(port1, "POST", "/v1/library/changes", token: deviceToken, body: self.change(2))
        let lastToken = try #require(two["changeToken"]?.stringValue)
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()

        receiver.answer.withLock { $0 = (204, "") }
        let (second, port2) = try launchServer(database: database, directory: directory, log: "second.log", environment: settings)
        defer { kill(second.processIdentifier, SIGTERM); second.waitUntilExit() }
        // The acknowledged write's event arrives after the restart, carrying the last token.
        let delivered = receiver.wait { $0.type == "library.changed" && $0.data?["changeToken"] as? String == lastToken }
        #expect(delivered.count >= 1)
        // The attempt the crash cut short is in the log as interrupted.
        var interrupted = false
        let until = Date().addingTimeInterval(20)
        while Date() < until, !interrupted {
            let log = try send(port2, "GET", "/v1/account/webhooks/\(webhookID)/deliveries", token: accountToken)
            let attempts = log["deliveries"]?.arrayValue?.flatMap { $0["attempts"]?.arrayValue ?? [] } ?? []
            interrupted = attempts.contains { $0["error"]?.stringValue == "interrupted" }
            if !interrupted { usleep(50_000) }
        }
        #expect(interrupted)
    }

    @Test(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason)))
    func twoInstancesOnOnePostgresDeliverEachEventOnce() throws {
        let receiver = try LocalWebhookReceiver()
        defer { receiver.stop() }
        let key = String(repeating: "ab", count: 32)
        let instances = try TwoInstances(environment: ["CONCORD_WEBHOOKS_ALLOWED_HOSTS": "127.0.0.1", "CONCORD_WEBHOOKS_SECRET_KEY": key])
        defer { withExtendedLifetime(instances) {} }
        let ports = [instances.port1, instances.port2]
        let account = try send(ports[0], "POST", "/v1/accounts", token: testAdminToken, body: #"{"name":"Two"}"#)
        let accountToken = try #require(account["accountToken"]?.stringValue)
        _ = try self.createWebhook(ports[1], accountToken, url: "http://127.0.0.1:\(receiver.port)/", events: ["device.created", "library.changed"])
        var devices: [String] = []
        for i in 0..<8 {
            let d = try send(ports[i % 2], "POST", "/v1/devices", token: accountToken, body: #"{"name":"D\#(i)"}"#)
            devices.append(try #require(d["deviceID"]?.stringValue))
            let token = try #require(d["deviceToken"]?.stringValue)
            let r = try send(ports[(i + 1) % 2], "POST", "/v1/library/changes", token: token, body: self.change(i))
            try #require(r.status == 200)
        }
        let created = receiver.wait(for: 8) { $0.type == "device.created" }
        let changed = receiver.wait(for: 8) { $0.type == "library.changed" }
        // Device events in commit order; one library event per device; no event twice.
        #expect(created.compactMap { $0.data?["deviceID"] as? String } == devices)
        #expect(Set(changed.compactMap { $0.data?["deviceID"] as? String }) == Set(devices))
        usleep(1_500_000)
        let ids = receiver.all.compactMap { $0.headers["webhook-id"] }
        #expect(ids.count == Set(ids).count && ids.count == 16, "\(ids.count) deliveries")
    }
}
