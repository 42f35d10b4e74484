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
    // @unchecked Sendable: `idle`, `open` and `closed` are only touched while holding `condition`;
    // a connection is used by exactly one thread between `get()` and `release(_:)`.
    private let condition = NSCondition()
    private var idle: [Connection]
    private var open: Int
    private var closed = false
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
        self.idle = initial
        self.open = initial.count
        self.messages = messages
        self.makeConnection = make
        self.isUsable = isUsable
        self.discard = discard
    }

    /// Connections open right now, idle or in use.
    var openCount: Int { self.condition.withLock { self.open } }

    /// An idle connection, else a new one while fewer than `maximumCount` are open, else the next
    /// one released.
    func get() throws -> Connection {
        let deadline = self.waitLimit.map { Date().addingTimeInterval($0) }
        self.condition.lock()
        while true {
            guard !self.closed else {
                self.condition.unlock()
                throw DomainError.unavailable(message: self.messages.closed)
            }
            if let c = self.idle.popLast() {
                self.condition.unlock()
                return c
            }
            if self.open < self.maximumCount {
                self.open += 1
                self.condition.unlock()
                do {
                    return try self.makeConnection()
                } catch {
                    self.freeSlot()
                    throw DomainError.unavailable(message: self.messages.cannotOpen)
                }
            }
            if let deadline {
                guard self.condition.wait(until: deadline) else {
                    self.condition.unlock()
                    throw DomainError.unavailable(message: self.messages.busy)
                }
            } else {
                self.condition.wait()
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
        self.condition.lock()
        if self.closed {
            self.discard(c)
            self.open -= 1
        } else {
            self.idle.append(c)
        }
        // Broadcast: `get()` callers and `close(waitingForConnectionsInUse:)` wait on one condition.
        self.condition.broadcast()
        self.condition.unlock()
    }

    /// `body` with a connection of the pool, released after.
    func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        let c = try self.get()
        defer { self.release(c) }
        return try body(c)
    }

    /// Frees the slot of a connection that was never opened or is gone, and wakes the waiters.
    private func freeSlot() {
        self.condition.lock()
        self.open -= 1
        self.condition.broadcast()
        self.condition.unlock()
    }

    /// Hands out nothing from now on and discards the idle connections; with `wait`, returns once
    /// the connections in use have come back (and were discarded).
    func close(waitingForConnectionsInUse wait: Bool) {
        self.condition.lock()
        self.closed = true
        let leaving = self.idle
        self.idle.removeAll()
        self.open -= leaving.count
        self.condition.broadcast()
        for c in leaving { self.discard(c) }
        if wait { while self.open > 0 { self.condition.wait() } }
        self.condition.unlock()
    }
}
