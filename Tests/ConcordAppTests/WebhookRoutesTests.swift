import ConcordDomain
import ConcordJSON
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordApp

/// The webhook routes over a real socket, on both engines: both scopes, validation, quotas,
/// merge patches, deletion, the deliveries log, redelivery, idempotency and audit lines.
@Suite struct WebhookRoutesTests {
    static let accountHooks = "/v1/account/webhooks"
    static let serverHooks = "/v1/webhooks"

    @Test(arguments: TestEngine.available)
    func createAnswersTheWebhookAndItsSecretOnce(_ engine: TestEngine) throws {
        let server = try WebhookTestServer(engine: engine)
        let ana = try server.account("Ana")
        let created = try server.webhook(Self.accountHooks, token: ana.token, events: ["library.changed", "device.created"],
                                         extra: #","description":"relay","minIntervalSeconds":30,"unknown":[1]"#)
        let hook = try #require(created.json)
        let members = try #require(hook.objectValue?.members.map(\.key))
        #expect(members == ["webhookID", "scope", "url", "events", "description", "enabled", "disabledReason", "disabledAt", "minIntervalSeconds",
                            "createdAt", "updatedAt", "secretCreatedAt", "previousSecretExpiresAt", "consecutiveFailures", "lastSuccessAt",
                            "lastFailureAt", "pendingEvents", "secret"])
        #expect(hook["scope"] == .string("account"))
        #expect(hook["url"] == .string("https://relay.example/hook?key=relay-secret"))
        #expect(hook["events"] == .array([.string("library.changed"), .string("device.created")]))
        #expect(hook["description"] == .string("relay") && hook["enabled"] == .bool(true) && hook["minIntervalSeconds"] == .number(30))
        #expect(hook["disabledReason"] == .null && hook["disabledAt"] == .null && hook["previousSecretExpiresAt"] == .null)
        #expect(hook["lastSuccessAt"] == .null && hook["lastFailureAt"] == .null)
        #expect(hook["consecutiveFailures"] == .number(0) && hook["pendingEvents"] == .number(0))
        let createdAt = try #require(hook["createdAt"]?.stringValue)
        #expect(RFC3339.isValid(createdAt) && createdAt.hasSuffix("Z"))
        #expect(hook["secretCreatedAt"]?.stringValue == createdAt && hook["updatedAt"]?.stringValue == createdAt)
        let secret = try #require(hook["secret"]?.stringValue)
        #expect(secret.hasPrefix("whsec_") && Data(base64Encoded: String(secret.dropFirst(6)))?.count == 32)

        // Defaults; a webhook created disabled is disabled by hand.
        let plain = try #require(try server.webhook(Self.accountHooks, token: ana.token, extra: #","enabled":false"#).json)
        #expect(plain["description"] == .string("") && plain["minIntervalSeconds"] == .number(1))
        #expect(plain["enabled"] == .bool(false) && plain["disabledReason"] == .string("manual") && plain["disabledAt"]?.stringValue != nil)

        // The secret is shown only by create (and rotate).
        let id = try #require(hook["webhookID"]?.stringValue)
        let got = try server.call("GET", "\(Self.accountHooks)/\(id)", token: ana.token)
        #expect(got.status == 200 && got["secret"] == nil && got["webhookID"]?.stringValue == id)
        let list = try server.call("GET", Self.accountHooks, token: ana.token)
        #expect(list.status == 200 && !list.raw.body.contains("whsec_"))
        // Creation order.
        #expect(list["webhooks"]?.arrayValue?.map { $0["webhookID"]?.stringValue } == [id, plain["webhookID"]?.stringValue])

        // Server webhooks: the admin token, scope "server", account.deleted allowed.
        let serverHook = try #require(try server.webhook(Self.serverHooks, token: testAdminToken, events: ["account.deleted", "journals.changed"]).json)
        #expect(serverHook["scope"] == .string("server"))
        let serverList = try server.call("GET", Self.serverHooks, token: testAdminToken)
        #expect(serverList["webhooks"]?.arrayValue?.map { $0["webhookID"] } == [serverHook["webhookID"]])
        #expect(try server.call("GET", Self.accountHooks, token: ana.token)["webhooks"]?.arrayValue?.count == 2)
    }

    @Test(arguments: TestEngine.available)
    func everyBadMemberIsRefusedNamingItAndNothingIsStored(_ engine: TestEngine) throws {
        let server = try WebhookTestServer(engine: engine)
        let ana = try server.account()
        let url = #""url":"https://relay.example/hook""#
        let events = #""events":["library.changed"]"#
        let cases: [(body: String, field: String?)] = [
            (#"{\#(events)}"#, "url"),
            (#"{"url":null,\#(events)}"#, "url"),
            (#"{"url":5,\#(events)}"#, "url"),
            (#"{"url":"ftp://relay.example/x",\#(events)}"#, "url"),
            (#"{"url":"relay.example/hook",\#(events)}"#, "url"),
            (#"{"url":"https://user:pw@relay.example/hook",\#(events)}"#, "url"),
            (#"{"url":"https://relay.example/hook#top",\#(events)}"#, "url"),
            (#"{"url":\#(json("https://relay.example/" + String(repeating: "a", count: 2048))),\#(events)}"#, "url"),
            (#"{\#(url)}"#, "events"),
            (#"{\#(url),"events":"library.changed"}"#, "events"),
            (#"{\#(url),"events":[1]}"#, "events"),
            (#"{\#(url),"events":[]}"#, "events"),
            (#"{\#(url),"events":["library.changed","library.changed"]}"#, "events"),
            (#"{\#(url),"events":["library.changes"]}"#, "events"),
            (#"{\#(url),"events":["webhook.ping"]}"#, "events"),
            (#"{\#(url),"events":["account.deleted"]}"#, "events"),
            (#"{\#(url),"events":["library.changed","journals.changed","device.created","device.replaced","device.deleted","library.changed","x"]}"#, "events"),
            (#"{\#(url),\#(events),"description":5}"#, "description"),
            (#"{\#(url),\#(events),"description":\#(json(String(repeating: "d", count: 1025)))}"#, "description"),
            (#"{\#(url),\#(events),"enabled":"yes"}"#, "enabled"),
            (#"{\#(url),\#(events),"minIntervalSeconds":0}"#, "minIntervalSeconds"),
            (#"{\#(url),\#(events),"minIntervalSeconds":3601}"#, "minIntervalSeconds"),
            (#"{\#(url),\#(events),"minIntervalSeconds":1.5}"#, "minIntervalSeconds"),
            (#"{\#(url),\#(events),"minIntervalSeconds":"1"}"#, "minIntervalSeconds"),
            (#"{"url":"#, nil),
            (#"[1]"#, nil),
        ]
        for c in cases {
            let r = try server.call("POST", Self.accountHooks, token: ana.token, body: c.body)
            #expect(r.status == 400 && r.errorName == "badRequest", "\(c.body.prefix(120)): \(r.raw.body)")
            #expect(r.errorField == c.field, "\(c.body.prefix(120)): \(r.raw.body)")
        }
        let unknown = try server.call("POST", Self.accountHooks, token: ana.token, body: #"{\#(url),"events":["library.changes"]}"#)
        #expect(unknown.json?["error"]?["message"]?.stringValue?.contains("library.changes") == true)

        // Destinations that may not be called: 422 with the field and the reason.
        let refused: [(url: String, reason: String)] = [
            ("http://relay.example/hook", "insecureScheme"),
            ("http://10.0.0.1/hook?key=relay-secret", "forbiddenAddress"),
            ("https://relay.invalid/hook", "unresolvable"),
        ]
        for c in refused {
            let r = try server.call("POST", Self.accountHooks, token: ana.token, body: #"{"url":\#(json(c.url)),\#(events)}"#)
            #expect(r.status == 422 && r.errorName == "forbiddenDestination", "\(c.url): \(r.raw.body)")
            #expect(r.errorField == "url" && r.json?["error"]?["reason"]?.stringValue == c.reason, "\(c.url)")
        }
        #expect(try server.call("GET", Self.accountHooks, token: ana.token)["webhooks"] == .array([]))

        // Each refusal is audited with the destination's origin only, never its path or query.
        let audits = server.auditLines().filter { $0["msg"]?.stringValue == "webhook destination refused" }
        #expect(audits.count == 3)
        #expect(audits.compactMap { $0["origin"]?.stringValue } == ["http://relay.example:80", "http://10.0.0.1:80", "https://relay.invalid:443"])
        #expect(audits.allSatisfy { $0["scope"] == .string("account") && $0["accountID"]?.stringValue == ana.id && $0["webhookID"] == nil })
        #expect(audits.compactMap { $0["reason"]?.stringValue } == ["insecureScheme", "forbiddenAddress", "unresolvable"])
        #expect(audits.allSatisfy { $0["remoteAddress"]?.stringValue?.isEmpty == false })
        #expect(!server.auditLines().contains { "\($0)".contains("relay-secret") })

        // A server webhook may take account.deleted.
        let serverHook = try server.call("POST", Self.serverHooks, token: testAdminToken, body: #"{\#(url),"events":["account.deleted"]}"#)
        #expect(serverHook.status == 201)
    }

    @Test(arguments: TestEngine.available)
    func oneMoreThanTheQuotaIsRefusedAndNotStored(_ engine: TestEngine) throws {
        var settings = WebhookSettings()
        settings.webhooksPerAccount = 2
        settings.maxServerWebhooks = 1
        let server = try WebhookTestServer(engine: engine, settings: settings)
        let ana = try server.account()
        try server.webhook(Self.accountHooks, token: ana.token)
        try server.webhook(Self.accountHooks, token: ana.token)
        let third = try server.call("POST", Self.accountHooks, token: ana.token, body: #"{"url":"https://relay.example/3","events":["library.changed"]}"#)
        #expect(third.status == 403 && third.errorName == "quotaExceeded")
        #expect(third.json?["error"]?["quota"] == .string("webhooksPerAccount") && third.json?["error"]?["limit"] == .number(2))
        #expect(try server.call("GET", Self.accountHooks, token: ana.token)["webhooks"]?.arrayValue?.count == 2)
        // Another account has its own quota.
        let bob = try server.account("Bob")
        try server.webhook(Self.accountHooks, token: bob.token)

        try server.webhook(Self.serverHooks, token: testAdminToken)
        let second = try server.call("POST", Self.serverHooks, token: testAdminToken, body: #"{"url":"https://relay.example/s","events":["library.changed"]}"#)
        #expect(second.status == 403 && second.json?["error"]?["quota"] == .string("maxServerWebhooks") && second.json?["error"]?["limit"] == .number(1))
        #expect(try server.call("GET", Self.serverHooks, token: testAdminToken)["webhooks"]?.arrayValue?.count == 1)
    }

    @Test(arguments: TestEngine.available)
    func onlyTheOwnerSeesAWebhookAndDeviceTokensAreForbidden(_ engine: TestEngine) throws {
        let server = try WebhookTestServer(engine: engine)
        let ana = try server.account("Ana")
        let bob = try server.account("Bob")
        let phone = try server.device(ana.token)
        let anas = try #require(try server.webhook(Self.accountHooks, token: ana.token)["webhookID"]?.stringValue)
        let servers = try #require(try server.webhook(Self.serverHooks, token: testAdminToken)["webhookID"]?.stringValue)

        // Another account's webhook, the other scope's, and an unknown ID: the same 404.
        let notFound: [(String, String, String)] = [
            ("GET", "\(Self.accountHooks)/\(anas)", bob.token),
            ("PATCH", "\(Self.accountHooks)/\(anas)", bob.token),
            ("DELETE", "\(Self.accountHooks)/\(anas)", bob.token),
            ("POST", "\(Self.accountHooks)/\(anas)/rotate-secret", bob.token),
            ("GET", "\(Self.accountHooks)/\(anas)/deliveries", bob.token),
            ("GET", "\(Self.accountHooks)/\(servers)", ana.token),
            ("GET", "\(Self.serverHooks)/\(anas)", testAdminToken),
            ("DELETE", "\(Self.serverHooks)/\(anas)", testAdminToken),
            ("GET", "\(Self.accountHooks)/\(UUID().uuidString)", ana.token),
        ]
        for (method, target, token) in notFound {
            let body = ["POST", "PATCH"].contains(method) ? "{}" : nil
            let r = try server.call(method, target, token: token, body: body)
            #expect(r.status == 404 && r.errorName == "notFound", "\(method) \(target): \(r.raw.body)")
        }
        #expect(try server.call("GET", Self.accountHooks, token: bob.token)["webhooks"] == .array([]))

        // A device token on both prefixes, and a token of the other kind: 403.
        for (target, token) in [(Self.accountHooks, phone.token), (Self.serverHooks, phone.token), (Self.serverHooks, ana.token),
                                (Self.accountHooks, testAdminToken), ("\(Self.accountHooks)/\(anas)", phone.token),
                                ("\(Self.serverHooks)/\(servers)", phone.token)] {
            let r = try server.call("GET", target, token: token)
            #expect(r.status == 403 && r.errorName == "forbidden", "GET \(target)")
        }
        #expect(try server.call("POST", Self.accountHooks, token: phone.token, body: "{}").status == 403)
        #expect(try server.call("GET", Self.accountHooks, token: nil).status == 401)
        // Still there, untouched.
        #expect(try server.call("GET", "\(Self.accountHooks)/\(anas)", token: ana.token).status == 200)
    }

    @Test(arguments: TestEngine.available)
    func patchMergesAndARefusedPatchChangesNothing(_ engine: TestEngine) throws {
        let server = try WebhookTestServer(engine: engine)
        let ana = try server.account()
        let id = try #require(try server.webhook(Self.accountHooks, token: ana.token, extra: #","description":"first""#)["webhookID"]?.stringValue)
        let path = "\(Self.accountHooks)/\(id)"

        // Absent or null keeps a value; unknown members are ignored.
        let renamed = try server.call("PATCH", path, token: ana.token, body: #"{"description":"second","url":null,"events":null,"other":1}"#)
        #expect(renamed.status == 200 && renamed["description"] == .string("second"))
        #expect(renamed["url"] == .string("https://relay.example/hook?key=relay-secret") && renamed["events"] == .array([.string("library.changed")]))
        #expect(renamed["secret"] == nil)

        let changed = try server.call("PATCH", path, token: ana.token,
                                      body: #"{"url":"http://127.0.0.1:9/x","events":["device.created","device.deleted"],"minIntervalSeconds":60}"#)
        #expect(changed.status == 200 && changed["url"] == .string("http://127.0.0.1:9/x") && changed["minIntervalSeconds"] == .number(60))
        #expect(changed["events"] == .array([.string("device.created"), .string("device.deleted")]))

        let disabled = try server.call("PATCH", path, token: ana.token, body: #"{"enabled":false}"#)
        #expect(disabled["enabled"] == .bool(false) && disabled["disabledReason"] == .string("manual") && disabled["disabledAt"]?.stringValue != nil)
        let enabled = try server.call("PATCH", path, token: ana.token, body: #"{"enabled":true}"#)
        #expect(enabled["enabled"] == .bool(true) && enabled["disabledReason"] == .null && enabled["disabledAt"] == .null)

        // A refused patch changes nothing at all, even the members that were valid.
        let before = try server.call("GET", path, token: ana.token).json
        for body in [#"{"description":"third","minIntervalSeconds":0}"#, #"{"description":"third","events":[]}"#,
                     #"{"description":"third","enabled":"no"}"#, #"{"description":"third","url":"ftp://x"}"#] {
            let r = try server.call("PATCH", path, token: ana.token, body: body)
            #expect(r.status == 400, "\(body)")
        }
        let forbidden = try server.call("PATCH", path, token: ana.token, body: #"{"description":"third","url":"http://10.0.0.1/x?token=t"}"#)
        #expect(forbidden.status == 422 && forbidden.json?["error"]?["reason"] == .string("forbiddenAddress"))
        #expect(try server.call("GET", path, token: ana.token).json == before)

        // Audit: updated (with enabled/disabled), refused, never a path or query.
        let audits = server.auditLines()
        let names = audits.compactMap { $0["msg"]?.stringValue }.filter { $0.hasPrefix("webhook") }
        #expect(names == ["webhook created", "webhook updated", "webhook updated", "webhook updated", "webhook disabled", "webhook updated",
                          "webhook enabled", "webhook destination refused"])
        let disabledLine = try #require(audits.first { $0["msg"]?.stringValue == "webhook disabled" })
        #expect(disabledLine["reason"] == .string("manual") && disabledLine["webhookID"]?.stringValue == id && disabledLine["origin"] == .string("http://127.0.0.1:9"))
        let refusedLine = try #require(audits.first { $0["msg"]?.stringValue == "webhook destination refused" })
        #expect(refusedLine["webhookID"]?.stringValue == id && refusedLine["origin"] == .string("http://10.0.0.1:80"))
        #expect(!audits.contains { "\($0)".contains("token=t") || "\($0)".contains("relay-secret") || "\($0)".contains("whsec_") })
    }

    @Test(arguments: TestEngine.available)
    func deleteAndRotate(_ engine: TestEngine) throws {
        let server = try WebhookTestServer(engine: engine)
        let ana = try server.account()
        let created = try server.webhook(Self.accountHooks, token: ana.token)
        let id = try #require(created["webhookID"]?.stringValue)
        let path = "\(Self.accountHooks)/\(id)"

        let rotated = try server.call("POST", "\(path)/rotate-secret", token: ana.token, body: "{}")
        #expect(rotated.status == 200)
        #expect(rotated.json?.objectValue?.members.map(\.key) == ["secret", "previousSecretExpiresAt"])
        let secret = try #require(rotated["secret"]?.stringValue)
        #expect(secret.hasPrefix("whsec_") && secret != created["secret"]?.stringValue)
        let expires = try #require(rotated["previousSecretExpiresAt"]?.stringValue)
        #expect(try server.call("GET", path, token: ana.token)["previousSecretExpiresAt"]?.stringValue == expires)
        // An empty body is `{}`; a TTL of 0 keeps no previous secret.
        #expect(try server.call("POST", "\(path)/rotate-secret", token: ana.token, body: "").status == 200)
        let immediate = try server.call("POST", "\(path)/rotate-secret", token: ana.token, body: #"{"previousSecretTTLSeconds":0}"#)
        #expect(immediate.status == 200 && immediate["previousSecretExpiresAt"] == .null)
        #expect(try server.call("GET", path, token: ana.token)["previousSecretExpiresAt"] == .null)
        for body in [#"{"previousSecretTTLSeconds":-1}"#, #"{"previousSecretTTLSeconds":604801}"#, #"{"previousSecretTTLSeconds":"1"}"#] {
            let r = try server.call("POST", "\(path)/rotate-secret", token: ana.token, body: body)
            #expect(r.status == 400 && r.errorField == "previousSecretTTLSeconds", "\(body)")
        }

        let deleted = try server.call("DELETE", path, token: ana.token)
        #expect(deleted.status == 204 && deleted.raw.body.isEmpty)
        #expect(try server.call("GET", path, token: ana.token).status == 404)
        #expect(try server.call("DELETE", path, token: ana.token).status == 404)
        #expect(try server.call("GET", Self.accountHooks, token: ana.token)["webhooks"] == .array([]))

        let audits = server.auditLines().filter { ($0["msg"]?.stringValue ?? "").hasPrefix("webhook") }
        #expect(audits.compactMap { $0["msg"]?.stringValue } == ["webhook created", "webhook secret rotated", "webhook secret rotated",
                                                                  "webhook secret rotated", "webhook deleted"])
        #expect(audits.allSatisfy { $0["origin"] == .string("https://relay.example:443") && $0["scope"] == .string("account") })
        #expect(audits.allSatisfy { $0["accountID"]?.stringValue == ana.id && $0["webhookID"]?.stringValue == id })
        #expect(!audits.contains { "\($0)".contains("whsec_") })
    }

    @Test(arguments: TestEngine.available)
    func answersWithASecretAreNeverReplayed(_ engine: TestEngine) throws {
        let server = try WebhookTestServer(engine: engine)
        let ana = try server.account()
        let body = #"{"url":"https://relay.example/hook","events":["library.changed"]}"#
        let first = try server.call("POST", Self.accountHooks, token: ana.token, body: body, headers: ["Idempotency-Key: create-1"])
        #expect(first.status == 201)
        let id = try #require(first["webhookID"]?.stringValue)
        let again = try server.call("POST", Self.accountHooks, token: ana.token, body: body, headers: ["Idempotency-Key: create-1"])
        #expect(again.status == 409 && again.errorName == "idempotencyKeyAnswerLost" && again.raw.header("Idempotent-Replayed") == "true")
        #expect(again.json?["error"]?["reason"] == .string("secretNotKept") && again.json?["error"]?["status"] == .number(201))
        #expect(again.json?["error"]?["webhookID"] == .string(id) && !again.raw.body.contains("whsec_"))
        #expect(try server.call("GET", Self.accountHooks, token: ana.token)["webhooks"]?.arrayValue?.count == 1)

        let rotate = "\(Self.accountHooks)/\(id)/rotate-secret"
        #expect(try server.call("POST", rotate, token: ana.token, body: "{}", headers: ["Idempotency-Key: rotate-1"]).status == 200)
        let resent = try server.call("POST", rotate, token: ana.token, body: "{}", headers: ["Idempotency-Key: rotate-1"])
        #expect(resent.status == 409 && resent.json?["error"]?["reason"] == .string("secretNotKept"))
        #expect(resent.json?["error"]?["status"] == .number(200) && resent.json?["error"]?["webhookID"] == .string(id))

        // An answer without a secret is replayed as it was.
        let unknownEvent = "\(Self.accountHooks)/\(id)/deliveries/\(UUID().uuidString)/redeliver"
        let missing = try server.call("POST", unknownEvent, token: ana.token, body: "{}", headers: ["Idempotency-Key: redeliver-1"])
        let replay = try server.call("POST", unknownEvent, token: ana.token, body: "{}", headers: ["Idempotency-Key: redeliver-1"])
        #expect(missing.status == 404 && replay.status == 404 && replay.raw.header("Idempotent-Replayed") == "true")
    }

    @Test(arguments: TestEngine.available)
    func deliveriesAreListedNewestFirstInPages(_ engine: TestEngine) throws {
        let server = try WebhookTestServer(engine: engine)
        let ana = try server.account()
        let hook = try server.webhook(Self.accountHooks, token: ana.token, events: ["device.created"])
        let id = try #require(hook["webhookID"]?.stringValue)
        let deliveries = "\(Self.accountHooks)/\(id)/deliveries"
        // Device events are never coalesced: one pending event per device (no engine delivers them here).
        var devices: [String] = []
        for n in 0..<5 { devices.append(try server.device(ana.token, "Device \(n)").id) }
        #expect(try server.call("GET", "\(Self.accountHooks)/\(id)", token: ana.token)["pendingEvents"] == .number(5))

        let all = try server.call("GET", deliveries, token: ana.token)
        #expect(all.status == 200 && all["hasMore"] == .bool(false))
        let items = try #require(all["deliveries"]?.arrayValue)
        #expect(items.count == 5)
        // Newest first: the last device's event leads.
        #expect(items.map { $0["payload"]?["data"]?["deviceID"]?.stringValue } == devices.reversed().map { Optional($0) })
        let first = items[0]
        #expect(first.objectValue?.members.map(\.key) == ["eventID", "type", "status", "createdAt", "payload", "attempts", "nextAttemptAt", "supersededBy"])
        #expect(first["type"] == .string("device.created") && first["status"] == .string("pending") && first["attempts"] == .array([]))
        #expect(first["supersededBy"] == .null && first["nextAttemptAt"]?.stringValue != nil)
        let eventID = try #require(first["eventID"]?.stringValue)
        #expect(first["payload"]?["id"]?.stringValue == eventID && first["payload"]?["type"] == .string("device.created"))
        #expect(first["payload"]?["data"]?["accountID"]?.stringValue == ana.id)

        // Pages: `after` is the last eventID of the previous page.
        var seen: [String] = []
        var after: String?
        var pages = 0
        repeat {
            let page = try server.call("GET", deliveries + "?limit=2" + (after.map { "&after=\($0)" } ?? ""), token: ana.token)
            #expect(page.status == 200, "\(page.raw.body)")
            let ids = page["deliveries"]?.arrayValue?.compactMap { $0["eventID"]?.stringValue } ?? []
            seen += ids
            after = ids.last
            pages += 1
            if page["hasMore"] != .bool(true) { break }
        } while pages < 10
        #expect(pages == 3 && seen == items.compactMap { $0["eventID"]?.stringValue })

        // Filters.
        #expect(try server.call("GET", deliveries + "?status=pending", token: ana.token)["deliveries"]?.arrayValue?.count == 5)
        #expect(try server.call("GET", deliveries + "?status=succeeded", token: ana.token)["deliveries"] == .array([]))

        // One delivery.
        let one = try server.call("GET", "\(deliveries)/\(eventID)", token: ana.token)
        #expect(one.status == 200 && one.json == first)
        #expect(try server.call("GET", "\(deliveries)/\(UUID().uuidString)", token: ana.token).status == 404)

        // Bad queries name the parameter.
        let bad: [(String, String)] = [
            ("?status=done", "status"), ("?status=", "status"), ("?limit=0", "limit"), ("?limit=1001", "limit"), ("?limit=x", "limit"),
            ("?after=\(UUID().uuidString)", "after"),
            // An event of the list, but not of the list as filtered.
            ("?status=succeeded&after=\(eventID)", "after"),
        ]
        for (query, field) in bad {
            let r = try server.call("GET", deliveries + query, token: ana.token)
            #expect(r.status == 400 && r.errorField == field, "\(query): \(r.raw.body)")
        }
        // Another webhook's event is not in this one's log.
        let other = try #require(try server.webhook(Self.accountHooks, token: ana.token)["webhookID"]?.stringValue)
        #expect(try server.call("GET", "\(Self.accountHooks)/\(other)/deliveries/\(eventID)", token: ana.token).status == 404)
        #expect(try server.call("GET", "\(Self.accountHooks)/\(other)/deliveries?after=\(eventID)", token: ana.token).errorField == "after")
    }

    @Test(arguments: TestEngine.available)
    func redeliveryMakesAnEventDueAndIsRefusedWhileDisabled(_ engine: TestEngine) throws {
        let server = try WebhookTestServer(engine: engine)
        let ana = try server.account()
        let id = try #require(try server.webhook(Self.accountHooks, token: ana.token, events: ["device.created"])["webhookID"]?.stringValue)
        _ = try server.device(ana.token)
        let deliveries = "\(Self.accountHooks)/\(id)/deliveries"
        let eventID = try #require(try server.call("GET", deliveries, token: ana.token)["deliveries"]?[0]?["eventID"]?.stringValue)

        let redelivered = try server.call("POST", "\(deliveries)/\(eventID)/redeliver", token: ana.token, body: "{}")
        #expect(redelivered.status == 202 && redelivered["eventID"]?.stringValue == eventID && redelivered["status"] == .string("pending"))
        #expect(redelivered["nextAttemptAt"]?.stringValue != nil)
        #expect(try server.call("POST", "\(deliveries)/\(UUID().uuidString)/redeliver", token: ana.token, body: "{}").status == 404)

        #expect(try server.call("PATCH", "\(Self.accountHooks)/\(id)", token: ana.token, body: #"{"enabled":false}"#).status == 200)
        // Held: nothing is attempted, so no next attempt.
        #expect(try server.call("GET", "\(deliveries)/\(eventID)", token: ana.token)["nextAttemptAt"] == .null)
        let refused = try server.call("POST", "\(deliveries)/\(eventID)/redeliver", token: ana.token, body: "{}")
        #expect(refused.status == 409 && refused.errorName == "webhookDisabled")
    }

    @Test func patchIsMethodNotAllowedOnEveryOtherRoute() throws {
        let server = try WebhookTestServer()
        let ana = try server.account()
        for (path, allow) in [("/v1/devices", "GET, HEAD, OPTIONS, POST"), ("/v1/account/webhooks", "GET, HEAD, OPTIONS, POST"),
                              ("/v1/webhooks/x/deliveries", "GET, HEAD, OPTIONS"), ("/health", "GET, HEAD, OPTIONS")] {
            let r = try server.call("PATCH", path, token: ana.token, body: "{}")
            #expect(r.status == 405 && r.errorName == "methodNotAllowed", "\(path)")
            #expect(r.raw.header("Allow") == allow, "\(path)")
        }
        let options = try rawRequest(port: server.port, "OPTIONS", "/v1/account/webhooks/x")
        #expect(options.header("Allow") == "DELETE, GET, HEAD, OPTIONS, PATCH")
    }
}

/// The webhook errors of the domain as answers: status, name, details, and `Retry-After` for a ping too soon.
@Test(arguments: [
    (DomainError.forbiddenDestination(reason: "forbiddenAddress"), 422, #""name":"forbiddenDestination""#, #""field":"url","reason":"forbiddenAddress"}}"#, nil),
    (DomainError.eventSuperseded(supersededBy: "E2"), 409, #""name":"eventSuperseded""#, #""supersededBy":"E2"}}"#, nil),
    (DomainError.webhookDisabled, 409, #""name":"webhookDisabled""#, #""}}"#, nil),
    (DomainError.tooManyRequests(retryAfter: 1), 429, #""name":"tooManyRequests""#, #""}}"#, "1"),
    (DomainError.tooManyRequests(retryAfter: 7), 429, #""name":"tooManyRequests""#, #""}}"#, "7"),
] as [(DomainError, Int, String, String, String?)])
func webhookDomainErrorsRenderWithTheirDetails(_ error: DomainError, _ status: Int, _ name: String, _ ending: String, _ retryAfter: String?) {
    let response = APIError(error).response
    let body = String(decoding: response.body, as: UTF8.self)
    #expect(response.status == status)
    #expect(body.hasPrefix(#"{"error":{"# + name + #","message":"#), "\(body)")
    #expect(body.hasSuffix(ending), "\(body)")
    #expect(response.headers[first: "Retry-After"] == retryAfter)
}
