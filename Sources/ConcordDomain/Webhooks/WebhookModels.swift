import Foundation

/// Who a webhook belongs to: one account (it hears that account's events) or the server (it hears
/// every account's events; managed with the admin token).
public enum WebhookScope: String, Sendable, Equatable {
    case account, server
}

/// The event types a webhook may subscribe to, and the ping it never subscribes to.
public enum WebhookEventType: String, Sendable, Equatable, CaseIterable {
    case libraryChanged = "library.changed"
    case journalsChanged = "journals.changed"
    case deviceCreated = "device.created"
    case deviceReplaced = "device.replaced"
    case deviceDeleted = "device.deleted"
    case accountDeleted = "account.deleted"
    case ping = "webhook.ping"

    /// Library and journal events are coalesced per feed; device and account events never are.
    public var isCoalesced: Bool { self == .libraryChanged || self == .journalsChanged }
}

/// Why a webhook is disabled (`disabledReason`).
public enum WebhookDisabledReason: String, Sendable, Equatable {
    case manual, failing, gone
}

/// The status of an event in a webhook's deliveries log.
public enum WebhookEventStatus: String, Sendable, Equatable, CaseIterable {
    case pending, succeeded, failed, superseded, cancelled
}

/// A webhook's secret as stored: sealed under the webhook key (`WebhookSecretSealing`), never in the clear.
public struct StoredWebhookSecret: Sendable, Equatable {
    /// The sealed bytes (format version, key ID, serial, ciphertext, tag).
    public var sealed: [UInt8]
    /// The ID of the webhook key that sealed it: an instance without that key claims none of the webhook's events.
    public var keyID: String
    public var createdAt: Double
    /// When a previous secret stops signing (nil for the current one).
    public var expiresAt: Double?

    public init(sealed: [UInt8], keyID: String, createdAt: Double, expiresAt: Double? = nil) {
        self.sealed = sealed
        self.keyID = keyID
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// A webhook's row.
public struct StoredWebhook: Sendable, Equatable {
    public var webhookID: String
    public var scope: WebhookScope
    /// The owning account; nil for a server webhook.
    public var accountID: String?
    public var url: String
    public var events: [WebhookEventType]
    public var description: String
    public var enabled: Bool
    public var disabledReason: WebhookDisabledReason?
    public var disabledAt: Double?
    public var minIntervalSeconds: Int
    public var createdAt: Double
    public var updatedAt: Double
    public var secret: StoredWebhookSecret
    public var previousSecret: StoredWebhookSecret?
    /// Serials of sealed secrets only grow, so no pad is used twice.
    public var secretSerial: Int64
    public var consecutiveFailures: Int
    public var lastSuccessAt: Double?
    public var lastFailureAt: Double?
    public var lastPingAt: Double?

    public init(webhookID: String, scope: WebhookScope, accountID: String?, url: String, events: [WebhookEventType],
                description: String, enabled: Bool, disabledReason: WebhookDisabledReason?, disabledAt: Double?,
                minIntervalSeconds: Int, createdAt: Double, updatedAt: Double, secret: StoredWebhookSecret,
                previousSecret: StoredWebhookSecret?, secretSerial: Int64, consecutiveFailures: Int,
                lastSuccessAt: Double?, lastFailureAt: Double?, lastPingAt: Double?) {
        self.webhookID = webhookID
        self.scope = scope
        self.accountID = accountID
        self.url = url
        self.events = events
        self.description = description
        self.enabled = enabled
        self.disabledReason = disabledReason
        self.disabledAt = disabledAt
        self.minIntervalSeconds = minIntervalSeconds
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.secret = secret
        self.previousSecret = previousSecret
        self.secretSerial = secretSerial
        self.consecutiveFailures = consecutiveFailures
        self.lastSuccessAt = lastSuccessAt
        self.lastFailureAt = lastFailureAt
        self.lastPingAt = lastPingAt
    }

    /// The previous secret while it still signs at `now`.
    public func previousSecret(at now: Double) -> StoredWebhookSecret? {
        guard let p = self.previousSecret, let e = p.expiresAt, e > now else { return nil }
        return p
    }
}

/// One event of one webhook: the outbox row, its state, and its entry in the deliveries log.
public struct StoredWebhookEvent: Sendable, Equatable {
    public var eventID: String
    public var webhookID: String
    /// The account the event is about (its feed's account).
    public var accountID: String
    /// The queue the event goes through: `WebhookFeed.key`.
    public var feed: String
    public var type: WebhookEventType
    /// Order of creation, assigned by the store (0 before insertion).
    public var seq: Int64
    public var status: WebhookEventStatus
    public var createdAt: Double
    /// The commit time of the newest change the event covers.
    public var timestamp: Double
    /// The body's `data` member, compact JSON.
    public var data: String
    /// The device whose writes the event covers, when one device wrote all of them (journal feeds).
    public var originDeviceID: String?
    /// Attempts counted by the schedule (a superseding event takes them over).
    public var attempts: Int
    /// Whether this event itself was ever attempted (an unattempted waiting event is updated in place).
    public var attempted: Bool
    public var nextAttemptAt: Double?
    public var supersededBy: String?
    /// The instance holding a claim on the event's current attempt, and until when.
    public var leaseOwner: String?
    public var leaseUntil: Double?
    /// A redelivery: one attempt, never retried.
    public var manual: Bool
    /// The feed's change count (its head's) when the event last took a change; a waiting event
    /// reads newer changes from the head until it is claimed (storage's concern).
    public var headSeq: Int64
    /// Changes the event took in place since it was last written (read only, for metrics).
    public var coalescedChanges: Int

    public init(eventID: String, webhookID: String, accountID: String, feed: String, type: WebhookEventType, seq: Int64 = 0,
                status: WebhookEventStatus = .pending, createdAt: Double, timestamp: Double, data: String, originDeviceID: String?,
                attempts: Int = 0, attempted: Bool = false, nextAttemptAt: Double?, supersededBy: String? = nil,
                leaseOwner: String? = nil, leaseUntil: Double? = nil, manual: Bool = false, headSeq: Int64 = 0, coalescedChanges: Int = 0) {
        self.headSeq = headSeq
        self.coalescedChanges = coalescedChanges
        self.eventID = eventID
        self.webhookID = webhookID
        self.accountID = accountID
        self.feed = feed
        self.type = type
        self.seq = seq
        self.status = status
        self.createdAt = createdAt
        self.timestamp = timestamp
        self.data = data
        self.originDeviceID = originDeviceID
        self.attempts = attempts
        self.attempted = attempted
        self.nextAttemptAt = nextAttemptAt
        self.supersededBy = supersededBy
        self.leaseOwner = leaseOwner
        self.leaseUntil = leaseUntil
        self.manual = manual
    }

    /// The body sent on every attempt: Standard Webhooks' payload, compact JSON, the same bytes each time.
    public var body: [UInt8] {
        var s = "{\"id\":" + WebhookJSON.string(self.eventID)
        s += ",\"type\":" + WebhookJSON.string(self.type.rawValue)
        s += ",\"timestamp\":" + WebhookJSON.string(RFC3339.format(Date(timeIntervalSince1970: self.timestamp.rounded(.down))))
        s += ",\"data\":" + self.data + "}"
        return Array(s.utf8)
    }
}

/// One attempt of an event, as the deliveries log shows it.
public struct StoredWebhookAttempt: Sendable, Equatable {
    public var eventID: String
    public var attemptedAt: Double
    public var durationMs: Int
    public var responseStatus: Int?
    /// nil, or one of `timeout`, `connectionFailed`, `dnsFailure`, `forbiddenAddress`, `tlsFailure`,
    /// `invalidResponse`, `interrupted`.
    public var error: String?

    public init(eventID: String, attemptedAt: Double, durationMs: Int, responseStatus: Int?, error: String?) {
        self.eventID = eventID
        self.attemptedAt = attemptedAt
        self.durationMs = durationMs
        self.responseStatus = responseStatus
        self.error = error
    }
}

/// The queue an event goes through. A device's library and an account's journals are feeds (coalesced);
/// an account's device and account events share one ordered queue.
public enum WebhookFeed: Sendable, Equatable {
    case library(DeviceRef)
    case journals(accountID: String)
    case account(String)

    public var key: String {
        switch self {
        case .library(let d): return "L:" + d.accountID + ":" + d.deviceID
        case .journals(let a): return "J:" + a
        case .account(let a): return "A:" + a
        }
    }
}

/// Minimal JSON text for event bodies: the domain writes its few ASCII members itself.
enum WebhookJSON {
    static func string(_ s: String) -> String {
        // Most values (IDs, tokens) need no escape: quoted as they are.
        if s.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) { return "\"" + s + "\"" }
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 { out += String(format: "\\u%04x", scalar.value) } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }

    static func optionalString(_ s: String?) -> String { s.map(Self.string) ?? "null" }

    /// `{"k":"v",...}` from ordered members whose values are already JSON.
    static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { Self.string($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }
}

/// The webhook settings (`webhooks.*`, `quotas.webhooksPerAccount`).
public struct WebhookSettings: Sendable, Equatable {
    public var timeoutSeconds = 15
    public var retrySchedule: [Int] = [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]
    public var disableAfterFailures = 20
    public var disableAfterSeconds = 259_200
    public var leaseSeconds = 60
    public var maxInFlight = 64
    public var logDays = 7
    public var maxServerWebhooks = 10
    public var webhooksPerAccount = 10
    /// Finished events kept per webhook, newest first.
    public var logKeptPerWebhook = 10_000
    public init() {}

    /// Attempts in one schedule: the first and one per retry.
    public var attemptsPerSchedule: Int { self.retrySchedule.count + 1 }
    public var logSeconds: Double { Double(self.logDays) * 86_400 }
}
