import ConcordDomain
import ConcordHTTP
import ConcordJSON
import Foundation

/// Answers of the webhook routes: the webhook, its deliveries, a new secret, a ping's outcome.
/// Times are RFC 3339 UTC, `null` where they do not exist; a secret only where one is issued.
extension Codec {
    /// The webhook object, every member always present; `secret` only in the answers to create
    /// and rotate (shown once).
    static func write(_ view: WebhookView, secret: String? = nil, into w: inout JSONWriter) {
        let hook = view.webhook
        w.beginObject()
        w.key("webhookID"); w.string(hook.webhookID)
        w.key("scope"); w.string(hook.scope.rawValue)
        w.key("url"); w.string(hook.url)
        w.key("events"); self.strings(hook.events.map(\.rawValue), &w)
        w.key("description"); w.string(hook.description)
        w.key("enabled"); w.bool(hook.enabled)
        w.key("disabledReason"); self.optional(hook.disabledReason?.rawValue, &w)
        w.key("disabledAt"); self.time(hook.disabledAt, &w)
        w.key("minIntervalSeconds"); w.int(hook.minIntervalSeconds)
        w.key("createdAt"); self.time(hook.createdAt, &w)
        w.key("updatedAt"); self.time(hook.updatedAt, &w)
        w.key("secretCreatedAt"); self.time(hook.secret.createdAt, &w)
        w.key("previousSecretExpiresAt"); self.time(view.previousSecretExpiresAt, &w)
        w.key("consecutiveFailures"); w.int(hook.consecutiveFailures)
        w.key("lastSuccessAt"); self.time(hook.lastSuccessAt, &w)
        w.key("lastFailureAt"); self.time(hook.lastFailureAt, &w)
        w.key("pendingEvents"); w.int(view.pendingEvents)
        if let secret { w.key("secret"); w.string(secret) }
        w.endObject()
    }

    /// One webhook as the whole answer.
    static func webhook(_ view: WebhookView, status: Int = 200, secret: String? = nil) -> HTTPResponse {
        self.json(status: status, capacity: 1024) { w in self.write(view, secret: secret, into: &w) }
    }

    /// `{"webhooks":[...]}`.
    static func webhookList(_ views: [WebhookView]) -> HTTPResponse {
        self.list("webhooks", views, bytesEach: 768, write: { self.write($0, into: &$1) })
    }

    /// `{"secret","previousSecretExpiresAt"}`: the answer to `rotate-secret`.
    static func rotatedSecret(_ secret: String, previousSecretExpiresAt: Double?) -> HTTPResponse {
        self.json { w in
            w.beginObject()
            w.key("secret"); w.string(secret)
            w.key("previousSecretExpiresAt"); self.time(previousSecretExpiresAt, &w)
            w.endObject()
        }
    }

    /// `{"eventID","succeeded","responseStatus","durationMs","error"}`: a ping's one attempt.
    static func pingResult(_ result: WebhookPingResult) -> HTTPResponse {
        self.json { w in
            w.beginObject()
            w.key("eventID"); w.string(result.eventID)
            w.key("succeeded"); w.bool(result.succeeded)
            w.key("responseStatus"); self.optional(result.responseStatus, &w)
            w.key("durationMs"); w.int(result.durationMs)
            w.key("error"); self.optional(result.error, &w)
            w.endObject()
        }
    }

    /// One delivery of the log: the event, its body as a JSON object (`payload`), its attempts in
    /// order, and when it is next attempted (`null` unless pending on an enabled webhook).
    static func write(_ delivery: DeliveryView, into w: inout JSONWriter) {
        let event = delivery.event
        w.beginObject()
        w.key("eventID"); w.string(event.eventID)
        w.key("type"); w.string(event.type.rawValue)
        w.key("status"); w.string(event.status.rawValue)
        w.key("createdAt"); self.time(event.createdAt, &w)
        w.key("payload")
        // The exact bytes sent (compact JSON the domain wrote), embedded as the object they are.
        if let payload = try? JSONValue.parse(event.body) { w.value(payload) } else { w.null() }
        w.key("attempts")
        w.beginArray()
        for attempt in delivery.attempts {
            w.beginObject()
            w.key("attemptedAt"); self.time(attempt.attemptedAt, &w)
            w.key("durationMs"); w.int(attempt.durationMs)
            w.key("responseStatus"); self.optional(attempt.responseStatus, &w)
            w.key("error"); self.optional(attempt.error, &w)
            w.endObject()
        }
        w.endArray()
        w.key("nextAttemptAt"); self.time(delivery.nextAttemptAt, &w)
        w.key("supersededBy"); self.optional(event.supersededBy, &w)
        w.endObject()
    }

    /// One delivery as the whole answer (`status` 202 for a redelivery).
    static func delivery(_ delivery: DeliveryView, status: Int = 200) -> HTTPResponse {
        self.json(status: status, capacity: 1024) { w in self.write(delivery, into: &w) }
    }

    /// `{"deliveries":[...],"hasMore"}`, newest first.
    static func deliveryPage(_ deliveries: [DeliveryView], hasMore: Bool) -> HTTPResponse {
        self.list("deliveries", deliveries, bytesEach: 1024, write: { self.write($0, into: &$1) }) { w in
            w.key("hasMore"); w.bool(hasMore)
        }
    }

    /// A stored time (Unix seconds) as RFC 3339 UTC, or `null`.
    static func time(_ seconds: Double?, _ w: inout JSONWriter) {
        if let seconds { w.string(RFC3339.format(Date(timeIntervalSince1970: seconds))) } else { w.null() }
    }

    static func optional(_ value: Int?, _ w: inout JSONWriter) {
        if let value { w.int(value) } else { w.null() }
    }
}
