import ConcordDomain
import Foundation

/// A pool of at most `maximumCount` connections of one kind, opened on demand, each used by one
/// thread at a time between `get()` and `release(_:)`; both engines keep theirs in one (SQLite its
/// readers, PostgreSQL every connection). GRDB's `Pool<T>` is the model.
///
/// A caller finding every connection in use waits for one (at most `waitLimit` seconds, when set).
/// A connection that is not usable any more when it comes back is discarded and its slot freed, so
/// the next `get()` opens a fresh one. After `close` nothing is handed out: idle connections are
/// discarded at once, the ones in use when they come back.
final class Pool<Connection>: @unchecked Sendable {
    // @unchecked Sendable: `state` is only touched while holding `lock`; a connection is used
    // by exactly one thread between `get()` and `release(_:)`.
    private struct State {
        var idle: [Connection]
        var open: Int
        var closed = false
        /// `close(waitingForConnectionsInUse: true)` waits on `drained` for the last one back.
        var drainWaiters = 0
    }
    private var state: State
    private let lock = NSLock()
    /// One permit per connection that may be handed out: `get()` takes one (waiting, within
    /// `waitLimit`, while every connection is in use), `release(_:)` and a failed open give it back.
    private let permits: DispatchSemaphore
    private let drained = DispatchSemaphore(value: 0)
    private let maximumCount: Int
    private let waitLimit: Double?
    private let messages: Messages
    private let makeConnection: () throws -> Connection
    private let isUsable: (Connection) -> Bool
    private let discard: (Connection) -> Void

    /// What `get()` answers, as `DomainError.unavailable` (503, retry), when it hands out nothing.
    struct Messages {
        /// After `close`.
        var closed: String
        /// A new connection could not be opened.
        var cannotOpen: String
        /// `waitLimit` passed with every connection in use.
        var busy: String = ""
    }

    /// - Parameters:
    ///   - initial: connections already open (counted against `maximumCount`), idle.
    ///   - make: opens a new connection (its error is not passed on: `messages.cannotOpen`).
    ///   - isUsable: whether a connection coming back can serve again.
    ///   - discard: what to do with a connection leaving the pool (close it).
    init(maximumCount: Int, waitLimit: Double? = nil, initial: [Connection] = [], messages: Messages,
         make: @escaping () throws -> Connection, isUsable: @escaping (Connection) -> Bool = { _ in true },
         discard: @escaping (Connection) -> Void = { _ in }) {
        self.maximumCount = max(1, maximumCount)
        self.waitLimit = waitLimit
        self.state = State(idle: initial, open: initial.count)
        self.permits = DispatchSemaphore(value: self.maximumCount)
        self.messages = messages
        self.makeConnection = make
        self.isUsable = isUsable
        self.discard = discard
    }

    private func withState<T>(_ body: (inout State) -> T) -> T {
        self.lock.lock()
        defer { self.lock.unlock() }
        return body(&self.state)
    }

    /// Connections open right now, idle or in use.
    var openCount: Int { self.withState { $0.open } }

    /// An idle connection, else a new one while fewer than `maximumCount` are open, else the next
    /// one released.
    func get() throws -> Connection {
        if let waitLimit {
            guard self.permits.wait(timeout: .now() + waitLimit) == .success else {
                throw DomainError.unavailable(message: self.withState { $0.closed } ? self.messages.closed : self.messages.busy)
            }
        } else {
            self.permits.wait()
        }
        let next = self.withState { s -> PoolNext<Connection> in
            if s.closed { return .closed }
            if let c = s.idle.popLast() { return .idle(c) }
            s.open += 1
            return .open
        }
        switch next {
        case .closed:
            self.permits.signal()   // passed on: every waiter learns of the close
            throw DomainError.unavailable(message: self.messages.closed)
        case .idle(let c):
            return c
        case .open:
            do {
                return try self.makeConnection()
            } catch {
                self.freeSlot()
                throw DomainError.unavailable(message: self.messages.cannotOpen)
            }
        }
    }

    /// Gives back a connection `get()` handed out; one that is not usable, or comes back after
    /// `close`, is discarded.
    func release(_ c: Connection) {
        guard self.isUsable(c) else {
            self.discard(c)
            self.freeSlot()
            return
        }
        let kept = self.withState { s -> Bool in
            if s.closed { return false }
            s.idle.append(c)
            return true
        }
        if kept {
            self.permits.signal()
        } else {
            self.discard(c)
            self.freeSlot()
        }
    }

    /// `body` with a connection of the pool, released after.
    func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        let c = try self.get()
        defer { self.release(c) }
        return try body(c)
    }

    /// Frees the slot of a connection that was never opened or is gone, and lets the next caller in.
    private func freeSlot() {
        let drainedNow = self.withState { s -> Int in
            s.open -= 1
            guard s.closed, s.open == 0 else { return 0 }
            defer { s.drainWaiters = 0 }
            return s.drainWaiters
        }
        for _ in 0..<drainedNow { self.drained.signal() }
        self.permits.signal()
    }

    /// Hands out nothing from now on and discards the idle connections; with `wait`, returns once
    /// the connections in use have come back (and were discarded).
    func close(waitingForConnectionsInUse wait: Bool) {
        let (leaving, mustWait) = self.withState { s -> ([Connection], Bool) in
            s.closed = true
            let leaving = s.idle
            s.idle.removeAll()
            s.open -= leaving.count
            if wait, s.open > 0 { s.drainWaiters += 1 }
            return (leaving, wait && s.open > 0)
        }
        for c in leaving { self.discard(c) }
        // Waiters blocked for a permit wake and learn of the close (each passes the permit on).
        self.permits.signal()
        if mustWait { self.drained.wait() }
    }
}

/// What `Pool.get()` does once it holds a permit.
private enum PoolNext<Connection> {
    case closed, idle(Connection), open
}
