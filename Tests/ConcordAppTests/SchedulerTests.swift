import ConcordDomain
import ConcordHTTP
import ConcordObservability
import ConcordTransport
import Foundation
import Synchronization
import Testing

@testable import ConcordApp

/// The scheduler's contract (`TimedWorkScheduler`) on a manual clock: work runs at its deadline,
/// never before, in deadline order, equal deadlines first come first served, cancelled work never.
@Suite struct SchedulerTests {
    /// Names of the work that ran, in order.
    final class Ran: Sendable {
        let names = Mutex<[String]>([])
        func work(_ name: String) -> @Sendable () -> Void { { self.names.withLock { $0.append(name) } } }
        var all: [String] { self.names.withLock { $0 } }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        /// (name, seconds from the start) in the order scheduled.
        let scheduled: [(String, Double)]
        let cancelled: Set<String>
        /// The clock moves by these steps; after each, what ran so far.
        let steps: [(Double, [String])]
        var testDescription: String { self.name }
    }

    static let cases: [Case] = [
        Case(name: "in deadline order, whatever the order scheduled",
             scheduled: [("c", 3), ("a", 1), ("b", 2)], cancelled: [],
             steps: [(0.5, []), (1, ["a"]), (5, ["a", "b", "c"])]),
        Case(name: "equal deadlines: first scheduled, first run",
             scheduled: [("x", 1), ("y", 1), ("z", 1), ("w", 0.5)], cancelled: [],
             steps: [(1, ["w", "x", "y", "z"])]),
        Case(name: "never before its deadline; exactly at it",
             scheduled: [("a", 2)], cancelled: [],
             steps: [(1.999_999, []), (0.000_001, ["a"])]),
        Case(name: "cancelled work never runs, the rest in order",
             scheduled: [("a", 1), ("b", 1), ("c", 2)], cancelled: ["b"],
             steps: [(3, ["a", "c"])]),
        Case(name: "a past or zero deadline runs at the next look",
             scheduled: [("now", 0), ("past", -5)], cancelled: [],
             steps: [(0, ["now", "past"])]),
    ]

    @Test(arguments: Self.cases)
    func runsWorkInDeadlineOrder(_ c: Case) {
        let scheduler = ManualScheduler()
        let ran = Ran()
        var tokens: [String: ScheduledWork] = [:]
        for (name, seconds) in c.scheduled {
            tokens[name] = scheduler.schedule(after: seconds, ran.work(name))
        }
        for name in c.cancelled { #expect(scheduler.cancel(tokens[name]!)) }
        for (step, expected) in c.steps {
            scheduler.advance(by: step)
            #expect(ran.all == expected)
        }
        #expect(scheduler.pending == 0)
    }

    @Test func cancelSaysWhetherTheWorkWasStillPending() {
        let scheduler = ManualScheduler()
        let ran = Ran()
        let token = scheduler.schedule(after: 1, ran.work("a"))
        scheduler.advance(by: 1)
        #expect(ran.all == ["a"])
        #expect(!scheduler.cancel(token), "it ran already")
        let other = scheduler.schedule(after: 1, ran.work("b"))
        #expect(scheduler.cancel(other))
        #expect(!scheduler.cancel(other), "cancelled twice")
    }

    /// The manual clock stops at each deadline on its way: work runs with the clock at its
    /// deadline, and work it schedules counts from there, running within the same advance when due.
    @Test func workScheduledByWorkRunsWhenDue() {
        let scheduler = ManualScheduler()
        let ran = Ran()
        scheduler.schedule(after: 1) {
            ran.work("first")()
            scheduler.schedule(after: 0, ran.work("again"))
            scheduler.schedule(after: 10, ran.work("later"))
        }
        scheduler.schedule(after: 2, ran.work("second"))
        scheduler.advance(by: 2)
        #expect(ran.all == ["first", "again", "second"])
        scheduler.advance(by: 8.999)
        #expect(ran.all == ["first", "again", "second"])
        scheduler.advance(by: 0.001)
        #expect(ran.all == ["first", "again", "second", "later"])
    }

    /// Many cancelled deadlines (long-polls answered early) do not stay in the heap for ever.
    @Test func cancelledWorkDoesNotAccumulate() {
        var queue = TimedWorkQueue()
        var live: [ScheduledWork] = []
        for n in 0..<10_000 {
            let token = queue.add(at: Int64(1_000_000 - n)) {}
            if n % 100 == 0 {
                live.append(token)
            } else {
                let cancelled = queue.cancel(token)
                #expect(cancelled)
            }
        }
        #expect(queue.count == live.count)
        var taken = 0
        while queue.takeDue(.max) != nil { taken += 1 }
        #expect(taken == live.count)
    }

    /// The real scheduler keeps the same order on its own thread (the clock here is the system's;
    /// nothing is asserted about how soon).
    @Test func theThreadedSchedulerRunsInOrderAndStops() {
        let scheduler = Scheduler(name: "concord-scheduler-test")
        let ran = Ran()
        let done = DispatchSemaphore(value: 0)
        let start = scheduler.clock.nanoseconds()
        scheduler.schedule(at: start + 20_000_000, ran.work("b"))
        scheduler.schedule(at: start + 10_000_000, ran.work("a"))
        let cancelled = scheduler.schedule(at: start + 15_000_000, ran.work("never"))
        scheduler.schedule(at: start + 20_000_000) { ran.work("c")(); done.signal() }
        #expect(scheduler.cancel(cancelled))
        done.wait()
        #expect(ran.all == ["a", "b", "c"])
        #expect(scheduler.clock.nanoseconds() >= start + 20_000_000)
        let afterStop = scheduler.schedule(after: 3600, ran.work("late"))
        scheduler.stop()
        #expect(!scheduler.cancel(afterStop))
        #expect(scheduler.schedule(after: 0, ran.work("stopped")).id == 0)
        #expect(scheduler.pending == 0)
    }

    /// Background snapshot saves run every `seconds` of the scheduler's clock, and not after `stop()`.
    @Test func backgroundSnapshotsSaveOnTheSchedulersClock() {
        let scheduler = ManualScheduler()
        let saves = Atomic<Int>(0)
        let saver = BackgroundSnapshots(every: 60, scheduler: scheduler) { saves.add(1, ordering: .relaxed) }
        scheduler.advance(by: 59)
        saver.waitForSaves()
        #expect(saves.load(ordering: .relaxed) == 0)
        scheduler.advance(by: 1)
        saver.waitForSaves()
        #expect(saves.load(ordering: .relaxed) == 1)
        // The next is counted from the end of that save.
        #expect(scheduler.pending == 1)
        scheduler.advance(by: 60)
        saver.waitForSaves()
        #expect(saves.load(ordering: .relaxed) == 2)
        saver.stop()
        #expect(scheduler.pending == 0)
        scheduler.advance(by: 600)
        saver.waitForSaves()
        #expect(saves.load(ordering: .relaxed) == 2)
    }
}

/// `LongPolls` on a manual clock: a held poll is answered with its empty page when its wait
/// passes on the scheduler's clock — not a moment before — and a poll answered first leaves no
/// deadline behind.
@Suite struct LongPollDeadlineTests {
    static let quiet = Logger(level: .error, sink: LogSink(flushInterval: 0, output: { _ in }))
    static let topic = FeedTopic.journals(accountID: "A1")

    /// The answers a poll got (status and body), in order.
    final class Answers: Sendable {
        let list = Mutex<[String]>([])
        var all: [String] { self.list.withLock { $0 } }
        var answer: DeferredAnswer {
            DeferredAnswer(respond: { response in self.list.withLock { $0.append(String(decoding: response.body, as: UTF8.self)) } },
                           onWorker: { job in job(); return true })
        }
    }

    static func request() -> RequestContext {
        RequestContext(request: HTTPRequest(method: "GET", target: "/v1/journals/changes", headers: HTTPHeaders([])),
                       connection: ConnectionContext(), routePattern: "/v1/journals/changes", logger: Self.quiet)
    }

    /// A feed with nothing new until `hasChanges` is set; each query answers its round.
    final class Feed: Sendable {
        let queries = Atomic<Int>(0)
        let hasChanges = Atomic<Bool>(false)
        func query() -> (response: HTTPResponse, hasChanges: Bool) {
            let n = self.queries.add(1, ordering: .relaxed).newValue
            let changed = self.hasChanges.load(ordering: .relaxed)
            return (HTTPResponse(status: 200, body: Array("\(changed ? "changes" : "empty") \(n)".utf8)), changed)
        }
    }

    /// Long-polls on a manual clock, with the answers they give and the feed they query.
    static func fixture() -> (scheduler: ManualScheduler, polls: LongPolls, answers: Answers, feed: Feed) {
        let scheduler = ManualScheduler()
        return (scheduler, LongPolls(maxWaiting: 10, metrics: MetricsRegistry(), scheduler: scheduler), Answers(), Feed())
    }

    /// Serves one poll of `topic` that may be held `wait` seconds.
    static func hold(_ polls: LongPolls, wait: Double, _ answers: Answers, _ feed: Feed) throws {
        try polls.serve(topic: Self.topic, wait: wait, request: Self.request(), answer: answers.answer, query: feed.query)
    }

    @Test(arguments: [0.5, 30, 300])
    func aHeldPollIsAnsweredWhenItsWaitPassesOnTheSchedulersClock(_ wait: Double) throws {
        let (scheduler, polls, answers, feed) = Self.fixture()
        try Self.hold(polls, wait: wait, answers, feed)
        #expect(polls.waiting == 1)
        #expect(scheduler.pending == 1)
        scheduler.advance(by: wait - 0.001)
        #expect(answers.all.isEmpty, "answered before its wait passed")
        scheduler.advance(by: 0.001)
        #expect(answers.all == ["empty 1"])
        #expect(polls.waiting == 0)
        #expect(feed.queries.load(ordering: .relaxed) == 1)
    }

    @Test func aWokenPollQueriesAgainAndCancelsItsDeadline() throws {
        let (scheduler, polls, answers, feed) = Self.fixture()
        try Self.hold(polls, wait: 30, answers, feed)
        scheduler.advance(by: 10)
        feed.hasChanges.store(true, ordering: .relaxed)
        polls.signal(.committed([Self.topic]))
        #expect(answers.all == ["changes 2"])
        #expect(scheduler.pending == 0, "its deadline is cancelled")
        scheduler.advance(by: 60)
        #expect(answers.all == ["changes 2"])
    }

    /// A woken poll that finds nothing new waits again until its *first* deadline, not a new one.
    @Test func aPollWokenForNothingKeepsItsDeadline() throws {
        let (scheduler, polls, answers, feed) = Self.fixture()
        try Self.hold(polls, wait: 30, answers, feed)
        scheduler.advance(by: 20)
        polls.signal(.anyMayHaveChanged)
        #expect(answers.all.isEmpty)
        #expect(polls.waiting == 1)
        scheduler.advance(by: 9.999)
        #expect(answers.all.isEmpty)
        scheduler.advance(by: 0.001)
        #expect(answers.all == ["empty 2"])
        #expect(scheduler.pending == 0)
    }

    @Test func shutdownAnswersHeldPollsAndLeavesNoDeadline() throws {
        let (scheduler, polls, answers, feed) = Self.fixture()
        for _ in 0..<3 {
            try Self.hold(polls, wait: 30, answers, feed)
        }
        #expect(scheduler.pending == 3)
        polls.shutdown()
        #expect(answers.all.count == 3)
        #expect(scheduler.pending == 0)
        // After shutdown a poll is answered at once, never held.
        try Self.hold(polls, wait: 30, answers, feed)
        #expect(answers.all.count == 4)
        #expect(polls.waiting == 0)
    }

    /// `wait=0` is no long-poll: answered by its one query.
    @Test func aZeroWaitIsAnsweredAtOnce() throws {
        let (scheduler, polls, answers, feed) = Self.fixture()
        try Self.hold(polls, wait: 0, answers, feed)
        #expect(answers.all == ["empty 1"])
        #expect(scheduler.pending == 0)
    }
}
