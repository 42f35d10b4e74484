import ConcordDomain
import Foundation

/// A value bound to a webhook statement; optionals bind NULL of the column's type.
enum WebhookValue {
    case text(String?)
    case int(Int64?)
    case double(Double?)
    case blob([UInt8]?)
}

/// A result row of a webhook statement.
protocol WebhookRow {
    func isNull(_ i: Int32) -> Bool
    func text(_ i: Int32) -> String
    func int(_ i: Int32) -> Int64
    func double(_ i: Int32) -> Double
    func blob(_ i: Int32) -> [UInt8]
}

extension WebhookRow {
    func optionalText(_ i: Int32) -> String? { self.isNull(i) ? nil : self.text(i) }
    func optionalDouble(_ i: Int32) -> Double? { self.isNull(i) ? nil : self.double(i) }
    func optionalInt(_ i: Int32) -> Int64? { self.isNull(i) ? nil : self.int(i) }
    func optionalBlob(_ i: Int32) -> [UInt8]? { self.isNull(i) ? nil : self.blob(i) }
}

/// What an engine's transaction provides for the webhook tables: one statement runner. The SQL
/// below is written once, with `$n` placeholders, for both engines.
protocol WebhookStatements: WebhookWrites {
    @discardableResult
    func webhookRun(_ sql: String, _ values: [WebhookValue]) throws -> Int
    func webhookQuery(_ sql: String, _ values: [WebhookValue], _ row: (any WebhookRow) throws -> Void) throws
    /// Serialises claims across instances (PostgreSQL: a transaction-scoped advisory lock; SQLite's
    /// one writer already does).
    func lockWebhookClaims() throws
    /// Tells other instances, at commit, that events were queued (PostgreSQL: `NOTIFY`).
    func announceWebhookEvents() throws
    /// An SQL expression making a new upper-case UUID, for events made by one statement.
    static var newEventIDExpression: String { get }
}

extension WebhookStatements {
    static var webhookColumns: String { webhookColumnList }

    static var eventColumns: String { eventColumnList }

    /// The columns an event is read with. A waiting event nobody has seen (pending, never
    /// attempted, unclaimed) carries its feed's newest change: its feed's head holds it, and the
    /// event reads it from there (`webhook_feed_heads`, joined as `h` when the feed changed since
    /// the event last took a change). So a commit writes one head row, not every waiting event.
    static var eventReadColumns: String {
        """
        seq, event_id, webhook_id, account_id, feed, type, status, created_at,
        CASE WHEN h.feed_key IS NULL THEN ts ELSE h.last_ts END,
        CASE WHEN h.feed_key IS NULL THEN data
             WHEN origin IS NOT NULL AND h.last_origin = origin AND h.origin_run_since <= head_seq THEN h.last_data
             ELSE h.last_data_plain END,
        CASE WHEN h.feed_key IS NULL THEN origin
             WHEN origin IS NOT NULL AND h.last_origin = origin AND h.origin_run_since <= head_seq THEN origin
             ELSE NULL END,
        attempts, attempted, next_attempt_at, superseded_by, lease_owner, lease_until, manual,
        CASE WHEN h.feed_key IS NULL THEN head_seq ELSE h.last_seq END,
        CASE WHEN h.feed_key IS NULL THEN 0 ELSE h.last_seq - head_seq END
        """
    }

    static var eventSource: String {
        """
        webhook_events LEFT JOIN webhook_feed_heads h ON h.feed_key = webhook_events.feed AND webhook_events.status = 'pending'
            AND webhook_events.attempted = 0 AND webhook_events.lease_owner IS NULL AND h.last_seq > webhook_events.head_seq
        """
    }

    private func webhooksWhere(_ clause: String, _ values: [WebhookValue]) throws -> [StoredWebhook] {
        var out: [StoredWebhook] = []
        try self.webhookQuery("SELECT \(Self.webhookColumns) FROM webhooks WHERE \(clause)", values) { r in out.append(Self.webhook(r)) }
        return out
    }

    private func eventsWhere(_ clause: String, _ values: [WebhookValue]) throws -> [StoredWebhookEvent] {
        var out: [StoredWebhookEvent] = []
        try self.webhookQuery("SELECT \(Self.eventReadColumns) FROM \(Self.eventSource) WHERE \(clause)", values) { r in
            if let e = Self.event(r) { out.append(e) }
        }
        return out
    }

    static func webhook(_ r: any WebhookRow) -> StoredWebhook {
        let previous: StoredWebhookSecret? = r.optionalBlob(15).map { sealed in
            StoredWebhookSecret(sealed: sealed, keyID: r.optionalText(16) ?? "", createdAt: r.optionalDouble(17) ?? 0, expiresAt: r.optionalDouble(18))
        }
        return StoredWebhook(
            webhookID: r.text(0), scope: WebhookScope(rawValue: r.text(1)) ?? .account, accountID: r.optionalText(2), url: r.text(3),
            events: r.text(4).split(separator: ",").compactMap { WebhookEventType(rawValue: String($0)) }, description: r.text(5),
            enabled: r.int(6) != 0, disabledReason: r.optionalText(7).flatMap(WebhookDisabledReason.init(rawValue:)),
            disabledAt: r.optionalDouble(8), minIntervalSeconds: Int(r.int(9)), createdAt: r.double(10), updatedAt: r.double(11),
            secret: StoredWebhookSecret(sealed: r.blob(12), keyID: r.text(13), createdAt: r.double(14)), previousSecret: previous,
            secretSerial: r.int(19), consecutiveFailures: Int(r.int(20)), lastSuccessAt: r.optionalDouble(21),
            lastFailureAt: r.optionalDouble(22), lastPingAt: r.optionalDouble(23))
    }

    static func webhookValues(_ w: StoredWebhook) -> [WebhookValue] {
        [.text(w.webhookID), .text(w.scope.rawValue), .text(w.accountID), .text(w.url), .text(w.events.map(\.rawValue).joined(separator: ",")),
         .text(w.description), .int(w.enabled ? 1 : 0), .text(w.disabledReason?.rawValue), .double(w.disabledAt), .int(Int64(w.minIntervalSeconds)),
         .double(w.createdAt), .double(w.updatedAt), .blob(w.secret.sealed), .text(w.secret.keyID), .double(w.secret.createdAt),
         .blob(w.previousSecret?.sealed), .text(w.previousSecret?.keyID), .double(w.previousSecret?.createdAt),
         .double(w.previousSecret?.expiresAt), .int(w.secretSerial), .int(Int64(w.consecutiveFailures)), .double(w.lastSuccessAt),
         .double(w.lastFailureAt), .double(w.lastPingAt)]
    }

    static func event(_ r: any WebhookRow) -> StoredWebhookEvent? {
        guard let type = WebhookEventType(rawValue: r.text(5)), let status = WebhookEventStatus(rawValue: r.text(6)) else { return nil }
        return StoredWebhookEvent(
            eventID: r.text(1), webhookID: r.text(2), accountID: r.text(3), feed: r.text(4), type: type, seq: r.int(0), status: status,
            createdAt: r.double(7), timestamp: r.double(8), data: r.text(9), originDeviceID: r.optionalText(10), attempts: Int(r.int(11)),
            attempted: r.int(12) != 0, nextAttemptAt: r.optionalDouble(13), supersededBy: r.optionalText(14), leaseOwner: r.optionalText(15),
            leaseUntil: r.optionalDouble(16), manual: r.int(17) != 0, headSeq: r.int(18), coalescedChanges: Int(r.int(19)))
    }

    // MARK: - WebhookReads

    func webhooks(accountID: String?) throws -> [StoredWebhook] {
        if let accountID { return try self.webhooksWhere("account_id = $1 AND scope = 'account' ORDER BY created_at, webhook_id", [.text(accountID)]) }
        return try self.webhooksWhere("scope = 'server' ORDER BY created_at, webhook_id", [])
    }

    func webhook(id: String) throws -> StoredWebhook? {
        try self.webhooksWhere("webhook_id = $1", [.text(id)]).first
    }

    func webhookEvents(webhookID: String, status: WebhookEventStatus?, beforeSeq: Int64?, limit: Int) throws -> [StoredWebhookEvent] {
        try self.eventsWhere("webhook_id = $1 AND ($2 IS NULL OR status = $2) AND seq < $3 ORDER BY seq DESC LIMIT $4",
                             [.text(webhookID), .text(status?.rawValue), .int(beforeSeq ?? Int64.max), .int(Int64(limit))])
    }

    func webhookEvent(id: String) throws -> StoredWebhookEvent? {
        try self.eventsWhere("event_id = $1", [.text(id)]).first
    }

    func newestWebhookEvent(webhookID: String, feed: String) throws -> StoredWebhookEvent? {
        try self.eventsWhere("webhook_id = $1 AND feed = $2 ORDER BY seq DESC LIMIT 1", [.text(webhookID), .text(feed)]).first
    }

    func webhookAttempts(eventIDs: [String]) throws -> [String: [StoredWebhookAttempt]] {
        var out: [String: [StoredWebhookAttempt]] = [:]
        for id in eventIDs {
            try self.webhookQuery("SELECT event_id, attempted_at, duration_ms, response_status, error FROM webhook_attempts WHERE event_id = $1 ORDER BY attempted_at",
                                  [.text(id)]) { r in
                out[id, default: []].append(StoredWebhookAttempt(eventID: r.text(0), attemptedAt: r.double(1), durationMs: Int(r.int(2)),
                                                                 responseStatus: r.optionalInt(3).map(Int.init), error: r.optionalText(4)))
            }
        }
        return out
    }

    private func count(_ sql: String, _ values: [WebhookValue]) throws -> Int {
        var n = 0
        try self.webhookQuery(sql, values) { r in n = Int(r.int(0)) }
        return n
    }

    func pendingWebhookEventCount(webhookID: String) throws -> Int {
        try self.count("SELECT count(*) FROM webhook_events WHERE webhook_id = $1 AND status = 'pending'", [.text(webhookID)])
    }

    func nextWebhookDueTime() throws -> Double? {
        var out: Double? = nil
        try self.webhookQuery("""
            SELECT min(e.next_attempt_at) FROM webhook_events e JOIN webhooks w ON w.webhook_id = e.webhook_id
            WHERE e.status = 'pending' AND e.lease_owner IS NULL AND e.next_attempt_at IS NOT NULL AND w.enabled = 1
            """, []) { r in out = r.optionalDouble(0) }
        return out
    }

    func dueWebhookEventCount(now: Double) throws -> Int {
        try self.count("""
            SELECT count(*) FROM webhook_events e JOIN webhooks w ON w.webhook_id = e.webhook_id
            WHERE e.status = 'pending' AND e.next_attempt_at <= $1 AND w.enabled = 1
            """, [.double(now)])
    }

    func failedWebhookFeedHeads(webhookID: String) throws -> [StoredWebhookEvent] {
        try self.eventsWhere("""
            webhook_id = $1 AND status = 'failed' AND type IN ('library.changed', 'journals.changed')
            AND seq = (SELECT max(x.seq) FROM webhook_events x WHERE x.webhook_id = $1 AND x.feed = webhook_events.feed)
            ORDER BY seq
            """, [.text(webhookID)])
    }

    func webhookSecretKeyIDs() throws -> [String] {
        var out: [String] = []
        try self.webhookQuery("SELECT DISTINCT secret_key_id FROM webhooks", []) { r in out.append(r.text(0)) }
        return out
    }

    func expiredWebhookClaims(now: Double) throws -> [StoredWebhookEvent] {
        if now == .infinity { return try self.eventsWhere("lease_owner IS NOT NULL ORDER BY seq", []) }
        return try self.eventsWhere("lease_owner IS NOT NULL AND lease_until < $1 ORDER BY seq", [.double(now)])
    }

    func heldWebhookEvents(createdBefore before: Double) throws -> [StoredWebhookEvent] {
        try self.eventsWhere("""
            status = 'pending' AND lease_owner IS NULL AND created_at < $1
            AND webhook_id IN (SELECT webhook_id FROM webhooks WHERE enabled = 0) ORDER BY seq
            """, [.double(before)])
    }

    // MARK: - The outbox: a few statements per commit

    /// The webhooks hearing `$2` (a type) of the account `$1`: the account's and the server's, each
    /// found through its index (other accounts' webhooks are never read).
    private static var subscribed: String {
        """
        SELECT webhook_id FROM webhooks WHERE account_id = $1 AND scope = 'account' AND (',' || events || ',') LIKE $2
        UNION ALL
        SELECT webhook_id FROM webhooks WHERE scope = 'server' AND (',' || events || ',') LIKE $2
        """
    }

    private static func typePattern(_ type: WebhookEventType) -> String { "%," + type.rawValue + ",%" }

    func retryingWebhookEvents(accountID: String, feed: String, type: WebhookEventType) throws -> [StoredWebhookEvent] {
        try self.eventsWhere("""
            feed = $3 AND status = 'pending' AND lease_owner IS NULL AND attempted = 1 AND webhook_id IN (\(Self.subscribed)) ORDER BY seq
            """, [.text(accountID), .text(Self.typePattern(type)), .text(feed)])
    }

    func queueFeedEvent(accountID: String, feed: String, type: WebhookEventType, timestamp: Double, origin: String, data: String,
                        dataWithoutOrigin: String, now: Double) throws -> Bool {
        // The feed's head takes the change: one row, however many events wait on the feed.
        var head: Int64 = 0
        var recheck = true
        try self.webhookQuery("""
            INSERT INTO webhook_feed_heads (feed_key, last_seq, last_ts, last_data, last_data_plain, last_origin, origin_run_since, recheck)
            VALUES ($1, 1, $2, $3, $4, $5, 1, 1)
            ON CONFLICT (feed_key) DO UPDATE SET
                origin_run_since = CASE WHEN webhook_feed_heads.last_origin = excluded.last_origin THEN webhook_feed_heads.origin_run_since
                                        ELSE webhook_feed_heads.last_seq + 1 END,
                last_seq = webhook_feed_heads.last_seq + 1, last_ts = excluded.last_ts, last_data = excluded.last_data,
                last_data_plain = excluded.last_data_plain, last_origin = excluded.last_origin
            RETURNING last_seq, recheck
            """, [.text(feed), .double(timestamp), .text(data), .text(dataWithoutOrigin), .text(origin)]) { r in
            head = r.int(0)
            recheck = r.int(1) != 0
        }
        // Unmarked: every webhook hearing the feed has an event waiting that reads the head.
        guard recheck else { return false }
        let queued = try self.webhookRun("""
            INSERT INTO webhook_events (event_id, webhook_id, account_id, feed, type, status, created_at, ts, data, origin, attempts, attempted,
                                        next_attempt_at, superseded_by, lease_owner, lease_until, manual, head_seq)
            SELECT \(Self.newEventIDExpression), s.webhook_id, $1, $3, $4, 'pending', $5, $6, $7, $8, 0, 0,
                   CASE WHEN f.last_attempt_at IS NULL OR f.last_attempt_at + w.min_interval < $5 THEN $5
                        ELSE f.last_attempt_at + w.min_interval END, NULL, NULL, NULL, 0, $9
            FROM (\(Self.subscribed)) s
            JOIN webhooks w ON w.webhook_id = s.webhook_id
            LEFT JOIN webhook_feeds f ON f.webhook_id = s.webhook_id AND f.feed = $3
            WHERE NOT EXISTS (SELECT 1 FROM webhook_events x
                              WHERE x.webhook_id = s.webhook_id AND x.feed = $3 AND x.status = 'pending' AND x.lease_owner IS NULL)
            ORDER BY w.created_at, w.webhook_id
            """, [.text(accountID), .text(Self.typePattern(type)), .text(feed), .text(type.rawValue), .double(now), .double(timestamp),
                  .text(data), .text(origin), .int(head)])
        if queued > 0 { try self.announceWebhookEvents() }
        return true
    }

    func finishWebhookFeedCheck(feed: String) throws {
        try self.webhookRun("UPDATE webhook_feed_heads SET recheck = 0 WHERE feed_key = $1", [.text(feed)])
    }

    func recheckWebhookFeeds(accountID: String?) throws {
        if let accountID {
            try self.webhookRun("UPDATE webhook_feed_heads SET recheck = 1 WHERE (feed_key = $1 OR feed_key LIKE $2) AND recheck = 0",
                                [.text("J:" + accountID), .text("L:" + accountID + ":%")])
        } else {
            try self.webhookRun("UPDATE webhook_feed_heads SET recheck = 1 WHERE recheck = 0", [])
        }
    }

    /// A feed whose waiting events changed (claimed, finished, superseded, new): its next commit checks
    /// that every webhook hearing it still has one.
    private func markFeedForCheck(_ event: StoredWebhookEvent) throws {
        guard event.type.isCoalesced else { return }
        try self.webhookRun("UPDATE webhook_feed_heads SET recheck = 1 WHERE feed_key = $1 AND recheck = 0", [.text(event.feed)])
    }

    func queueAccountEvent(accountID: String, feed: String, type: WebhookEventType, timestamp: Double, data: String, now: Double) throws {
        let queued = try self.webhookRun("""
            INSERT INTO webhook_events (event_id, webhook_id, account_id, feed, type, status, created_at, ts, data, origin, attempts, attempted,
                                        next_attempt_at, superseded_by, lease_owner, lease_until, manual)
            SELECT \(Self.newEventIDExpression), s.webhook_id, $1, $3, $4, 'pending', $5, $6, $7, NULL, 0, 0, $5, NULL, NULL, NULL, 0
            FROM (\(Self.subscribed)) s JOIN webhooks w ON w.webhook_id = s.webhook_id
            ORDER BY w.created_at, w.webhook_id
            """, [.text(accountID), .text(Self.typePattern(type)), .text(feed), .text(type.rawValue), .double(now), .double(timestamp), .text(data)])
        if queued > 0 { try self.announceWebhookEvents() }
    }

    // MARK: - WebhookWrites

    func insertWebhook(_ webhook: StoredWebhook) throws {
        try self.webhookRun(WebhookStatementTexts.insertWebhook, Self.webhookValues(webhook))
        try self.recheckWebhookFeeds(accountID: webhook.accountID)
    }

    func updateWebhook(_ webhook: StoredWebhook) throws {
        try self.webhookRun(WebhookStatementTexts.updateWebhook, Self.webhookValues(webhook))
    }

    func deleteWebhook(id: String) throws {
        try self.webhookRun("DELETE FROM webhook_attempts WHERE event_id IN (SELECT event_id FROM webhook_events WHERE webhook_id = $1)", [.text(id)])
        try self.webhookRun("DELETE FROM webhook_events WHERE webhook_id = $1", [.text(id)])
        try self.webhookRun("DELETE FROM webhook_feeds WHERE webhook_id = $1", [.text(id)])
        try self.webhookRun("DELETE FROM webhooks WHERE webhook_id = $1", [.text(id)])
    }

    func deleteWebhooks(accountID: String) throws {
        for w in try self.webhooks(accountID: accountID) { try self.deleteWebhook(id: w.webhookID) }
    }

    func waitingWebhookEvent(webhookID: String, feed: String) throws -> StoredWebhookEvent? {
        try self.eventsWhere("webhook_id = $1 AND feed = $2 AND status = 'pending' AND lease_owner IS NULL ORDER BY seq DESC LIMIT 1",
                             [.text(webhookID), .text(feed)]).first
    }

    private static func eventValues(_ e: StoredWebhookEvent) -> [WebhookValue] {
        [.text(e.eventID), .text(e.webhookID), .text(e.accountID), .text(e.feed), .text(e.type.rawValue), .text(e.status.rawValue),
         .double(e.createdAt), .double(e.timestamp), .text(e.data), .text(e.originDeviceID), .int(Int64(e.attempts)),
         .int(e.attempted ? 1 : 0), .double(e.nextAttemptAt), .text(e.supersededBy), .text(e.leaseOwner), .double(e.leaseUntil),
         .int(e.manual ? 1 : 0), .int(e.headSeq)]
    }

    @discardableResult
    func insertWebhookEvent(_ event: StoredWebhookEvent) throws -> Int64 {
        var seq: Int64 = 0
        try self.webhookQuery(WebhookStatementTexts.insertEvent, Self.eventValues(event)) { r in seq = r.int(0) }
        try self.markFeedForCheck(event)
        try self.announceWebhookEvents()
        return seq
    }

    @discardableResult
    func updateWebhookEvent(_ event: StoredWebhookEvent, onlyIfUnclaimed: Bool) throws -> Bool {
        let sql = onlyIfUnclaimed ? WebhookStatementTexts.updateUnclaimedEvent : WebhookStatementTexts.updateEvent
        guard try self.webhookRun(sql, Self.eventValues(event)) > 0 else { return false }
        try self.markFeedForCheck(event)
        return true
    }

    func insertWebhookAttempt(_ attempt: StoredWebhookAttempt) throws {
        try self.webhookRun("INSERT INTO webhook_attempts (event_id, attempted_at, duration_ms, response_status, error) VALUES ($1, $2, $3, $4, $5)",
                            [.text(attempt.eventID), .double(attempt.attemptedAt), .int(Int64(attempt.durationMs)),
                             .int(attempt.responseStatus.map(Int64.init)), .text(attempt.error)])
    }

    @discardableResult
    func cancelPendingWebhookEvents(webhookID: String?, accountID: String?, feed: String?, type: WebhookEventType?) throws -> Int {
        let cancelled = try self.webhookRun("""
            UPDATE webhook_events SET status = 'cancelled', next_attempt_at = NULL
            WHERE status = 'pending' AND ($1 IS NULL OR webhook_id = $1) AND ($2 IS NULL OR account_id = $2)
              AND ($3 IS NULL OR feed = $3) AND ($4 IS NULL OR type = $4)
            """, [.text(webhookID), .text(accountID), .text(feed), .text(type?.rawValue)])
        // Some webhook may now have no event waiting on a feed that stays.
        if webhookID != nil || type != nil, cancelled > 0 { try self.recheckWebhookFeeds(accountID: accountID) }
        // A feed that goes (a deleted device's library, a deleted account's feeds) takes its head along.
        if webhookID == nil, type == nil {
            if let feed {
                try self.webhookRun("DELETE FROM webhook_feed_heads WHERE feed_key = $1", [.text(feed)])
            } else if let accountID {
                try self.webhookRun("DELETE FROM webhook_feed_heads WHERE feed_key = $1 OR feed_key LIKE $2",
                                    [.text("J:" + accountID), .text("L:" + accountID + ":%")])
            }
        }
        return cancelled
    }

    func webhookFeedLastAttempt(webhookID: String, feed: String) throws -> Double? {
        var out: Double? = nil
        try self.webhookQuery("SELECT last_attempt_at FROM webhook_feeds WHERE webhook_id = $1 AND feed = $2", [.text(webhookID), .text(feed)]) { r in
            out = r.double(0)
        }
        return out
    }

    func setWebhookFeedLastAttempt(webhookID: String, feed: String, at time: Double) throws {
        try self.webhookRun("""
            INSERT INTO webhook_feeds (webhook_id, feed, last_attempt_at) VALUES ($1, $2, $3)
            ON CONFLICT (webhook_id, feed) DO UPDATE SET last_attempt_at = excluded.last_attempt_at
            """, [.text(webhookID), .text(feed), .double(time)])
    }

    func claimDueWebhookEvents(now: Double, owner: String, leaseUntil: Double, keyID: String, limit: Int) throws -> [StoredWebhookEvent] {
        try self.lockWebhookClaims()
        // The oldest pending event of its feed, due, of an enabled webhook this instance can sign
        // for, in a feed with no attempt in flight.
        var due: [(id: String, feed: String, coalesced: Bool)] = []
        try self.webhookQuery("""
            SELECT e.event_id, e.feed, e.type FROM webhook_events e JOIN webhooks w ON w.webhook_id = e.webhook_id
            WHERE e.status = 'pending' AND e.lease_owner IS NULL AND e.next_attempt_at <= $1 AND w.enabled = 1 AND w.secret_key_id = $2
              AND NOT EXISTS (SELECT 1 FROM webhook_events x WHERE x.webhook_id = e.webhook_id AND x.feed = e.feed AND x.lease_owner IS NOT NULL)
              AND e.seq = (SELECT min(y.seq) FROM webhook_events y WHERE y.webhook_id = e.webhook_id AND y.feed = e.feed AND y.status = 'pending')
            ORDER BY e.next_attempt_at, e.seq LIMIT $3
            """, [.double(now), .text(keyID), .int(Int64(limit))]) { r in
            due.append((r.text(0), r.text(1), WebhookEventType(rawValue: r.text(2))?.isCoalesced ?? false))
        }
        var claimed: [StoredWebhookEvent] = []
        for (id, feed, coalesced) in due {
            if coalesced {
                // The feed's next commit gives the webhook a new waiting event. Marked before the
                // event is read: on PostgreSQL this takes the head row's lock, so a commit in
                // flight on the feed either lands in the body frozen below or sees the mark.
                try self.webhookRun("UPDATE webhook_feed_heads SET recheck = 1 WHERE feed_key = $1", [.text(feed)])
            }
            // Read with its feed's newest change, then claimed with that change frozen into it:
            // the body is the same on every attempt.
            guard var e = try self.eventsWhere("event_id = $1", [.text(id)]).first else { continue }
            let frozen = try self.webhookRun("""
                UPDATE webhook_events SET lease_owner = $2, lease_until = $3, ts = $4, data = $5, origin = $6, head_seq = $7
                WHERE event_id = $1 AND status = 'pending' AND lease_owner IS NULL
                """, [.text(id), .text(owner), .double(leaseUntil), .double(e.timestamp), .text(e.data), .text(e.originDeviceID), .int(e.headSeq)])
            guard frozen > 0 else { continue }
            e.leaseOwner = owner
            e.leaseUntil = leaseUntil
            claimed.append(e)
        }
        return claimed
    }

    func pruneWebhookEvents(finishedBefore before: Double, keep: Int) throws {
        let finished = "status IN ('succeeded', 'failed', 'superseded', 'cancelled')"
        try self.webhookRun("""
            DELETE FROM webhook_attempts WHERE event_id IN (SELECT event_id FROM webhook_events WHERE \(finished) AND created_at < $1)
            """, [.double(before)])
        try self.webhookRun("DELETE FROM webhook_events WHERE \(finished) AND created_at < $1", [.double(before)])
        // Beyond the newest `keep` finished events of a webhook.
        var over: [(String, Int64)] = []
        try self.webhookQuery("SELECT webhook_id, count(*) FROM webhook_events WHERE \(finished) GROUP BY webhook_id HAVING count(*) > $1",
                              [.int(Int64(keep))]) { r in over.append((r.text(0), r.int(1))) }
        for (webhookID, _) in over {
            var cutoff: Int64? = nil
            try self.webhookQuery("SELECT seq FROM webhook_events WHERE webhook_id = $1 AND \(finished) ORDER BY seq DESC LIMIT 1 OFFSET $2",
                                  [.text(webhookID), .int(Int64(keep))]) { r in cutoff = r.int(0) }
            guard let cutoff else { continue }
            try self.webhookRun("""
                DELETE FROM webhook_attempts WHERE event_id IN (SELECT event_id FROM webhook_events WHERE webhook_id = $1 AND \(finished) AND seq <= $2)
                """, [.text(webhookID), .int(cutoff)])
            try self.webhookRun("DELETE FROM webhook_events WHERE webhook_id = $1 AND \(finished) AND seq <= $2", [.text(webhookID), .int(cutoff)])
        }
    }
}

private let webhookColumnList = """
    webhook_id, scope, account_id, url, events, description, enabled, disabled_reason, disabled_at, min_interval, created_at,
    updated_at, secret, secret_key_id, secret_created_at, prev_secret, prev_secret_key_id, prev_secret_created_at,
    prev_secret_expires_at, secret_serial, consecutive_failures, last_success_at, last_failure_at, last_ping_at
    """

private let eventColumnList = """
    seq, event_id, webhook_id, account_id, feed, type, status, created_at, ts, data, origin, attempts, attempted,
    next_attempt_at, superseded_by, lease_owner, lease_until, manual, head_seq
    """

/// Statement texts built from the column list once, not per call (an attempt's outcome updates its webhook).
enum WebhookStatementTexts {
    static let insertWebhook: String = {
        let placeholders = (1...24).map { "$\($0)" }.joined(separator: ", ")
        return "INSERT INTO webhooks (\(webhookColumnList)) VALUES (\(placeholders))"
    }()

    static let insertEvent: String = {
        let columns = eventColumnList.split(separator: ",").dropFirst().map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        let placeholders = (1...columns.count).map { "$\($0)" }.joined(separator: ", ")
        return "INSERT INTO webhook_events (\(columns.joined(separator: ", "))) VALUES (\(placeholders)) RETURNING seq"
    }()

    static let updateEvent: String = {
        let columns = eventColumnList.split(separator: ",").dropFirst(2).map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        let sets = columns.enumerated().map { "\($0.element) = $\($0.offset + 2)" }.joined(separator: ", ")
        return "UPDATE webhook_events SET \(sets) WHERE event_id = $1"
    }()

    static let updateUnclaimedEvent = updateEvent + " AND lease_owner IS NULL AND status = 'pending'"

    static let updateWebhook: String = {
        let names = webhookColumnList.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        let sets = names.enumerated().dropFirst().map { "\($0.element) = $\($0.offset + 1)" }.joined(separator: ", ")
        return "UPDATE webhooks SET \(sets) WHERE webhook_id = $1"
    }()
}
