import ConcordHTTP
import Synchronization
import Testing
@testable import ConcordTransport

/// The connection state machine alone: no sockets, time passed in by hand.
@Suite struct HTTPConnectionStateMachineTests {
    typealias Machine = HTTPConnectionStateMachine
    static let timeouts = Machine.Timeouts(header: 10, body: 60, idle: 75)

    /// A compact rendering of actions, for table comparisons.
    static func describe(_ actions: [Machine.Action]) -> [String] {
        actions.map { action in
            switch action {
            case .sendContinue: return "continue"
            case .admit(let head, let sequence): return "admit \(sequence) \(head.method) \(head.target)"
            case .dispatch(let request, _, let sequence): return "dispatch \(sequence) \(request.method) \(request.target) \(request.body.count)"
            case .writeResponse(let response, let keepAlive, let isHead, _): return "write \(response.status)\(keepAlive ? "" : " close")\(isHead ? " head" : "")"
            case .closeWhenFlushed(let linger): return linger ? "linger" : "close"
            case .protocolError(let status, let name): return "error \(status) \(name)"
            }
        }
    }

    static func feed(_ machine: inout Machine, _ text: String, now: Double) -> [String] {
        var actions: [Machine.Action] = []
        Array(text.utf8).withUnsafeBytes { machine.received($0, now: now, into: &actions) }
        return describe(actions)
    }

    static func respond(_ machine: inout Machine, _ status: Int, sequence: UInt64, now: Double) -> [String] {
        var actions: [Machine.Action] = []
        machine.respond(HTTPResponse(status: status), sequence: sequence, now: now, into: &actions)
        return describe(actions)
    }

    static func admitted(_ machine: inout Machine, _ decision: HTTPAdmission, sequence: UInt64, now: Double) -> [String] {
        var actions: [Machine.Action] = []
        machine.admitted(decision, sequence: sequence, now: now, into: &actions)
        return describe(actions)
    }

    static func tick(_ machine: inout Machine, now: Double) -> [String] {
        var actions: [Machine.Action] = []
        machine.tick(now: now, into: &actions)
        return describe(actions)
    }

    @Test func headerTimerRunsFromAcceptAndDribblingDoesNotExtendIt() {
        var machine = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 100)
        #expect(machine.deadline == 110)
        #expect(Self.feed(&machine, "GET / HT", now: 105).isEmpty)
        #expect(Self.feed(&machine, "TP/1.1\r\n", now: 109).isEmpty)
        #expect(machine.deadline == 110)
        #expect(Self.tick(&machine, now: 109.9).isEmpty)
        #expect(Self.tick(&machine, now: 110) == ["error 408 requestTimeout", "write 408 close", "linger"])
        #expect(machine.state == .closing)
    }

    @Test func keptAliveConnectionIdlesThenClosesQuietly() {
        var machine = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
        #expect(Self.feed(&machine, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n", now: 1) == ["dispatch 1 GET /a 0"])
        #expect(machine.deadline == nil)
        #expect(Self.respond(&machine, 200, sequence: 1, now: 2) == ["write 200"])
        #expect(machine.state == .awaitingHead(deadline: 77, idle: true))
        #expect(Self.tick(&machine, now: 76).isEmpty)
        #expect(Self.tick(&machine, now: 77) == ["close"])
    }

    @Test func firstByteAfterIdleStartsTheHeaderTimer() {
        var machine = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
        _ = Self.feed(&machine, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n", now: 0)
        _ = Self.respond(&machine, 200, sequence: 1, now: 0)
        #expect(Self.feed(&machine, "G", now: 50).isEmpty)
        #expect(machine.state == .awaitingHead(deadline: 60, idle: false))
        #expect(Self.tick(&machine, now: 60) == ["error 408 requestTimeout", "write 408 close", "linger"])
    }

    @Test func bodyTimerMovesWithProgress() {
        var machine = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
        #expect(Self.feed(&machine, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\na", now: 1).isEmpty)
        #expect(machine.deadline == 61)
        #expect(Self.feed(&machine, "b", now: 30).isEmpty)
        #expect(machine.deadline == 90)
        #expect(Self.tick(&machine, now: 89).isEmpty)
        #expect(Self.tick(&machine, now: 90) == ["error 408 requestTimeout", "write 408 close", "linger"])
    }

    @Test func pipelinedRequestIsDispatchedOnlyAfterTheResponseBeforeIt() {
        var machine = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
        let two = "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n"
        #expect(Self.feed(&machine, two, now: 0) == ["dispatch 1 GET /1 0"])
        #expect(Self.feed(&machine, "GET /3 HTTP/1.1\r\nHost: x\r\n\r\n", now: 0).isEmpty)
        #expect(Self.respond(&machine, 200, sequence: 1, now: 1) == ["write 200"])
        #expect(machine.hasPendingInput)
        var actions: [Machine.Action] = []
        machine.advance(now: 1, into: &actions)
        #expect(Self.describe(actions) == ["dispatch 2 GET /2 0"])
        #expect(Self.respond(&machine, 200, sequence: 2, now: 1) == ["write 200"])
        actions = []
        machine.advance(now: 1, into: &actions)
        #expect(Self.describe(actions) == ["dispatch 3 GET /3 0"])
    }

    @Test func secondOrStaleResponseIsIgnored() {
        var machine = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
        _ = Self.feed(&machine, "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n", now: 0)
        #expect(Self.respond(&machine, 200, sequence: 1, now: 0) == ["write 200"])
        #expect(Self.respond(&machine, 500, sequence: 1, now: 0).isEmpty)
        _ = Self.feed(&machine, "GET /2 HTTP/1.1\r\nHost: x\r\n\r\n", now: 0)
        #expect(Self.respond(&machine, 500, sequence: 1, now: 0).isEmpty)
        #expect(Self.respond(&machine, 200, sequence: 2, now: 0) == ["write 200"])
    }

    @Test func continueIsSentOnlyOnceTheHeadIsAdmittedAndWhileTheBodyIsIncomplete() {
        var waiting = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
        #expect(Self.feed(&waiting, "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n", now: 0) == ["admit 1 POST /"])
        #expect(!waiting.wantsInput)
        #expect(Self.admitted(&waiting, .proceed(maxBodyBytes: nil, handler: nil), sequence: 1, now: 0) == ["continue"])
        #expect(waiting.wantsInput)
        #expect(Self.feed(&waiting, "o", now: 0).isEmpty)
        #expect(Self.feed(&waiting, "k", now: 0) == ["dispatch 1 POST / 2"])

        // The whole body already here: nothing to protect, no admission step.
        var complete = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
        #expect(Self.feed(&complete, "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok", now: 0) == ["dispatch 1 POST / 2"])

        // HTTP/1.0 knows no 100, and a small body is read without asking.
        var http10 = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
        #expect(Self.feed(&http10, "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n", now: 0).isEmpty)

        var tooLarge = Machine(limits: HTTPLimits(maxBodyBytes: 1), timeouts: Self.timeouts, now: 0)
        #expect(Self.feed(&tooLarge, "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n", now: 0)
            == ["error 413 payloadTooLarge", "write 413 close", "linger"])
    }

    /// The responder's decision on a head, before any of its body is read.
    @Test(arguments: [
        // A refused head: answered and closed, no 100 Continue, nothing dispatched.
        ("Expect: 100-continue\r\nContent-Length: 5", HTTPAdmission.reject(HTTPResponse(status: 401)), ["write 401 close", "linger"]),
        // Over the route's own limit: 413 from the Content-Length, no 100 Continue.
        ("Expect: 100-continue\r\nContent-Length: 5", .proceed(maxBodyBytes: 4, handler: nil), ["error 413 payloadTooLarge", "write 413 close", "linger"]),
        ("Expect: 100-continue\r\nContent-Length: 5", .proceed(maxBodyBytes: 5, handler: nil), ["continue"]),
        // A large body without Expect: admitted first too, then read (no 100).
        ("Content-Length: 70000", .proceed(maxBodyBytes: nil, handler: nil), []),
        // Chunked: always admitted first.
        ("Transfer-Encoding: chunked", .reject(HTTPResponse(status: 403)), ["write 403 close", "linger"]),
    ] as [(String, HTTPAdmission, [String])])
    func admissionDecidesBeforeTheBodyIsRead(_ header: String, _ decision: HTTPAdmission, _ expected: [String]) {
        var machine = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
        #expect(Self.feed(&machine, "POST /p HTTP/1.1\r\nHost: x\r\n\(header)\r\n\r\n", now: 0) == ["admit 1 POST /p"])
        #expect(machine.isBusy)
        #expect(Self.feed(&machine, "abc", now: 0).isEmpty)   // a client that does not wait: buffered, not parsed
        #expect(Self.admitted(&machine, decision, sequence: 2, now: 0).isEmpty)   // not the current head
        #expect(Self.admitted(&machine, decision, sequence: 1, now: 0) == expected)
    }

    /// With `admitBodiesOver: 0` (the server's default) every body still to come when its
    /// head is complete is admitted first, however small — a client without a valid token cannot
    /// hold even a small body open —; a body that came with its head is not (nothing to protect).
    @Test(arguments: [
        ("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabc", ["admit 1 POST /p"]),
        ("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n", ["admit 1 POST /p"]),
        ("POST /p HTTP/1.0\r\nContent-Length: 2\r\n\r\n", ["admit 1 POST /p"]),
        ("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd", ["dispatch 1 POST /p 4"]),
        ("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", ["dispatch 1 POST /p 0"]),
        ("GET /p HTTP/1.1\r\nHost: x\r\n\r\n", ["dispatch 1 GET /p 0"]),
    ])
    func everyBodyStillToComeIsAdmittedFirst(_ request: String, _ expected: [String]) {
        var machine = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0, admitBodiesOver: 0)
        #expect(Self.feed(&machine, request, now: 0) == expected)
    }

    /// A chunked body over the admitted limit fails as its chunks arrive; the admission's
    /// context comes back with the request.
    @Test func admittedLimitAndContextReachTheRequest() {
        var chunked = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
        _ = Self.feed(&chunked, "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", now: 0)
        #expect(Self.admitted(&chunked, .proceed(maxBodyBytes: 3, handler: nil), sequence: 1, now: 0).isEmpty)
        #expect(Self.feed(&chunked, "4\r\nabcd\r\n0\r\n\r\n", now: 0) == ["error 413 payloadTooLarge", "write 413 close", "linger"])

        var machine = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
        _ = Self.feed(&machine, "POST /p HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n", now: 0)
        var actions: [Machine.Action] = []
        let caller = Mutex<[String]>([])
        machine.admitted(.proceed(maxBodyBytes: 2, handler: { request, _, _ in caller.withLock { $0.append("caller " + request.target) } }),
                         sequence: 1, now: 0, into: &actions)
        Array("ok".utf8).withUnsafeBytes { machine.received($0, now: 0, into: &actions) }
        let dispatched = actions.compactMap { action -> (request: HTTPRequest, admitted: HTTPAdmission.AdmittedHandler?)? in
            if case .dispatch(let request, let admitted, _) = action { return (request, admitted) }
            return nil
        }
        #expect(dispatched.count == 1)
        // The admitted head's handler comes back with the whole request.
        if let (request, admitted) = dispatched.first { admitted?(request, ConnectionContext(), { _ in }) }
        #expect(caller.withLock { $0 } == ["caller /p"])
        #expect(Self.respond(&machine, 200, sequence: 1, now: 0) == ["write 200"])
    }

    /// A body trickling in below `minBodyRate` is cut off once the grace has passed, even though
    /// every byte beats the `body` (no progress) timeout; a body at the rate is not.
    @Test(arguments: [
        (bytesEvery: 4.0, perStep: 1, steps: 10, cutAt: 8),     // a byte every 4 s: 408 at the first tick past the grace
        (bytesEvery: 1.0, perStep: 200, steps: 30, cutAt: -1),  // 200 B/s against a 100 B/s floor: never
        (bytesEvery: 1.0, perStep: 50, steps: 30, cutAt: 5),    // 50 B/s: cut at the end of the grace
    ])
    func aBodyBelowTheMinimumRateIsCutOff(_ bytesEvery: Double, _ perStep: Int, _ steps: Int, _ cutAt: Int) {
        var timeouts = Self.timeouts
        timeouts.minBodyRate = 100
        timeouts.bodyRateGrace = 5
        var machine = Machine(limits: HTTPLimits(), timeouts: timeouts, now: 0)
        #expect(Self.feed(&machine, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", now: 0) == ["admit 1 POST /"])
        #expect(Self.admitted(&machine, .proceed(maxBodyBytes: nil, handler: nil), sequence: 1, now: 0).isEmpty)
        var cut = -1
        for step in 1...steps {
            let now = Double(step) * bytesEvery
            if let deadline = machine.deadline, deadline <= now, Self.tick(&machine, now: now) == ["error 408 requestTimeout", "write 408 close", "linger"] {
                cut = Int(now)
                break
            }
            _ = Self.feed(&machine, String(repeating: "x", count: perStep), now: now)
        }
        #expect(cut == cutAt)
    }

    @Test func connectionCloseAndHTTP10CloseAfterTheResponse() {
        for request in ["GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "GET / HTTP/1.0\r\n\r\n"] {
            var machine = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
            _ = Self.feed(&machine, request, now: 0)
            #expect(Self.respond(&machine, 200, sequence: 1, now: 0) == ["write 200 close", "linger"])
        }
    }

    @Test func headRequestIsAnsweredAsHead() {
        var machine = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
        _ = Self.feed(&machine, "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", now: 0)
        #expect(Self.respond(&machine, 200, sequence: 1, now: 0) == ["write 200 head"])
    }

    @Test func parseErrorAnswersThenLingersAndIgnoresLaterInput() {
        var machine = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
        #expect(Self.feed(&machine, "BROKEN\r\n\r\n", now: 0) == ["error 400 badRequest", "write 400 close", "linger"])
        #expect(Self.feed(&machine, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", now: 0).isEmpty)
        #expect(machine.wantsInput == false)
    }

    @Test func drainingClosesIdleConnectionsAndAnswersInFlightWithClose() {
        var idle = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
        var actions: [Machine.Action] = []
        idle.beginDraining(into: &actions)
        #expect(Self.describe(actions) == ["close"])

        var busy = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
        _ = Self.feed(&busy, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", now: 0)
        actions = []
        busy.beginDraining(into: &actions)
        #expect(actions.isEmpty)
        #expect(Self.respond(&busy, 200, sequence: 1, now: 0) == ["write 200 close", "linger"])

        var partial = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
        _ = Self.feed(&partial, "GET / HTTP/1.1\r\n", now: 0)
        actions = []
        partial.beginDraining(into: &actions)
        #expect(actions.isEmpty)
    }

    @Test func peerEOFWhileARequestIsInFlightClosesAfterItsResponse() {
        var machine = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
        _ = Self.feed(&machine, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", now: 0)
        var actions: [Machine.Action] = []
        machine.receivedEOF(now: 0, into: &actions)
        #expect(actions.isEmpty)
        #expect(Self.respond(&machine, 200, sequence: 1, now: 0) == ["write 200", "close"])

        var partial = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0)
        _ = Self.feed(&partial, "GET / HT", now: 0)
        actions = []
        partial.receivedEOF(now: 0, into: &actions)
        #expect(Self.describe(actions) == ["close"])
    }

    @Test func pipelinedInputWhileBusyIsBounded() {
        var machine = Machine(limits: HTTPLimits(), timeouts: Self.timeouts, now: 0, maxBufferedWhileBusy: 64)
        _ = Self.feed(&machine, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", now: 0)
        #expect(machine.wantsInput)
        _ = Self.feed(&machine, String(repeating: "GET / HTTP/1.1\r\nHost: x\r\n\r\n", count: 3), now: 0)
        #expect(!machine.wantsInput)
        _ = Self.respond(&machine, 200, sequence: 1, now: 0)
        #expect(machine.wantsInput)
    }
}
