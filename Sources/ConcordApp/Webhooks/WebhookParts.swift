import Synchronization
import ConcordDomain
import ConcordOutbound

/// The destination rules of `webhooks.allowedHosts`, as the domain asks for them on create and update:
/// the URL's form (`400`), then its scheme and every address its host resolves to (`422`).
struct PolicyDestinations: WebhookDestinationChecking {
    let policy: DestinationPolicy
    /// Resolving on create and update is bounded by this many seconds.
    var resolveSeconds = 5.0

    func check(url: String) -> WebhookDestinationVerdict {
        switch self.policy.validateURL(url) {
        case .invalid(let message): return .invalid(message: message)
        case .insecureScheme: return .forbidden(reason: "insecureScheme", origin: WebhookService.origin(of: url))
        case .ok(let parsed):
            switch self.policy.checkResolved(host: parsed.host, timeout: self.resolveSeconds) {
            case .ok: return .allowed(origin: parsed.origin)
            case .unresolvable: return .forbidden(reason: "unresolvable", origin: parsed.origin)
            case .forbiddenAddress: return .forbidden(reason: "forbiddenAddress", origin: parsed.origin)
            }
        }
    }
}

/// Webhook secrets sealed under this instance's webhook key.
struct KeyedWebhookSecrets: WebhookSecretKeeping {
    let key: WebhookKey

    var keyID: String { self.key.keyID }

    func newSecret() -> String { WebhookSecret.generate().text }

    func seal(_ secret: String, webhookID: String, serial: Int64) -> [UInt8] {
        guard let parsed = WebhookSecret(parsing: secret) else { preconditionFailure("a generated secret parses") }
        return WebhookSecretSealing.seal(parsed, webhookID: webhookID, serial: serial, key: self.key).encoded
    }

    func open(_ sealed: [UInt8], webhookID: String, serial: Int64) -> String? {
        guard let secret = try? WebhookSecretSealing.open(encoded: sealed, webhookID: webhookID, key: self.key) else { return nil }
        return secret.text
    }
}

/// Hands the engine's wake-up to the service, which is built before the engine is.
final class WebhookWakeRelay: Sendable {
    private let target = Mutex<(@Sendable () -> Void)?>(nil)
    func set(_ wake: @escaping @Sendable () -> Void) { self.target.withLock { $0 = wake } }
    func fire() { self.target.withLock { $0 }?() }
}
