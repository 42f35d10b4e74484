import ConcordDomain
import ConcordHTTP
import ConcordObservability
import ConcordTransport
import Foundation
import Synchronization

/// Long-polls of the change feeds: a request with nothing new after its token is held —
/// as a closure, no thread — until a change is committed to its feed, its wait passes, or the
/// server shuts down.
///
/// A poll is registered ("armed") *before* its query runs, so a commit during the query is not
/// missed: it marks the armed poll, which then queries again instead of parking.
final class LongPolls: Sendable {
    /// Why a parked poll is resumed.
    enum Wake: Sendable {
        case changed, timedOut, shuttingDown
        /// The client closed the connection (or its sending side): answer now, or drop it.
        case clientGone
    }

    private struct Waiter {
        let topic: FeedTopic
        /// Set once parked; nil while its query runs.
        var resume: (@Sendable (Wake) -> Void)?
        /// A signal for its topic arrived while its query ran.
        var fired = false
        /// Its deadline on the scheduler, once parked (cancelled when it is answered first).
        var timeout: ScheduledWork?
    }

    private struct State {
        var waiters: [UInt64: Waiter] = [:]
        var byTopic: [FeedTopic: Set<UInt64>] = [:]
        /// Polls registered per account (`maxWaitingPerAccount`); an account leaves with its last.
        var byAccount: [String: Int] = [:]
        var nextID: UInt64 = 1
        var closed = false
    }

    /// Held requests at most; a poll over it is answered at once.
    let maxWaiting: Int
    /// Held requests of one account at most (its share of `maxWaiting`: one device
    /// cannot take every place); 0: no share of its own. A poll over it is answered at once too.
    let maxWaitingPerAccount: Int
    private let state = Mutex(State())
    private let answers: [Wake: Counter]
    private let immediateAnswers: Counter
    /// Answers each parked poll whose wait is over; deadlines are read on its clock.
    private let scheduler: any TimedWorkScheduler

    init(maxWaiting: Int, maxWaitingPerAccount: Int = 0, metrics: MetricsRegistry, scheduler: any TimedWorkScheduler) {
        self.scheduler = scheduler
        self.maxWaiting = maxWaiting
        self.maxWaitingPerAccount = maxWaitingPerAccount
        let help = "Held long-poll requests answered, by what ended the wait."
        self.answers = [
            .changed: metrics.counter("concord_long_poll_wakeups_total", help: help, labels: [("reason", "changed")]),
            .timedOut: metrics.counter("concord_long_poll_wakeups_total", help: help, labels: [("reason", "timeout")]),
            .shuttingDown: metrics.counter("concord_long_poll_wakeups_total", help: help, labels: [("reason", "shutdown")]),
            .clientGone: metrics.counter("concord_long_poll_wakeups_total", help: help, labels: [("reason", "clientGone")]),
        ]
        self.immediateAnswers = metrics.counter("concord_long_poll_over_limit_total",
                                                help: "Long-polls answered at once because maxWaiting requests (or the account's maxWaitingPerAccount) were already held.")
        metrics.gauge("concord_long_poll_waiting", help: "Long-poll requests held right now.") { [weak self] in
            Double(self?.waiting ?? 0)
        }
    }

    /// Polls registered (armed or parked).
    var waiting: Int { self.state.withLock { $0.waiters.count } }

    // MARK: Serving one poll

    /// Answers a long-poll. `query` reads the feed (on this worker) and says whether the page has
    /// changes; without any, and with time left, the poll waits for a signal on `topic` and queries
    /// again. A timeout, shutdown or the client going (`request.connection.clientGone`) answers the last empty page
    /// (the same token) at once.
    func serve(topic: FeedTopic, wait: Double, request: RequestContext, answer: DeferredAnswer,
               query: @escaping @Sendable () throws -> (response: HTTPResponse, hasChanges: Bool)) throws {
        let deadline = self.scheduler.clock.nanoseconds(after: wait)
        try self.attempt(topic: topic, deadline: deadline, request: request, answer: answer, query: query)
    }

    private func attempt(topic: FeedTopic, deadline: Int64, request: RequestContext, answer: DeferredAnswer,
                         query: @escaping @Sendable () throws -> (response: HTTPResponse, hasChanges: Bool)) throws {
        while true {
            let id = self.scheduler.clock.nanoseconds() < deadline ? self.arm(topic) : nil
            let page: (response: HTTPResponse, hasChanges: Bool)
            do {
                page = try query()
            } catch {
                if let id { self.disarm(id) }
                throw error
            }
            guard let id, !page.hasChanges else {
                if let id { self.disarm(id) }
                answer.respond(page.response)
                return
            }
            let empty = page.response
            let parked = self.park(id, deadline: deadline) { [self] wake in
                self.answers[wake]?.increment()
                guard wake == .changed else { return answer.respond(empty) }
                let queued = answer.onWorker { [self] in
                    do {
                        try self.attempt(topic: topic, deadline: deadline, request: request, answer: answer, query: query)
                    } catch {
                        answer.respond(ErrorMapper.apiError(error, request, operation: "longPoll").response)
                    }
                }
                // The pool is full or stopping: the empty page is a correct answer (the client polls again).
                if !queued { answer.respond(empty) }
            }
            if parked {
                // A client that leaves frees its place now, not when its wait ends.
                request.connection.clientGone?.onGone { [self] in self.clientLeft(id) }
                return
            }
            // A signal came while the query ran (or the server began to shut down): look again,
            // unless shutting down, which answers what there is.
            if self.state.withLock({ $0.closed }) {
                answer.respond(empty)
                return
            }
        }
    }

    // MARK: The registry

    /// Registers a poll of `topic` before its query; nil when `maxWaiting` are held (or the
    /// account's `maxWaitingPerAccount`) or shutting down.
    private func arm(_ topic: FeedTopic) -> UInt64? {
        let (id, full) = self.state.withLock { state -> (UInt64?, Bool) in
            guard !state.closed else { return (nil, false) }
            guard state.waiters.count < self.maxWaiting else { return (nil, true) }
            let account = topic.accountID
            let held = state.byAccount[account, default: 0]
            guard self.maxWaitingPerAccount == 0 || held < self.maxWaitingPerAccount else { return (nil, true) }
            let id = state.nextID
            state.nextID += 1
            state.waiters[id] = Waiter(topic: topic)
            state.byTopic[topic, default: []].insert(id)
            state.byAccount[account] = held + 1
            return (id, false)
        }
        if full { self.immediateAnswers.increment() }
        return id
    }

    private func disarm(_ id: UInt64) {
        self.state.withLock { state in _ = self.remove(id, from: &state) }
    }

    /// Parks an armed poll until `deadline` (the scheduler's nanoseconds); false (and
    /// unregistered) when a signal for its topic arrived meanwhile or the server is shutting down.
    private func park(_ id: UInt64, deadline: Int64, resume: @escaping @Sendable (Wake) -> Void) -> Bool {
        // Scheduled under the state's lock, so whoever answers the poll first finds its token to
        // cancel; the scheduler never calls back while holding its own lock, so the order is safe.
        self.state.withLock { state -> Bool in
            guard var waiter = state.waiters[id] else { return false }
            if waiter.fired || state.closed {
                _ = self.remove(id, from: &state)
                return false
            }
            waiter.resume = resume
            waiter.timeout = self.scheduler.schedule(at: deadline) { [weak self] in self?.waitPassed(id) }
            state.waiters[id] = waiter
            return true
        }
    }

    /// A parked poll's wait is over: it is answered with its empty page (unless answered already).
    private func waitPassed(_ id: UInt64) {
        let resume = self.state.withLock { state -> (@Sendable (Wake) -> Void)? in
            guard let resume = state.waiters[id]?.resume else { return nil }
            state.waiters[id]?.timeout = nil
            _ = self.remove(id, from: &state)
            return resume
        }
        resume?(.timedOut)
    }

    /// The client of a parked poll went: it is answered (a half-closed client still reads it).
    private func clientLeft(_ id: UInt64) {
        let resume = self.state.withLock { state -> (@Sendable (Wake) -> Void)? in
            guard let resume = state.waiters[id]?.resume else { return nil }
            _ = self.remove(id, from: &state)
            return resume
        }
        resume?(.clientGone)
    }

    /// Unregisters a poll, cancelling its deadline.
    private func remove(_ id: UInt64, from state: inout State) -> Waiter? {
        guard let waiter = state.waiters.removeValue(forKey: id) else { return nil }
        if let timeout = waiter.timeout { self.scheduler.cancel(timeout) }
        let account = waiter.topic.accountID
        if let held = state.byAccount[account] { state.byAccount[account] = held > 1 ? held - 1 : nil }
        if state.byTopic[waiter.topic]?.remove(id) != nil, state.byTopic[waiter.topic]?.isEmpty == true {
            state.byTopic[waiter.topic] = nil
        }
        return waiter
    }

    /// A store's feed signal: parked polls of those topics query again; armed ones will.
    func signal(_ signal: FeedSignal) {
        let resumes = self.state.withLock { state -> [@Sendable (Wake) -> Void] in
            let ids: [UInt64]
            switch signal {
            case .committed(let topics): ids = topics.flatMap { state.byTopic[$0].map(Array.init) ?? [] }
            case .anyMayHaveChanged: ids = Array(state.waiters.keys)
            case .webhookEventsQueued: ids = []
            }
            var resumes: [@Sendable (Wake) -> Void] = []
            for id in ids {
                guard let waiter = state.waiters[id] else { continue }
                if let resume = waiter.resume {
                    _ = self.remove(id, from: &state)
                    resumes.append(resume)
                } else {
                    state.waiters[id]?.fired = true
                }
            }
            return resumes
        }
        for resume in resumes { resume(.changed) }
    }

    /// Answers every held poll at once (with its empty page) and refuses to hold new ones.
    func shutdown() {
        let resumes = self.state.withLock { state -> [@Sendable (Wake) -> Void] in
            state.closed = true
            let resumes = state.waiters.values.compactMap(\.resume)
            for (id, waiter) in state.waiters where waiter.resume != nil { _ = self.remove(id, from: &state) }
            return resumes
        }
        for resume in resumes { resume(.shuttingDown) }
    }
}
