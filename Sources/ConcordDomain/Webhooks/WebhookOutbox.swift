/// Writes webhook events in the transaction of the commit that causes them (the outbox): once a
/// write is answered its events are stored, and the delivery engine finds them there.
///
/// Library and journal events are coalesced per (webhook, feed): at most one event waits. A waiting
/// event nobody has seen takes the new token in place; one that waits for a retry is superseded by
/// a new event that takes over its schedule. Device and account events are each queued in order.
enum WebhookOutbox {
    static func libraryChanged(_ core: ServiceCore, _ tx: any AccountWriteTransaction, device: DeviceRef, seq: Int64, at time: Double) throws {
        let token = core.tokens.encode(seq: seq, scope: .library(device))
        // The same with or without its origin (a library's changes are its own device's): built once.
        let data = WebhookJSON.object([("accountID", WebhookJSON.string(device.accountID)), ("deviceID", WebhookJSON.string(device.deviceID)),
                                       ("changeToken", WebhookJSON.string(token))])
        try Self.feedChanged(core, tx, feed: .library(device), type: .libraryChanged, accountID: device.accountID, at: time,
                             origin: device.deviceID) { _ in data }
    }

    static func journalsChanged(_ core: ServiceCore, _ tx: any AccountWriteTransaction, accountID: String, seq: Int64, origin: String,
                                at time: Double) throws {
        let token = core.tokens.encode(seq: seq, scope: .journals(accountID: accountID))
        try Self.feedChanged(core, tx, feed: .journals(accountID: accountID), type: .journalsChanged, accountID: accountID, at: time,
                             origin: origin) { origin in
            WebhookJSON.object([("accountID", WebhookJSON.string(accountID)), ("changeToken", WebhookJSON.string(token)),
                                ("originDeviceID", WebhookJSON.optionalString(origin))])
        }
    }

    /// `device.created` (with `replaces`), and for a successor `device.replaced` naming the predecessor.
    static func deviceCreated(_ core: ServiceCore, _ tx: any AccountWriteTransaction, device: DeviceRef, replaces: String?, at time: Double) throws {
        try Self.queue(core, tx, type: .deviceCreated, accountID: device.accountID, at: time,
                       data: WebhookJSON.object([("accountID", WebhookJSON.string(device.accountID)), ("deviceID", WebhookJSON.string(device.deviceID)),
                                                 ("replaces", WebhookJSON.optionalString(replaces))]))
        if let replaces {
            try Self.queue(core, tx, type: .deviceReplaced, accountID: device.accountID, at: time,
                           data: WebhookJSON.object([("accountID", WebhookJSON.string(device.accountID)), ("deviceID", WebhookJSON.string(replaces)),
                                                     ("replacedBy", WebhookJSON.string(device.deviceID))]))
        }
    }

    /// `device.deleted`; the device's pending library events are cancelled on every webhook.
    static func deviceDeleted(_ core: ServiceCore, _ tx: any AccountWriteTransaction, device: DeviceRef, at time: Double) throws {
        try tx.cancelPendingWebhookEvents(webhookID: nil, accountID: device.accountID, feed: WebhookFeed.library(device).key, type: nil)
        try Self.queue(core, tx, type: .deviceDeleted, accountID: device.accountID, at: time,
                       data: WebhookJSON.object([("accountID", WebhookJSON.string(device.accountID)), ("deviceID", WebhookJSON.string(device.deviceID))]))
    }

    /// The account's own webhooks go with it; server webhooks' pending events of its feeds are
    /// cancelled and they get `account.deleted`.
    static func accountDeleted(_ core: ServiceCore, _ tx: any AccountWriteTransaction, accountID: String, at time: Double) throws {
        try tx.deleteWebhooks(accountID: accountID)
        try tx.cancelPendingWebhookEvents(webhookID: nil, accountID: accountID, feed: nil, type: nil)
        try Self.queue(core, tx, type: .accountDeleted, accountID: accountID, at: time,
                       data: WebhookJSON.object([("accountID", WebhookJSON.string(accountID))]))
    }

    private static func queue(_ core: ServiceCore, _ tx: any AccountWriteTransaction, type: WebhookEventType, accountID: String, at time: Double,
                              data: String) throws {
        try tx.queueAccountEvent(accountID: accountID, feed: WebhookFeed.account(accountID).key, type: type, timestamp: time, data: data,
                                 now: core.clock().timeIntervalSince1970)
    }

    /// A change to a feed. A commit costs the feed's head row; when the feed is marked for a check
    /// (rare: after a claim, an attempt's outcome or a webhook's change), the storage also gives
    /// every webhook hearing it a waiting event at once, and an event waiting for a retry is
    /// superseded here, one by one.
    private static func feedChanged(_ core: ServiceCore, _ tx: any AccountWriteTransaction, feed: WebhookFeed, type: WebhookEventType,
                                    accountID: String, at time: Double, origin: String, data: (String?) -> String) throws {
        let now = core.clock().timeIntervalSince1970
        let key = feed.key
        guard try tx.queueFeedEvent(accountID: accountID, feed: key, type: type, timestamp: time, origin: origin, data: data(origin),
                                    dataWithoutOrigin: data(nil), now: now) else { return }
        for waiting in try tx.retryingWebhookEvents(accountID: accountID, feed: key, type: type) {
            // Seen by the receiver: a new event with a new ID takes over its schedule.
            let mergedOrigin = waiting.originDeviceID == origin ? origin : nil
            let newer = StoredWebhookEvent(
                eventID: core.newID(), webhookID: waiting.webhookID, accountID: accountID, feed: key, type: type,
                createdAt: now, timestamp: time, data: data(mergedOrigin), originDeviceID: mergedOrigin,
                attempts: waiting.attempts, nextAttemptAt: waiting.nextAttemptAt, headSeq: waiting.headSeq)
            var old = waiting
            old.status = .superseded
            old.supersededBy = newer.eventID
            old.nextAttemptAt = nil
            if try tx.updateWebhookEvent(old, onlyIfUnclaimed: true) {
                try tx.insertWebhookEvent(newer)
                core.webhookEnvironment?.coalesced()
            }
        }
        try tx.finishWebhookFeedCheck(feed: key)
    }
}
