import ConcordDomain

/// The observers of one engine transaction (`AccountWriteTransaction.add(observer:)`), and the one
/// way both engines' transactions report to them: each mapping-changing method reports its
/// `MappingMutation` as it is called — before its statements, also for an empty batch (the domain
/// has always counted every such call as a change) — and each feed append its `FeedTopic`. A
/// statement that fails throws out of the transaction, which rolls back: what the observers
/// learned is dropped with it (they act only after a commit).
final class TransactionObservers {
    private var observers: [any TransactionObserver] = []
    /// Whether any mapping change was reported (`AccountWriteTransaction.changedMapping`).
    private(set) var changedMapping = false

    func add(_ observer: any TransactionObserver) { self.observers.append(observer) }

    func didChange(_ mutation: @autoclosure () -> MappingMutation) {
        self.changedMapping = true
        for observer in self.observers { observer.transactionDidChange(mutation()) }
    }

    /// The device's token stopped (rotated, the device deleted or replaced): both feeds it may be
    /// polling are announced, so a poll held with the dead token wakes and is refused.
    func tokenRevoked(_ device: DeviceRef) {
        self.didAppend(to: .library(device))
        self.didAppend(to: .journals(accountID: device.accountID))
    }

    func didAppend(to feed: FeedTopic) {
        for observer in self.observers { observer.transactionDidAppend(to: feed) }
    }

    func didQueueWebhookEvents() {
        for observer in self.observers { observer.transactionDidQueueWebhookEvents() }
    }
}

/// Collects the feeds a write transaction appended to, for its store to announce once it has
/// committed (`ConcordStore.feedSignals`; a rollback announces nothing).
final class FeedRecorder: TransactionObserver {
    private(set) var feeds: [FeedTopic] = []
    /// New webhook events: announced once committed, so the delivery engine looks only when there is
    /// something new (a change an event already waiting takes in place needs no look).
    private(set) var webhookEventsQueued = false
    func transactionDidAppend(to feed: FeedTopic) { self.feeds.append(feed) }
    func transactionDidQueueWebhookEvents() { self.webhookEventsQueued = true }

    /// What the store announces after the commit.
    func publish(on signals: FeedSignals) {
        signals.publish(.committed(self.feeds))
        if self.webhookEventsQueued { signals.publish(.webhookEventsQueued) }
    }
}
