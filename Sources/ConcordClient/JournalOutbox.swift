import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A persisted outbox of journal writes: writes made offline are queued in a file the
/// app chooses, and `flush()` sends them in order once the server can be reached.
///
/// Each queued write carries an `Idempotency-Key` chosen when it was queued and kept in the file,
/// so a write whose answer was lost — the connection dropped, the app was killed — is answered
/// from the server's record when sent again, never applied twice.
///
/// A write the server refuses is taken off the queue and handed to `onRejected`: a `412
/// versionMismatch` (another device changed the journal or entry first) with the current version
/// in `error.version`, so the app can merge and queue again; or any other refusal (`404` for a
/// journal deleted meanwhile, `422` for photos that cannot be mapped).
///
/// ```swift
/// let outbox = try JournalOutbox(client: device, stateFile: documents.appendingPathComponent("outbox.json")) { rejection in
///     if rejection.isConflict { await merge(rejection.write, currentVersion: rejection.currentVersion) }
/// }
/// try await outbox.enqueue(.putEntry(journalID: id, entryID: "day-1", text: text, photos: photos, ifMatch: version))
/// try await outbox.flush()   // again whenever the network comes back
/// ```
public actor JournalOutbox {
    /// A journal write, as the matching `ConcordClient` method takes it.
    public enum JournalWrite: Sendable, Hashable, Codable {
        case createJournal(title: String)
        case renameJournal(journalID: String, title: String, ifMatch: String?)
        case deleteJournal(journalID: String, ifMatch: String?)
        case putEntry(journalID: String, entryID: String, text: String, photos: [JournalPhotoReference], ifMatch: String?)
        case deleteEntry(journalID: String, entryID: String, ifMatch: String?)
        case applySelection(journalID: String, entryID: String, localIdentifiers: [String], cancelled: Bool, ifMatch: String?)
        case addToEntry(journalID: String, entryID: String, localIdentifiers: [String], ifMatch: String?)
    }

    /// A write in the queue.
    public struct QueuedWrite: Sendable, Hashable, Codable, Identifiable {
        public let id: UUID
        public let write: JournalWrite
        public let queuedAt: Date
        /// Sent as `Idempotency-Key` with every attempt of this write.
        let idempotencyKey: String
    }

    /// A queued write the server refused; it is no longer queued.
    public struct Rejection: Sendable {
        public var write: QueuedWrite
        /// A `ConcordError` (or `ConcordPhotosError`, e.g. `accessUserDenied`).
        public var error: any Error & Sendable
        /// `412 versionMismatch`: another device changed it first.
        public var isConflict: Bool { (self.error as? ConcordError)?.status == 412 }
        /// With a conflict: the version the journal or entry has now.
        public var currentVersion: String? { (self.error as? ConcordError)?.version }
    }

    /// What one `flush()` did.
    public struct FlushResult: Sendable, Equatable {
        /// Writes the server accepted (or had already accepted: a replayed answer).
        public var sent: Int
        /// Writes the server refused (reported to `onRejected`).
        public var rejected: Int
        /// Writes still queued: the server could not be reached (or answered 5xx) for the first of them.
        public var remaining: Int
    }

    private let client: ConcordClient
    private let stateFile: URL
    private let onRejected: @Sendable (Rejection) async -> Void
    private var queue: [QueuedWrite]
    private var flushing = false

    /// Opens the outbox kept in `stateFile` (created on the first write), with what an earlier
    /// launch left queued.
    public init(client: ConcordClient, stateFile: URL, onRejected: @escaping @Sendable (Rejection) async -> Void = { _ in }) throws {
        self.client = client
        self.stateFile = stateFile
        self.onRejected = onRejected
        if FileManager.default.fileExists(atPath: stateFile.path) {
            self.queue = try JSONDecoder().decode(State.self, from: Data(contentsOf: stateFile)).queue
        } else {
            self.queue = []
        }
    }

    /// The writes waiting to be sent, oldest first.
    public var pending: [QueuedWrite] { self.queue }

    /// Queues `write` (saved to the state file before this returns).
    @discardableResult
    public func enqueue(_ write: JournalWrite) throws -> QueuedWrite {
        let queued = QueuedWrite(id: UUID(), write: write, queuedAt: Date(), idempotencyKey: UUID().uuidString)
        self.queue.append(queued)
        do {
            try self.save()
        } catch {
            self.queue.removeLast()
            throw error
        }
        return queued
    }

    /// Sends the queued writes in order. Stops at the first that cannot reach the server (the
    /// rest stay queued, in order, for the next flush); a refused write is reported and dropped.
    /// A flush already running makes this one return at once (nothing sent).
    @discardableResult
    public func flush() async throws -> FlushResult {
        guard !self.flushing else { return FlushResult(sent: 0, rejected: 0, remaining: self.queue.count) }
        self.flushing = true
        defer { self.flushing = false }
        var result = FlushResult(sent: 0, rejected: 0, remaining: 0)
        while let next = self.queue.first {
            do {
                try await ConcordClient.$idempotencyKey.withValue(next.idempotencyKey) {
                    try await Self.send(next.write, through: self.client)
                }
                result.sent += 1
            } catch where ConcordClient.reconnectionMayHelp(error) {
                break
            } catch let error as ConcordError {
                try await self.reject(next, error, &result)
                continue
            } catch let error as ConcordPhotosError {
                try await self.reject(next, error, &result)
                continue
            }
            self.queue.removeFirst()
            try self.save()
        }
        result.remaining = self.queue.count
        return result
    }

    /// Drops the first queued write, which the server refused, and reports it.
    private func reject(_ write: QueuedWrite, _ error: any Error & Sendable, _ result: inout FlushResult) async throws {
        result.rejected += 1
        self.queue.removeFirst()
        try self.save()
        await self.onRejected(Rejection(write: write, error: error))
    }

    private static func send(_ write: JournalWrite, through client: ConcordClient) async throws {
        switch write {
        case .createJournal(let title):
            _ = try await client.createJournal(title: title)
        case .renameJournal(let journalID, let title, let ifMatch):
            try await client.renameJournal(journalID, title: title, ifMatch: ifMatch)
        case .deleteJournal(let journalID, let ifMatch):
            try await client.deleteJournal(journalID, ifMatch: ifMatch)
        case .putEntry(let journalID, let entryID, let text, let photos, let ifMatch):
            try await client.putEntry(journalID: journalID, entryID: entryID, text: text, photos: photos, ifMatch: ifMatch)
        case .deleteEntry(let journalID, let entryID, let ifMatch):
            try await client.deleteEntry(journalID: journalID, entryID: entryID, ifMatch: ifMatch)
        case .applySelection(let journalID, let entryID, let localIdentifiers, let cancelled, let ifMatch):
            try await client.applySelection(journalID: journalID, entryID: entryID, localIdentifiers: localIdentifiers, cancelled: cancelled, ifMatch: ifMatch)
        case .addToEntry(let journalID, let entryID, let localIdentifiers, let ifMatch):
            try await client.addToEntry(journalID: journalID, entryID: entryID, localIdentifiers: localIdentifiers, ifMatch: ifMatch)
        }
    }

    /// The file's content: versioned, so a later client can read what this one wrote.
    private struct State: Codable {
        var version = 1
        var queue: [QueuedWrite]
    }

    /// Writes the queue atomically (a new file renamed over the old): a crash leaves one or the other.
    private func save() throws {
        let data = try JSONEncoder().encode(State(queue: self.queue))
        try data.write(to: self.stateFile, options: .atomic)
    }
}

/// The outbox's earlier name: it was never a sync engine, only an outbox of journal writes.
@available(*, deprecated, renamed: "JournalOutbox")
public typealias ConcordSyncEngine = JournalOutbox
