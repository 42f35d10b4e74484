import ConcordDomain

/// The observers of one engine transaction (`AccountWriteTransaction.add(observer:)`), and the one
/// way both engines' transactions report to them: each mapping-changing method reports its
/// `MappingMutation` once the change is made, each feed append its `FeedTopic`.
final class TransactionObservers {
    private var observers: [any TransactionObserver] = []

    func add(_ observer: any TransactionObserver) { self.observers.append(observer) }

    /// Runs `change`, then reports `mutation` — also when `change` returned early on an empty batch
    /// (the observers hear of every call that succeeded, as the domain has always counted them).
    func changing(_ mutation: @autoclosure () -> MappingMutation, _ change: () throws -> Void) rethrows {
        try change()
        self.didChange(mutation())
    }

    func didChange(_ mutation: @autoclosure () -> MappingMutation) {
        for observer in self.observers { observer.transactionDidChange(mutation()) }
    }

    func didAppend(to feed: FeedTopic) {
        for observer in self.observers { observer.transactionDidAppend(to: feed) }
    }
}

/// Collects the feeds a write transaction appended to, for its store to announce once it has
/// committed (`ConcordStore.feedSignals`; a rollback announces nothing).
final class FeedRecorder: TransactionObserver {
    private(set) var feeds: [FeedTopic] = []
    func transactionDidAppend(to feed: FeedTopic) { self.feeds.append(feed) }
}
