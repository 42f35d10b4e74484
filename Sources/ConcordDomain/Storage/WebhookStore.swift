/// Storage of webhooks, their events (the outbox) and the deliveries log. Both the server's and an
/// account's write transactions have it: an event is written in the transaction of the commit that
/// causes it. Lists come back in the order their doc comment names.
public protocol WebhookReads {
    /// An account's webhooks, or the server webhooks when `accountID` is nil; in creation order.
    func webhooks(accountID: String?) throws -> [StoredWebhook]
    func webhook(id: String) throws -> StoredWebhook?
    /// A webhook's events, newest first, optionally of one status, older than the event of `beforeSeq`.
    func webhookEvents(webhookID: String, status: WebhookEventStatus?, beforeSeq: Int64?, limit: Int) throws -> [StoredWebhookEvent]
    func webhookEvent(id: String) throws -> StoredWebhookEvent?
    /// The newest event of a webhook's feed (any status).
    func newestWebhookEvent(webhookID: String, feed: String) throws -> StoredWebhookEvent?
    /// Each event's attempts, oldest first.
    func webhookAttempts(eventIDs: [String]) throws -> [String: [StoredWebhookAttempt]]
    func pendingWebhookEventCount(webhookID: String) throws -> Int
    /// When the earliest pending event of an enabled webhook is due (nil: none).
    func nextWebhookDueTime() throws -> Double?
    /// Pending events of enabled webhooks due at `now` or earlier (for metrics).
    func dueWebhookEventCount(now: Double) throws -> Int
    /// For each of a webhook's library and journal feeds whose newest event failed: that event.
    func failedWebhookFeedHeads(webhookID: String) throws -> [StoredWebhookEvent]
    /// The IDs of the webhook keys that sealed the stored secrets.
    func webhookSecretKeyIDs() throws -> [String]
    /// Claims whose lease ran out before `now` (all of them with `now` = infinity: SQLite's start).
    func expiredWebhookClaims(now: Double) throws -> [StoredWebhookEvent]
    /// Pending events of disabled webhooks created before `before` (held too long).
    func heldWebhookEvents(createdBefore before: Double) throws -> [StoredWebhookEvent]
}

public protocol WebhookWrites: WebhookReads {
    func insertWebhook(_ webhook: StoredWebhook) throws
    func updateWebhook(_ webhook: StoredWebhook) throws
    /// Deletes the webhook with its events, attempts and feed state.
    func deleteWebhook(id: String) throws
    /// Deletes an account's own webhooks with their events, attempts and feed state.
    func deleteWebhooks(accountID: String) throws
    /// The events of `feed` waiting for a retry (pending, unclaimed, attempted) on webhooks that hear
    /// `type` of the account; usually none.
    func retryingWebhookEvents(accountID: String, feed: String, type: WebhookEventType) throws -> [StoredWebhookEvent]
    /// A change to `feed`: its head row takes it, and every waiting event nobody has seen reads it
    /// from there (`data` while its origin is `origin`, else `dataWithoutOrigin` and no origin).
    /// When the feed is marked for a check (a claim, an event's change or a webhook's since its last
    /// check), every webhook hearing `type` with no event waiting also gets one, due at `now` or
    /// `minIntervalSeconds` after the feed's previous attempt started, and this returns true: the
    /// caller then supersedes events waiting for a retry and calls `finishWebhookFeedCheck`.
    /// Unmarked, a commit costs the head row alone, however many webhooks hear the feed.
    func queueFeedEvent(accountID: String, feed: String, type: WebhookEventType, timestamp: Double, origin: String, data: String,
                        dataWithoutOrigin: String, now: Double) throws -> Bool
    /// Every webhook hearing `feed` has an event waiting that nobody has seen: commits skip the
    /// check until something marks the feed again.
    func finishWebhookFeedCheck(feed: String) throws
    /// Marks for a check the feeds of `accountID` (nil: every feed), after a change to which
    /// webhooks hear them.
    func recheckWebhookFeeds(accountID: String?) throws
    /// A device or account event for every webhook hearing `type` of the account, due at once.
    func queueAccountEvent(accountID: String, feed: String, type: WebhookEventType, timestamp: Double, data: String, now: Double) throws
    /// The event waiting in a webhook's feed: pending and not claimed.
    func waitingWebhookEvent(webhookID: String, feed: String) throws -> StoredWebhookEvent?
    /// Inserts an event; returns its `seq`.
    @discardableResult
    func insertWebhookEvent(_ event: StoredWebhookEvent) throws -> Int64
    /// Writes every mutable column of the event. With `onlyIfUnclaimed`, only while no instance holds
    /// a claim on it; returns whether it was written.
    @discardableResult
    func updateWebhookEvent(_ event: StoredWebhookEvent, onlyIfUnclaimed: Bool) throws -> Bool
    func insertWebhookAttempt(_ attempt: StoredWebhookAttempt) throws
    /// Cancels pending events: of `webhookID` (nil: any), about `accountID` (nil: any), in `feed`
    /// (nil: any), of `type` (nil: any). Returns how many.
    @discardableResult
    func cancelPendingWebhookEvents(webhookID: String?, accountID: String?, feed: String?, type: WebhookEventType?) throws -> Int
    /// When a webhook's feed last had an attempt started.
    func webhookFeedLastAttempt(webhookID: String, feed: String) throws -> Double?
    func setWebhookFeedLastAttempt(webhookID: String, feed: String, at time: Double) throws
    /// Claims up to `limit` due events for `owner` until `leaseUntil`: pending, due, of an enabled
    /// webhook whose secret was sealed under `keyID`, the oldest pending of their feed, and of a
    /// feed with no attempt in flight. Several instances claim one at a time (the engine serialises).
    func claimDueWebhookEvents(now: Double, owner: String, leaseUntil: Double, keyID: String, limit: Int) throws -> [StoredWebhookEvent]
    /// Removes finished events older than `before`, and beyond the newest `keep` finished per webhook.
    func pruneWebhookEvents(finishedBefore before: Double, keep: Int) throws
}
