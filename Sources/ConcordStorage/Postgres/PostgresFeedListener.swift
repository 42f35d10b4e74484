import ConcordDomain
import Foundation
import Synchronization

/// Cross-instance feed signals: a write transaction that appended to a change feed sends
/// `NOTIFY concord_feeds` (PostgreSQL delivers it at commit, never for a rollback); every instance
/// keeps one connection listening and republishes what other instances committed on its own
/// `FeedSignals`. Its own notifications it skips: they were published locally after the commit.
///
/// A payload is `<instance> j <account>` or `<instance> l <account> <device>` (IDs are UUIDs, so
/// spaces separate them safely). When the listening connection is lost, notifications sent
/// meanwhile are lost with it: after reconnecting, the listener publishes `anyMayHaveChanged` so
/// every waiter looks again.
final class PostgresFeedListener: Sendable {
    static let channel = "concord_feeds"

    let instanceID: String
    private let parameters: [(String, String)]
    private let signals: FeedSignals
    private let stopped = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(parameters: [(String, String)], signals: FeedSignals, instanceID: String = UUID().uuidString) {
        self.parameters = parameters
        self.signals = signals
        self.instanceID = instanceID
    }

    /// The payload a transaction that queued webhook events sends (PostgreSQL sends one per
    /// transaction, however many events it queued).
    static let webhookPayload = "- w"

    /// The payload announcing `topic` from this instance.
    func payload(_ topic: FeedTopic) -> String {
        switch topic {
        case .journals(let accountID): return "\(self.instanceID) j \(accountID)"
        case .library(let device): return "\(self.instanceID) l \(device.accountID) \(device.deviceID)"
        }
    }

    /// The topic another instance announced; nil for this instance's own or a malformed payload.
    static func topic(_ payload: String, skipping instanceID: String) -> FeedTopic? {
        let parts = payload.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count >= 3, parts[0] != instanceID else { return nil }
        switch (parts[1], parts.count) {
        case ("j", 3): return .journals(accountID: String(parts[2]))
        case ("l", 4): return .library(DeviceRef(accountID: String(parts[2]), deviceID: String(parts[3])))
        default: return nil
        }
    }

    func start() {
        let thread = Thread { [self] in self.run() }
        thread.name = "concord.feed-listener"
        thread.start()
    }

    /// Stops listening; returns once the thread has closed its connection (within about 0.25 s).
    func stop() {
        guard !self.stopped.exchange(true, ordering: .relaxed) else { return }
        self.finished.wait()
    }

    private func run() {
        defer { self.finished.signal() }
        var backoff = 0.1
        while !self.stopped.load(ordering: .relaxed) {
            guard let connection = try? PGConnection(parameters: self.parameters),
                  (try? connection.execute("LISTEN " + Self.channel)) != nil else {
                Thread.sleep(forTimeInterval: backoff)
                backoff = min(backoff * 2, 2)
                continue
            }
            backoff = 0.1
            // Whatever was committed before this connection listened (first start, or a
            // reconnect) was not heard: every waiter looks again.
            self.signals.publish(.anyMayHaveChanged)
            while !self.stopped.load(ordering: .relaxed) {
                guard let payloads = try? connection.notifications(timeoutMs: 250) else { break }
                let topics = payloads.compactMap { Self.topic($0, skipping: self.instanceID) }
                self.signals.publish(.committed(topics))
                if payloads.contains(Self.webhookPayload) { self.signals.publish(.webhookEventsQueued) }
            }
            connection.close()
        }
    }
}
