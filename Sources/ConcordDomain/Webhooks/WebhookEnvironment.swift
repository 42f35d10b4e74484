
/// What a webhook URL's destination turned out to be (checked by the app: resolving is I/O).
public enum WebhookDestinationVerdict: Sendable, Equatable {
    /// Allowed; `origin` is `scheme://host:port`, for audit lines.
    case allowed(origin: String)
    /// The URL breaks a rule of the `url` member (the message says which).
    case invalid(message: String)
    /// `reason`: `insecureScheme`, `unresolvable` or `forbiddenAddress`.
    case forbidden(reason: String, origin: String)
}

/// Checks a webhook URL on create and update: its form, its scheme and every address it resolves to.
public protocol WebhookDestinationChecking: Sendable {
    func check(url: String) -> WebhookDestinationVerdict
}

/// Seals webhook secrets under the webhook key, and opens them to sign.
public protocol WebhookSecretKeeping: Sendable {
    /// The ID of the key this instance has.
    var keyID: String { get }
    /// A new secret (`whsec_…`).
    func newSecret() -> String
    func seal(_ secret: String, webhookID: String, serial: Int64) -> [UInt8]
    /// nil when the bytes were not sealed under this key, or were altered.
    func open(_ sealed: [UInt8], webhookID: String, serial: Int64) -> String?
}

/// The app's parts the webhook service needs: destination checks, secret sealing, and a wake-up
/// for the delivery engine after a commit that queued events.
public struct WebhookEnvironment: Sendable {
    public var destinations: any WebhookDestinationChecking
    public var secrets: any WebhookSecretKeeping
    public var settings: WebhookSettings
    public var wake: @Sendable () -> Void
    /// Told of each event that took a newer change in place or was superseded by one (a metric).
    public var coalesced: @Sendable () -> Void

    public init(destinations: any WebhookDestinationChecking, secrets: any WebhookSecretKeeping, settings: WebhookSettings,
                wake: @escaping @Sendable () -> Void = {}, coalesced: @escaping @Sendable () -> Void = {}) {
        self.destinations = destinations
        self.secrets = secrets
        self.settings = settings
        self.wake = wake
        self.coalesced = coalesced
    }
}
