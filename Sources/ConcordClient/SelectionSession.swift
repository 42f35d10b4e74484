import Foundation

/// A photo picker that reports its selection as it changes (`PHPickerConfiguration`'s
/// `selectionBehavior = .continuous`), kept in one journal entry.
///
/// Call `update(_:)` at every change of the picker, from any thread: it returns at once. At most
/// one request is in flight; when it finishes, only the latest selection is sent (the ones in
/// between are skipped — each is the picker's whole selection, so the latest says it all). Each
/// request carries the session's ID and an increasing sequence number, so the server applies none
/// that an earlier one overtook on the way. A request that fails for the network or a busy server
/// is retried (growing waits) unless a newer selection replaced it; one the server refuses (a photo
/// that cannot be mapped, a deleted entry) is reported in `lastError` and dropped.
///
/// ```swift
/// let session = phone.selectionSession(journalID: id, entryID: "day-1") { entry in show(entry) }
/// func picker(_ picker: PHPickerViewController, didFinishPicking results: [PHPickerResult]) {
///     session.update(results.compactMap(\.assetIdentifier))   // at every change
/// }
/// let entry = try await session.finish()   // when the picker is dismissed
/// ```
public final class SelectionSession: Sendable {
    /// The entry the selections go to.
    public let journalID: String
    public let entryID: String
    /// Sent as `"session"` with every selection: 1–64 characters of `A-Z a-z 0-9 - _`.
    public let sessionID: String

    private let client: ConcordClient
    private let retry: ConcordClient.LiveSyncOptions
    private let onEntry: (@Sendable (JournalEntry) -> Void)?
    private let state = Locked(State())

    private struct State {
        /// The latest selection not yet sent (or to be sent again), with its sequence once it has one.
        var pending: (localIdentifiers: [String], sequence: Int?)?
        var nextSequence = 0
        var sending = false
        var cancelled = false
        var entry: JournalEntry?
        var lastError: (any Error & Sendable)?
        var requestsSent = 0
        var idle: [CheckedContinuation<Void, Never>] = []
    }

    init(client: ConcordClient, journalID: String, entryID: String, sessionID: String,
         retry: ConcordClient.LiveSyncOptions, onEntry: (@Sendable (JournalEntry) -> Void)?) {
        self.client = client
        self.journalID = journalID
        self.entryID = entryID
        self.sessionID = sessionID
        self.retry = retry
        self.onEntry = onEntry
    }

    /// The entry as the server last answered a selection of this session (nil before the first).
    public var entry: JournalEntry? { self.state.withLock { $0.entry } }
    /// Why the last selection sent was refused (nil when it was applied).
    public var lastError: (any Error & Sendable)? { self.state.withLock { $0.lastError } }
    /// Selections sent so far, each retry counted again (fewer than `update` calls when they come fast).
    public var requestsSent: Int { self.state.withLock { $0.requestsSent } }

    /// The picker's whole selection now, in the order the person picked. Returns at once; the
    /// selection is sent when no request of this session is in flight.
    public func update(_ localIdentifiers: [String]) {
        let start = self.state.withLock { s -> Bool in
            guard !s.cancelled else { return false }
            s.pending = (localIdentifiers, nil)
            guard !s.sending else { return false }
            s.sending = true
            return true
        }
        if start { Task { await self.run() } }
    }

    /// Waits until the latest selection was sent and answered, and returns the entry as the server
    /// answered it. Throws the refusal of the last selection (`lastError`). While the server cannot
    /// be reached it keeps waiting (and retrying); `cancel()` ends the wait.
    @discardableResult
    public func finish() async throws -> JournalEntry? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = self.state.withLock { s -> Bool in
                guard s.sending else { return true }
                s.idle.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
        return try self.state.withLock { s in
            if let error = s.lastError { throw error }
            return s.entry
        }
    }

    /// Sends nothing more: a selection not yet sent is dropped (the one in flight still lands).
    public func cancel() {
        self.state.withLock { s in
            s.cancelled = true
            s.pending = nil
        }
    }

    /// Sends the pending selection until none is left; one of these runs at a time (`sending`).
    private func run() async {
        var failures = 0
        while true {
            let next = self.state.withLock { s -> (localIdentifiers: [String], sequence: Int)? in
                guard !s.cancelled, let pending = s.pending else {
                    s.sending = false
                    return nil
                }
                let sequence = pending.sequence ?? s.nextSequence
                if pending.sequence == nil { s.nextSequence += 1 }
                s.pending = nil
                s.requestsSent += 1
                return (pending.localIdentifiers, sequence)
            }
            guard let next else { break }
            do {
                let body = SelectionBody(cancelled: false, localIdentifiers: next.localIdentifiers, mode: .replace, session: self.sessionID, sequence: next.sequence)
                let answer = try await self.client.sendSelection(journalID: self.journalID, entryID: self.entryID, body, ifMatch: nil)
                failures = 0
                self.state.withLock { s in
                    s.entry = answer.entry
                    s.lastError = nil
                }
                self.onEntry?(answer.entry)
            } catch where ConcordClient.reconnectionMayHelp(error) {
                // Sent again with its number (a first send that did land makes the resend a no-op),
                // unless a newer selection took its place meanwhile.
                self.state.withLock { s in
                    if s.pending == nil { s.pending = (next.localIdentifiers, next.sequence) }
                }
                failures += 1
                let delay = min(self.retry.maxDelay, self.retry.initialDelay * pow(2, Double(failures - 1)))
                try? await ConcordClient.sleep(seconds: delay * Double.random(in: 0.5...1))
            } catch {
                let refusal: any Error & Sendable
                switch error {
                case let error as ConcordError: refusal = error
                case let error as ConcordPhotosError: refusal = error
                default: refusal = ConcordError(status: 0, name: "selectionFailed", message: "\(error)")
                }
                self.state.withLock { $0.lastError = refusal }
            }
        }
        let waiting = self.state.withLock { s -> [CheckedContinuation<Void, Never>] in
            defer { s.idle = [] }
            return s.sending ? [] : s.idle
        }
        for continuation in waiting { continuation.resume() }
    }
}

extension ConcordClient {
    /// A session for a picker that reports its selection as it changes (`selectionBehavior
    /// .continuous`), kept in entry `entryID`: call `update(_:)` at every change. `onEntry` is told
    /// the entry after each answered selection. `retry`: the waits between attempts while the
    /// server cannot be reached (`initialDelay`, doubling to `maxDelay`).
    public func selectionSession(journalID: String, entryID: String, retry: LiveSyncOptions = LiveSyncOptions(),
                                 onEntry: (@Sendable (JournalEntry) -> Void)? = nil) -> SelectionSession {
        SelectionSession(client: self, journalID: journalID, entryID: entryID, sessionID: UUID().uuidString, retry: retry, onEntry: onEntry)
    }
}

/// A value behind a lock, for the few mutable states of sendable classes.
///
/// `@unchecked Sendable`: `value` is touched only inside `withLock`.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        self.lock.lock()
        defer { self.lock.unlock() }
        return try body(&self.value)
    }
}
