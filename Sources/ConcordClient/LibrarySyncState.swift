import Foundation

/// What a client remembers of its device's library between launches: the change token of this
/// installation's last library write. Like `CKSyncEngine`'s state serialization, the app saves it
/// (it is `Codable`) and gives it back to the next launch's client.
///
/// With it the client sends `If-Match` on every library write by itself, so the answer
/// `LibraryChangedElsewhereError` means what it says: another installation holding this device's
/// token (a restored backup, a phone transferred to a new one) wrote since. Keep it in the app's own
/// storage — which a backup carries — and the device token in a `…ThisDeviceOnly` Keychain item.
///
/// ```swift
/// let saved = try? JSONDecoder().decode(LibrarySyncState.self, from: Data(contentsOf: stateURL))
/// let phone = ConcordClient(baseURL: server, token: deviceToken, librarySyncState: saved ?? LibrarySyncState()) { state in
///     try? JSONEncoder().encode(state).write(to: stateURL, options: .atomic)
/// }
/// ```
public struct LibrarySyncState: Sendable, Hashable, Codable {
    /// The library's change token after this installation's last write. Nil: none yet — the next
    /// write is sent without a precondition, and its answer's token is kept from then on.
    public var changeToken: ChangeToken?
    /// A write went out whose outcome is unknown (the connection was lost after it may have been
    /// delivered). Before the next write the client reads the library's history since
    /// `changeToken`: one change is taken as that write, none as the write not applied.
    public var writeUnconfirmed: Bool

    public init(changeToken: ChangeToken? = nil, writeUnconfirmed: Bool = false) {
        self.changeToken = changeToken
        self.writeUnconfirmed = writeUnconfirmed
    }

    private enum Keys: String, CodingKey { case changeToken, writeUnconfirmed }

    /// Reads what this or a later version wrote (members it does not know are ignored).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        self.changeToken = try c.decodeIfPresent(ChangeToken.self, forKey: .changeToken)
        self.writeUnconfirmed = try c.decodeIfPresent(Bool.self, forKey: .writeUnconfirmed) ?? false
    }
}

extension ChangeToken {
    /// `If-Match: *` — a library write that applies whatever the current token: for an app that
    /// decided to overwrite, never for an ordinary write.
    public static let any = ChangeToken(rawValue: "*")
}

/// A client's `LibrarySyncState`, and the one-at-a-time order of its library writes: two writes in
/// flight at once would send one token and the second would be refused as if from a copy.
///
/// `@unchecked Sendable`: every stored var is touched only while holding `lock`.
final class LibrarySyncStore: @unchecked Sendable {
    private let lock = NSLock()
    private var current: LibrarySyncState
    private var writing = false
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private let onUpdate: (@Sendable (LibrarySyncState) -> Void)?

    init(_ state: LibrarySyncState, onUpdate: (@Sendable (LibrarySyncState) -> Void)?) {
        self.current = state
        self.onUpdate = onUpdate
    }

    var state: LibrarySyncState {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.current
    }

    /// Changes the state and tells the app (outside the lock), when it changed.
    func update(_ change: (inout LibrarySyncState) -> Void) {
        self.lock.lock()
        let before = self.current
        change(&self.current)
        let after = self.current
        self.lock.unlock()
        if after != before { self.onUpdate?(after) }
    }

    /// Waits until no other library write of this client runs, then holds the turn.
    func beginWrite() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            if self.takeTurnOrWait(continuation) { continuation.resume() }
        }
    }

    /// Hands the turn to the next waiting write, if any.
    func endWrite() {
        self.lock.lock()
        if self.waiting.isEmpty {
            self.writing = false
            self.lock.unlock()
        } else {
            let next = self.waiting.removeFirst()
            self.lock.unlock()
            next.resume()
        }
    }

    private func takeTurnOrWait(_ continuation: CheckedContinuation<Void, Never>) -> Bool {
        self.lock.lock()
        defer { self.lock.unlock() }
        guard self.writing else {
            self.writing = true
            return true
        }
        self.waiting.append(continuation)
        return false
    }
}

extension ConcordClient {
    /// What this client remembers of its library writes; save it (or take it from
    /// `onLibrarySyncStateUpdate`) and pass it to the next launch's client.
    public var librarySyncState: LibrarySyncState { self.librarySync.state }

    /// Runs one library write in this client's turn, with the precondition it should carry:
    /// `explicit` when the caller gave one, else the token of this installation's last write
    /// (none before the first). Keeps the answer's token; a write whose outcome is unknown is
    /// marked unconfirmed, and settled from the history before the next write.
    func trackedLibraryWrite(ifMatch explicit: ChangeToken?, _ write: (ChangeToken?) async throws -> LibraryChangeResult) async throws -> LibraryChangeResult {
        await self.librarySync.beginWrite()
        defer { self.librarySync.endWrite() }
        if explicit == nil { try await self.settleUnconfirmedWrite() }
        let precondition = explicit ?? self.librarySync.state.changeToken
        do {
            let result = try await Self.libraryWrite { try await write(precondition) }
            self.librarySync.update { $0 = LibrarySyncState(changeToken: result.changeToken) }
            return result
        } catch let error where Self.refusedWithNothingStored(error) {
            throw error
        } catch {
            self.librarySync.update { $0.writeUnconfirmed = true }
            throw error
        }
    }

    /// An answer saying the server stored nothing: a 4xx (a `412`, a malformed body, a denied
    /// device) — but not the idempotency key's `409`s, which say the first send was applied
    /// (`idempotencyKeyAnswerLost`) or may still be (`idempotencyKeyInUse`).
    static func refusedWithNothingStored(_ error: any Error) -> Bool {
        switch error {
        case is LibraryChangedElsewhereError: true
        case let error as ConcordError: (400..<500).contains(error.status) && !error.name.hasPrefix("idempotencyKey")
        case let error as ConcordPhotosError: error.status.map { (400..<500).contains($0) } ?? false
        default: false
        }
    }

    /// After a write whose answer was lost: the history since the kept token lists that write
    /// (one change: it applied, its token is ours) or nothing (it did not). More than one change
    /// means another installation wrote too: the token stays, and the next write is refused.
    private func settleUnconfirmedWrite() async throws {
        let state = self.librarySync.state
        guard state.writeUnconfirmed else { return }
        guard let token = state.changeToken else {
            self.librarySync.update { $0.writeUnconfirmed = false }
            return
        }
        let since: PersistentChangeFetchResult
        do {
            since = try await self.fetchPersistentChanges(since: token)
        } catch let error as ConcordPhotosError where error.code == .persistentChangeTokenExpired {
            // Older than the history kept: nothing to learn from it; the write goes with the kept token.
            self.librarySync.update { $0.writeUnconfirmed = false }
            return
        }
        self.librarySync.update { state in
            state.writeUnconfirmed = false
            if since.count == 1 { state.changeToken = since.changeToken }
        }
    }
}
