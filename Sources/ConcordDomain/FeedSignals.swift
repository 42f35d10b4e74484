import Synchronization

/// A change feed that may gain entries: a device's library history or an account's journal
/// feed. Long-polls wait on one.
public enum FeedTopic: Hashable, Sendable {
    case library(DeviceRef)
    case journals(accountID: String)

    /// The account whose writes move this feed.
    public var accountID: String {
        switch self {
        case .library(let device): return device.accountID
        case .journals(let accountID): return accountID
        }
    }
}

/// What a feed signal says: these feeds gained committed entries, or (after a lost connection to
/// the other instances) any feed may have, so every waiter should look again.
public enum FeedSignal: Sendable, Equatable {
    case committed([FeedTopic])
    case anyMayHaveChanged
    /// New webhook events were committed, by this instance or another (the delivery engine's cue).
    case webhookEventsQueued
}

/// Where a store announces that change feeds gained committed entries: after its own commits,
/// and (PostgreSQL) after other instances' commits it hears of. Observers run on the thread that
/// publishes — a worker right after its commit, or the store's listener — so they must be quick.
public final class FeedSignals: Sendable {
    private let observers = Mutex<[@Sendable (FeedSignal) -> Void]>([])

    public init() {}

    /// Adds an observer for the store's lifetime.
    public func observe(_ observer: @escaping @Sendable (FeedSignal) -> Void) {
        self.observers.withLock { $0.append(observer) }
    }

    public func publish(_ signal: FeedSignal) {
        if case .committed(let topics) = signal, topics.isEmpty { return }
        let current = self.observers.withLock { $0 }
        for observer in current { observer(signal) }
    }
}
