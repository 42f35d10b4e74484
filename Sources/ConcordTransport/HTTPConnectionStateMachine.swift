import ConcordHTTP

/// A responder's decision on a request head before its body is read.
public enum HTTPAdmission: Sendable {
    /// Read the body, at most `maxBodyBytes` (nil: the server's limit). The whole request then
    /// goes to `handler` when there is one, in place of `HTTPResponder.handle`: the responder
    /// builds it around what the head check found (who is calling), typed as the responder knows
    /// it, so nothing is looked up twice and nothing comes back as a value to cast.
    case proceed(maxBodyBytes: Int?, handler: AdmittedHandler?)
    /// Answer this without reading the body, then close the connection.
    case reject(HTTPResponse)

    /// Handles an admitted head's whole request (same rules as `HTTPResponder.handle`).
    public typealias AdmittedHandler = @Sendable (HTTPRequest, ConnectionContext, _ respond: @escaping @Sendable (HTTPResponse) -> Void) -> Void
}

/// The protocol logic of one connection, with no I/O: events in (bytes, EOF, a response,
/// a clock tick, shutdown), actions out (write, dispatch, close). Time is passed in, so
/// tests drive it with an injected clock and no sockets (after Hummingbird's
/// `HTTPConnectionStateHandler`).
///
/// One request is dispatched at a time: later pipelined requests stay buffered in the
/// parser until the current response is queued, so responses leave in request order
/// however the responder schedules its work.
struct HTTPConnectionStateMachine {
    /// Seconds for each timer (see `ServerConfiguration`).
    struct Timeouts: Sendable, Equatable {
        var header: Double
        var body: Double
        var idle: Double
        /// Slowest average body rate, bytes per second (0: none), judged once a body has taken
        /// `bodyRateGrace` seconds: a client trickling a byte now and then cannot hold a
        /// connection, as it could by merely beating the `body` timeout.
        var minBodyRate: Double = 0
        var bodyRateGrace: Double = 5
    }

    /// What the connection must do, in order.
    enum Action {
        /// Write `HTTP/1.1 100 Continue` now.
        case sendContinue
        /// Ask the responder whether to read this head's body (auth, the route's body limit);
        /// its decision comes back through `admitted` with this sequence number.
        case admit(HTTPRequestHead, sequence: UInt64)
        /// Hand the request to the responder; its answer comes back with this sequence number.
        case dispatch(HTTPRequest, admitted: HTTPAdmission.AdmittedHandler?, sequence: UInt64)
        /// Serialise and queue a response.
        case writeResponse(HTTPResponse, keepAlive: Bool, isHead: Bool, version: HTTPVersion)
        /// Close once the queued output is written. `linger`: half-close and read until
        /// EOF (bounded) first, so a client still sending reads our answer, not a reset.
        case closeWhenFlushed(linger: Bool)
        /// The transport refused a request itself (for `TransportEvent.protocolError`).
        case protocolError(status: Int, name: String)
    }

    /// Where the connection is in its request/response cycle.
    enum State: Equatable {
        /// Waiting for a request head. `idle`: no byte of it yet after a kept-alive
        /// response (the idle timer runs); otherwise the header timer runs.
        case awaitingHead(deadline: Double, idle: Bool)
        /// The head is complete and its body still to come: the responder decides from the
        /// head whether to read it. Nothing more is read meanwhile.
        case awaitingAdmission(sequence: UInt64, expectsContinue: Bool)
        /// The head is complete; the body is arriving. The deadline moves with each read.
        case readingBody(deadline: Double, expectsContinue: Bool)
        /// A request is with the responder.
        case awaitingResponse(sequence: UInt64, isHead: Bool, keepAlive: Bool, version: HTTPVersion)
        /// The last answer is queued; nothing more is read or dispatched.
        case closing
    }

    private(set) var state: State
    private var parser: HTTPRequestParser
    private let timeouts: Timeouts
    private var sequence: UInt64 = 0
    /// Shutting down: finish the current request with `Connection: close`.
    private(set) var draining = false
    /// The client half-closed; serve what is buffered, then close.
    private var peerClosed = false
    /// Bytes read while a request is with the responder (pipelined input), to bound it.
    private var bufferedWhileBusy = 0
    /// Pipelined input beyond this while a request is in flight pauses reading.
    private let maxBufferedWhileBusy: Int
    /// Buffered input waits to be parsed (set when a response completes a request).
    private(set) var hasPendingInput = false
    /// Bodies still to come beyond this many bytes are admitted from the head first (those of
    /// `Expect: 100-continue` and chunked ones always are); smaller ones are read at once.
    private let admitBodiesOver: Int
    /// The admitted request's handler, attached to it when its body is complete.
    private var admitted: HTTPAdmission.AdmittedHandler?
    /// When the current body began, and its bytes so far (for `minBodyRate`).
    private var bodyStartedAt = 0.0
    private var bodyBytes = 0

    /// When the body, at its bytes so far, falls below `minBodyRate` (never before the grace).
    private var bodyRateDeadline: Double {
        guard self.timeouts.minBodyRate > 0 else { return .infinity }
        return self.bodyStartedAt + max(self.timeouts.bodyRateGrace, Double(self.bodyBytes) / self.timeouts.minBodyRate)
    }

    private mutating func startBody(now: Double, expectsContinue: Bool) {
        self.bodyStartedAt = now
        self.bodyBytes = 0
        self.state = .readingBody(deadline: now + self.timeouts.body, expectsContinue: expectsContinue)
    }

    init(limits: HTTPLimits, timeouts: Timeouts, now: Double, maxBufferedWhileBusy: Int = 256 * 1024, admitBodiesOver: Int = 64 * 1024) {
        self.parser = HTTPRequestParser(limits: limits)
        self.admitBodiesOver = admitBodiesOver
        self.timeouts = timeouts
        self.maxBufferedWhileBusy = maxBufferedWhileBusy
        // The header timer runs from accept: a silent connection is answered 408 too.
        self.state = .awaitingHead(deadline: now + timeouts.header, idle: false)
    }

    /// The next moment `tick` may act, if any.
    var deadline: Double? {
        switch self.state {
        case .readingBody(let deadline, _): return min(deadline, self.bodyRateDeadline)
        case .awaitingHead(let deadline, _): return deadline
        case .awaitingAdmission, .awaitingResponse, .closing: return nil
        }
    }

    /// Whether the connection should read from its socket now.
    var wantsInput: Bool {
        switch self.state {
        case .closing, .awaitingAdmission: return false
        case .awaitingResponse: return !self.peerClosed && self.bufferedWhileBusy < self.maxBufferedWhileBusy
        case .awaitingHead, .readingBody: return !self.peerClosed
        }
    }

    /// Whether a request is with the responder (shutdown waits for these).
    var isBusy: Bool {
        switch self.state {
        case .awaitingResponse, .awaitingAdmission: return true
        default: return false
        }
    }

    /// Bytes arrived from the client.
    mutating func received(_ bytes: UnsafeRawBufferPointer, now: Double, into actions: inout [Action]) {
        switch self.state {
        case .closing:
            return
        case .awaitingHead(_, idle: true):
            // First byte of a new request: the header timer starts now and is not
            // extended by later bytes (slowloris).
            self.state = .awaitingHead(deadline: now + self.timeouts.header, idle: false)
        case .awaitingHead(_, idle: false):
            break
        case .readingBody(_, let expectsContinue):
            // Progress on the body moves its deadline (the average rate is judged by `tick`).
            self.state = .readingBody(deadline: now + self.timeouts.body, expectsContinue: expectsContinue)
            self.bodyBytes += bytes.count
        case .awaitingResponse, .awaitingAdmission:
            self.parser.append(bytes)
            self.bufferedWhileBusy += bytes.count
            return
        }
        self.parser.append(bytes)
        self.advance(now: now, into: &actions)
    }

    /// The client closed its sending side (read returned 0).
    mutating func receivedEOF(now: Double, into actions: inout [Action]) {
        self.peerClosed = true
        switch self.state {
        case .closing, .awaitingResponse, .awaitingAdmission:
            // The in-flight answer (or decision) still comes; it closes afterwards.
            return
        case .awaitingHead, .readingBody:
            // Whatever is buffered is an incomplete request that can never finish.
            self.state = .closing
            actions.append(.closeWhenFlushed(linger: false))
        }
    }

    /// Parses buffered input until a request is dispatched, more bytes are needed, or an
    /// error is answered. The connection calls it after `respond` when `hasPendingInput`
    /// and its output is not backlogged.
    mutating func advance(now: Double, into actions: inout [Action]) {
        self.hasPendingInput = false
        while true {
            switch self.state {
            case .awaitingHead, .readingBody: break
            case .awaitingAdmission, .awaitingResponse, .closing: return
            }
            let event: HTTPParserEvent?
            do {
                event = try self.parser.next()
            } catch {
                self.fail(status: error.status, name: error.name, response: error.response, into: &actions)
                return
            }
            guard let event else {
                if self.peerClosed {
                    self.state = .closing
                    actions.append(.closeWhenFlushed(linger: false))
                    return
                }
                // RFC 9110 §10.1.1: answer 100 once the head is in and the body is not;
                // never to HTTP/1.0, which does not know interim responses.
                if case .readingBody(let deadline, true) = self.state {
                    self.state = .readingBody(deadline: deadline, expectsContinue: false)
                    actions.append(.sendContinue)
                }
                return
            }
            switch event {
            case .head(let head):
                let expects = head.expectsContinue && head.version == .http1_1
                self.startBody(now: now, expectsContinue: expects)
                // A body still to come that is worth not reading unasked for (the client waits
                // for 100 Continue, or it is large): the responder decides from the head first.
                if !self.parser.bodyIsBuffered, expects || head.isChunked || (head.contentLength ?? 0) > self.admitBodiesOver {
                    self.state = .awaitingAdmission(sequence: self.sequence &+ 1, expectsContinue: expects)
                    actions.append(.admit(head, sequence: self.sequence &+ 1))
                    return
                }
            case .request(let request, let keepAlive):
                let admitted = self.admitted
                self.admitted = nil
                self.sequence &+= 1
                self.bufferedWhileBusy = 0
                self.state = .awaitingResponse(
                    sequence: self.sequence, isHead: request.method == "HEAD", keepAlive: keepAlive, version: request.version)
                actions.append(.dispatch(request, admitted: admitted, sequence: self.sequence))
                return
            }
        }
    }

    /// The responder's decision on the head awaiting admission `sequence`: read the body
    /// (within `maxBodyBytes`, then dispatch to its handler), or answer now without reading it
    /// and close — no `100 Continue` is sent for a refused body.
    mutating func admitted(_ decision: HTTPAdmission, sequence: UInt64, now: Double, into actions: inout [Action]) {
        guard case .awaitingAdmission(let current, let expects) = self.state, current == sequence else { return }
        switch decision {
        case .proceed(let maxBodyBytes, let handler):
            if let maxBodyBytes {
                do {
                    try self.parser.limitBody(maxBodyBytes)
                } catch {
                    self.fail(status: error.status, name: error.name, response: error.response, into: &actions)
                    return
                }
            }
            self.admitted = handler
            self.startBody(now: now, expectsContinue: expects)
            self.advance(now: now, into: &actions)
        case .reject(let response):
            self.state = .closing
            actions.append(.writeResponse(response, keepAlive: false, isHead: false, version: .http1_1))
            // The unread body may still be arriving: drain it (bounded) so the client reads the answer.
            actions.append(.closeWhenFlushed(linger: !self.peerClosed))
        }
    }

    /// The responder answered request `sequence`. A second answer, or one for a request
    /// that is no longer current, is ignored.
    mutating func respond(_ response: HTTPResponse, sequence: UInt64, now: Double, into actions: inout [Action]) {
        guard case .awaitingResponse(let current, let isHead, let keepAlive, let version) = self.state, current == sequence else { return }
        let keep = keepAlive && !self.draining
        actions.append(.writeResponse(response, keepAlive: keep, isHead: isHead, version: version))
        if !keep {
            self.state = .closing
            actions.append(.closeWhenFlushed(linger: !self.peerClosed))
            return
        }
        if self.parser.hasBufferedInput {
            // Pipelined bytes: their header timer starts now.
            self.state = .awaitingHead(deadline: now + self.timeouts.header, idle: false)
            self.hasPendingInput = true
        } else if self.peerClosed {
            self.state = .closing
            actions.append(.closeWhenFlushed(linger: false))
        } else {
            self.state = .awaitingHead(deadline: now + self.timeouts.idle, idle: true)
        }
    }

    /// Checks the running timer against `now`.
    mutating func tick(now: Double, into actions: inout [Action]) {
        switch self.state {
        case .awaitingHead(let deadline, let idle) where now >= deadline:
            if idle {
                // An idle keep-alive connection is closed quietly (RFC 9112 §9.5).
                self.state = .closing
                actions.append(.closeWhenFlushed(linger: false))
            } else {
                self.timeout(into: &actions)
            }
        case .readingBody(let deadline, _) where now >= deadline || now >= self.bodyRateDeadline:
            self.timeout(into: &actions)
        default:
            break
        }
    }

    /// The server is shutting down: idle connections close now, a request in progress
    /// finishes and its response says `Connection: close`.
    mutating func beginDraining(into actions: inout [Action]) {
        self.draining = true
        switch self.state {
        case .awaitingHead(_, let idle) where idle || !self.parser.hasBufferedInput:
            self.state = .closing
            actions.append(.closeWhenFlushed(linger: false))
        default:
            break
        }
    }

    private mutating func timeout(into actions: inout [Action]) {
        let error = HTTPParseError(status: 408, name: "requestTimeout", message: "the request was not received in time")
        self.fail(status: 408, name: error.name, response: error.response, into: &actions)
    }

    private mutating func fail(status: Int, name: String, response: HTTPResponse, into actions: inout [Action]) {
        self.state = .closing
        actions.append(.protocolError(status: status, name: name))
        actions.append(.writeResponse(response, keepAlive: false, isHead: false, version: .http1_1))
        actions.append(.closeWhenFlushed(linger: true))
    }
}
