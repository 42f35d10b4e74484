import ConcordDomain
import ConcordHTTP
import ConcordJSON
import ConcordObservability

/// Webhooks: the account's own under `/v1/account/webhooks` (account token), the server's under
/// `/v1/webhooks` (admin token; they hear every account's events). The same routes on both: a
/// webhook of the other scope, or of another account, is `404` like an unknown ID.
func webhookRoutes(_ app: AppContext) -> [Route] {
    let account = WebhookRouteScope(prefix: "/v1/account/webhooks", operationInfix: "") { method, pattern, operation, idempotent, handler in
        app.accountRoute(method, pattern, operation: operation, idempotent: idempotent) { request, accountID in
            try handler(request, .account(accountID))
        }
    }
    let server = WebhookRouteScope(prefix: "/v1/webhooks", operationInfix: "Server") { method, pattern, operation, idempotent, handler in
        app.adminRoute(method, pattern, operation: operation, idempotent: idempotent) { request, _ in try handler(request, .server) }
    }
    return webhookRoutes(app, account) + webhookRoutes(app, server)
}

/// How one scope's routes are declared: their path prefix, the word its operation names carry
/// (`createWebhook`, `createServerWebhook`), and the caller kind (through `declare`).
struct WebhookRouteScope {
    typealias Handler = @Sendable (RequestContext, WebhookOwner) throws -> HTTPResponse
    var prefix: String
    var operationInfix: String
    var declare: (_ method: String, _ pattern: String, _ operation: String, _ idempotent: Bool, _ handler: @escaping Handler) -> Route

    func route(_ method: String, _ suffix: String, _ operation: String, idempotent: Bool = false, _ handler: @escaping Handler) -> Route {
        self.declare(method, self.prefix + suffix, operation.replacingOccurrences(of: "Webhook", with: self.operationInfix + "Webhook"),
                     idempotent, handler)
    }
}

private func webhookRoutes(_ app: AppContext, _ scope: WebhookRouteScope) -> [Route] {
    let webhooks = app.service.webhooks
    return [
        scope.route("POST", "", "createWebhook", idempotent: true) { request, owner in
            let input = try WebhookBody.input(try request.jsonBody())
            let created = try refusedDestinationsAudited(app, request, owner, webhookID: nil, url: input.url) {
                try webhooks.create(owner, input, idempotency: request.idempotency)
            }
            app.audit("webhook created", request, webhookAuditFields(owner, created.view.webhook.webhookID, created.origin))
            return Codec.webhook(created.view, status: 201, secret: created.secret)
        },
        scope.route("GET", "", "listWebhooks") { _, owner in
            Codec.webhookList(try webhooks.list(owner))
        },
        scope.route("GET", "/{webhookID}", "getWebhook") { request, owner in
            Codec.webhook(try webhooks.get(owner, id: try request.pathParameter("webhookID")))
        },
        scope.route("PATCH", "/{webhookID}", "updateWebhook") { request, owner in
            let id = try request.pathParameter("webhookID")
            let patch = try WebhookBody.input(try request.jsonBody())
            let change = try refusedDestinationsAudited(app, request, owner, webhookID: id, url: patch.url) {
                try webhooks.update(owner, id: id, patch)
            }
            let fields = webhookAuditFields(owner, id, change.origin)
            app.audit("webhook updated", request, fields)
            if change.enabledNow { app.audit("webhook enabled", request, fields) }
            if change.disabledNow { app.audit("webhook disabled", request, fields.merging(["reason": "manual"])) }
            return Codec.webhook(change.view)
        },
        scope.route("DELETE", "/{webhookID}", "deleteWebhook") { request, owner in
            let id = try request.pathParameter("webhookID")
            let origin = try webhooks.delete(owner, id: id)
            app.audit("webhook deleted", request, webhookAuditFields(owner, id, origin))
            return .noContent
        },
        scope.route("POST", "/{webhookID}/rotate-secret", "rotateWebhookSecret", idempotent: true) { request, owner in
            let id = try request.pathParameter("webhookID")
            // `{}` is the usual body; an empty one means the same.
            let body = request.request.body.isEmpty ? JSONObject() : try request.jsonBody()
            let ttl = try WebhookBody.integer(body, "previousSecretTTLSeconds")
            let rotated = try webhooks.rotateSecret(owner, id: id, previousSecretTTLSeconds: ttl, idempotency: request.idempotency)
            app.audit("webhook secret rotated", request, webhookAuditFields(owner, id, rotated.origin))
            return Codec.rotatedSecret(rotated.secret, previousSecretExpiresAt: rotated.previousSecretExpiresAt)
        },
        scope.route("POST", "/{webhookID}/ping", "pingWebhook", idempotent: true) { request, owner in
            Codec.pingResult(try app.webhookPing(owner, id: try request.pathParameter("webhookID"), idempotency: request.idempotency))
        },
        scope.route("GET", "/{webhookID}/deliveries", "listWebhookDeliveries") { request, owner in
            let id = try request.pathParameter("webhookID")
            let page = try webhooks.deliveries(owner, id: id, status: request.query("status"), after: request.query("after"),
                                               limit: try Codec.intQuery(request, "limit"))
            return Codec.deliveryPage(page.deliveries, hasMore: page.hasMore)
        },
        scope.route("GET", "/{webhookID}/deliveries/{eventID}", "getWebhookDelivery") { request, owner in
            Codec.delivery(try webhooks.delivery(owner, id: try request.pathParameter("webhookID"), eventID: try request.pathParameter("eventID")))
        },
        scope.route("POST", "/{webhookID}/deliveries/{eventID}/redeliver", "redeliverWebhookEvent", idempotent: true) { request, owner in
            let view = try webhooks.redeliver(owner, id: try request.pathParameter("webhookID"), eventID: try request.pathParameter("eventID"),
                                              idempotency: request.idempotency)
            return Codec.delivery(view, status: 202)
        },
    ]
}

/// The audit fields of a webhook's line: its scope, account (if any), ID (if any) and destination
/// as `scheme://host:port` only — a URL's path and query may hold the relay's own credential.
private func webhookAuditFields(_ owner: WebhookOwner, _ webhookID: String?, _ origin: String) -> LogMetadata {
    var fields: LogMetadata = [:]
    switch owner {
    case .account(let accountID):
        fields["scope"] = "account"
        fields["accountID"] = .string(accountID)
    case .server:
        fields["scope"] = "server"
    }
    if let webhookID { fields["webhookID"] = .string(webhookID) }
    fields["origin"] = .string(origin)
    return fields
}

/// Runs `body`; a `forbiddenDestination` it throws is audited (with the reason and the URL's
/// origin) before it becomes the answer.
private func refusedDestinationsAudited<T>(_ app: AppContext, _ request: RequestContext, _ owner: WebhookOwner, webhookID: String?,
                                           url: String?, _ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch DomainError.forbiddenDestination(let reason) {
        let origin = url.map(WebhookService.origin(of:)) ?? "?"
        app.audit("webhook destination refused", request, webhookAuditFields(owner, webhookID, origin).merging(["reason": .string(reason)]))
        throw DomainError.forbiddenDestination(reason: reason)
    }
}

/// The members of a webhook's create or `PATCH` body. A `null` counts as absent (a merge patch
/// keeps the value); a wrong type is `400` naming the member; unknown members are ignored.
enum WebhookBody {
    static func input(_ body: JSONObject) throws(APIError) -> WebhookInput {
        WebhookInput(
            url: try Codec.string(body, "url", path: "url"),
            events: try Codec.stringArray(body, "events", path: "events"),
            description: try Codec.string(body, "description", path: "description"),
            enabled: try Codec.bool(body, "enabled", path: "enabled"),
            minIntervalSeconds: try Self.integer(body, "minIntervalSeconds"))
    }

    /// An integer member (a JSON number without a fraction, in `Int`'s range); nil when absent or null.
    static func integer(_ body: JSONObject, _ key: String) throws(APIError) -> Int? {
        switch body[key] {
        case .none, .null?: return nil
        case .number(let n)?:
            guard let i = Int(exactly: n) else { throw APIError.wrongType(key, "an integer") }
            return i
        default: throw APIError.wrongType(key, "an integer")
        }
    }
}
