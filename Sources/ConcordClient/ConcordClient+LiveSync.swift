import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Change feeds as streams: each long-polls the server (`wait=`), so a change made on
/// another device arrives within moments, and reconnects by itself after a lost connection or a
/// restarting server, resuming from the last change it yielded — so every change is yielded
/// exactly once, in order.
extension ConcordClient {
    /// How the change streams wait and reconnect.
    public struct LiveSyncOptions: Sendable {
        /// Seconds one poll is held by the server when nothing is new (the server may cap it).
        public var wait: Double
        /// Waits between reconnection attempts: from `initialDelay`, doubling up to `maxDelay`.
        public var initialDelay: Double
        public var maxDelay: Double
        /// Changes per page (the server's default when nil).
        public var pageSize: Int?

        public init(wait: Double = 30, initialDelay: Double = 0.25, maxDelay: Double = 10, pageSize: Int? = nil) {
            self.wait = wait
            self.initialDelay = initialDelay
            self.maxDelay = maxDelay
            self.pageSize = pageSize
        }
    }

    /// Every change of this device's library after `token`, as it happens. The stream ends with an
    /// error only for what reconnecting cannot fix: an expired or invalid token
    /// (`persistentChangeTokenExpired`: refetch the library and start again from
    /// `currentChangeToken()`), a revoked token, a deleted device. Cancel the task to stop it.
    public func changes(since token: ChangeToken, options: LiveSyncOptions = LiveSyncOptions()) -> AsyncThrowingStream<PersistentChange, any Error> {
        self.liveStream(since: token, options: options) { since in
            let page = try await self.pollPersistentChangePage(since: since, wait: options.wait, limit: options.pageSize)
            return (page.changes, page.changeToken)
        }
    }

    /// Every change of the account's journals after `token`, as it happens (as `changes(since:)`).
    public func journalChanges(since token: ChangeToken, options: LiveSyncOptions = LiveSyncOptions()) -> AsyncThrowingStream<JournalChange, any Error> {
        self.liveStream(since: token, options: options) { since in
            let page = try await self.pollJournalChangePage(since: since, wait: options.wait, limit: options.pageSize)
            return (page.changes, page.changeToken)
        }
    }

    /// One page of the library feed after `token`, held by the server up to `wait` seconds while
    /// there is nothing new (then empty, with `token` again).
    public func pollPersistentChangePage(since token: ChangeToken, wait: Double, limit: Int? = nil) async throws -> PersistentChangePage {
        try await self.fetchPersistentChangePage(since: token, limit: limit, wait: wait)
    }

    /// One page of the journal feed after `token`, held up to `wait` seconds while nothing is new.
    public func pollJournalChangePage(since token: ChangeToken, wait: Double, limit: Int? = nil) async throws -> JournalChangePage {
        try await self.fetchJournalChangePage(since: token, limit: limit, wait: wait)
    }

    /// A stream fed by `poll` from `token` on: yields each change, moves `since` past it, and on a
    /// failure that a retry may fix waits (growing) and polls again from where it stood.
    private func liveStream<Change: Sendable>(
        since token: ChangeToken, options: LiveSyncOptions,
        poll: @escaping @Sendable (ChangeToken) async throws -> ([Change], ChangeToken)
    ) -> AsyncThrowingStream<Change, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                var since = token
                var failures = 0
                while !Task.isCancelled {
                    do {
                        let (changes, next) = try await poll(since)
                        failures = 0
                        for change in changes { continuation.yield(change) }
                        since = next
                    } catch {
                        if Task.isCancelled { break }
                        guard Self.reconnectionMayHelp(error) else {
                            continuation.finish(throwing: error)
                            return
                        }
                        failures += 1
                        let delay = min(options.maxDelay, options.initialDelay * pow(2, Double(failures - 1)))
                        try? await Self.sleep(seconds: delay * Double.random(in: 0.5...1))
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Whether polling again later may succeed: lost connections, a server restarting or
    /// overloaded (5xx, 429, 408). Not: a bad or expired token, a revoked credential, a deleted device.
    static func reconnectionMayHelp(_ error: any Error) -> Bool {
        switch error {
        case is URLError: return true
        case let error as ConcordError: return error.status >= 500 || error.status == 429 || error.status == 408 || error.status == 0
        default: return false
        }
    }
}
