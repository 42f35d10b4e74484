/// Learns what an account's write transaction changes, as the engine's transaction makes each change
/// (GRDB's `TransactionObserver` is the model): the engines report, the observers decide what to keep.
/// `ServiceCore.write` observes the mapping changes (the mapping index applies them once the
/// transaction has committed); the stores observe the feeds appended to (announced once it has
/// committed). Added with `AccountWriteTransaction.add(observer:)`, an observer hears of the
/// transaction's changes from then until it ends; nothing it learned counts unless the transaction
/// commits (a failed statement throws, and the transaction rolls back).
///
/// A new mapping-changing storage method reports its `MappingMutation` in both engines, whenever it
/// is called (also with an empty batch).
public protocol TransactionObserver: AnyObject {
    /// The transaction changed the account's mapping tables. The mutation is built only if the
    /// observer asks for it (building one may copy a whole batch).
    func transactionDidChange(_ mutation: @autoclosure () -> MappingMutation)
    /// The transaction appended to a change feed (a device's library history, the account's journals).
    func transactionDidAppend(to feed: FeedTopic)
    /// The transaction queued webhook events that are new (not a change taken in place by an event
    /// already waiting): the delivery engine has something to look at once it commits.
    func transactionDidQueueWebhookEvents()
}

extension TransactionObserver {
    public func transactionDidChange(_ mutation: @autoclosure () -> MappingMutation) {}
    public func transactionDidAppend(to feed: FeedTopic) {}
    public func transactionDidQueueWebhookEvents() {}
}
