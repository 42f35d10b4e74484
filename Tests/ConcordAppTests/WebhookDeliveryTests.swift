import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordApp

/// Webhooks end to end: a commit's event reaches a local receiver, signed, through the real server,
/// the real database and libcurl.
@Suite(.serialized) struct WebhookDeliveryTests {
    private func server(_ engine: TestEngine, _ configure: (inout Configuration) -> Void = { _ in }) throws -> APIServer {
        try APIServer(engine: engine) { c in
            c.webhooks.allowedHosts = ["127.0.0.1"]
            c.webhooks.settings.retrySchedule = [1, 1]
            configure(&c)
        }
    }

    @Test(arguments: TestEngine.available) func aLibraryWriteReachesTheReceiverSigned(_ engine: TestEngine) throws {
        let receiver = try LocalWebhookReceiver()
        defer { receiver.stop() }
        let server = try self.server(engine)
        let account = try server.account()
        let service = server.app.context.service
        let created = try service.webhooks.create(.account(account.id), WebhookInput(
            url: "http://127.0.0.1:\(receiver.port)/hook?key=relay", events: ["library.changed", "device.created"]))
        let device = try server.device(account.token)
        _ = try server.upsert(device.token, assets: [(assetID(1), fingerprint(1))])

        let library = receiver.wait { $0.type == "library.changed" }
        try #require(library.count == 1)
        let event = library[0]
        let id = try #require(event.headers["webhook-id"])
        let timestamp = try #require(event.headers["webhook-timestamp"].flatMap(Int.init))
        let signature = try #require(event.headers["webhook-signature"])
        let secret = try #require(WebhookSecret(parsing: created.secret))
        #expect(WebhookSigning.verify(header: signature, id: id, timestamp: timestamp, body: event.body, secrets: [secret],
                                      now: Int(Date().timeIntervalSince1970)))
        #expect(event.headers["content-type"] == "application/json")
        #expect(event.headers["user-agent"]?.hasPrefix("Concord/") == true)
        #expect(event.json?["id"] as? String == id)
        #expect(event.data?["deviceID"] as? String == device.id)
        let devices = try service.accounts.listDevices(accountID: account.id)
        #expect(event.data?["changeToken"] as? String == devices.first?.changeToken)
        #expect(receiver.wait { $0.type == "device.created" }.count == 1)

        // The log shows it delivered, with one attempt.
        let until = Date().addingTimeInterval(20)
        var delivered: DeliveryView? = nil
        while Date() < until {
            delivered = try service.webhooks.delivery(.account(account.id), id: created.view.webhook.webhookID, eventID: id)
            if delivered?.event.status == .succeeded { break }
            usleep(20_000)
        }
        #expect(delivered?.event.status == .succeeded)
        #expect(delivered?.attempts.count == 1 && delivered?.attempts.first?.responseStatus == 204)
    }

    @Test(arguments: TestEngine.available) func aFailingReceiverGetsRetriesAndGoneDisablesTheWebhook(_ engine: TestEngine) throws {
        let receiver = try LocalWebhookReceiver()
        defer { receiver.stop() }
        receiver.answer.withLock { $0 = (500, "") }
        let server = try self.server(engine)
        let account = try server.account()
        let service = server.app.context.service
        let created = try service.webhooks.create(.account(account.id), WebhookInput(url: "http://127.0.0.1:\(receiver.port)/", events: ["library.changed"]))
        let webhookID = created.view.webhook.webhookID
        let device = try server.device(account.token)
        _ = try server.upsert(device.token, assets: [(assetID(1), fingerprint(1))])
        // First attempt and a retry a second (plus jitter) later, same event ID.
        let attempts = receiver.wait(for: 2) { $0.type == "library.changed" }
        try #require(attempts.count >= 2)
        #expect(attempts[0].headers["webhook-id"] == attempts[1].headers["webhook-id"])
        #expect(attempts[0].body == attempts[1].body)

        receiver.answer.withLock { $0 = (410, "") }
        _ = try server.upsert(device.token, assets: [(assetID(1), fingerprint(1)), (assetID(2), fingerprint(2))])
        let until = Date().addingTimeInterval(20)
        var webhook = try service.webhooks.get(.account(account.id), id: webhookID)
        while Date() < until, webhook.webhook.enabled {
            usleep(50_000)
            webhook = try service.webhooks.get(.account(account.id), id: webhookID)
        }
        #expect(!webhook.webhook.enabled && webhook.webhook.disabledReason == .gone)
        #expect(webhook.webhook.consecutiveFailures >= 3)
    }
}
