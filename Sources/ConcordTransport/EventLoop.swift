import CConcordSystem
import ConcordHTTP
import Glibc
import Synchronization

/// State shared by all loops of one server.
final class ServerShared: Sendable {
    let configuration: ServerConfiguration
    let responder: any HTTPResponder
    let onEvent: @Sendable (TransportEvent) -> Void
    /// Connections being served, across loops (`HTTPServer.openConnections`, max connections).
    let openConnections = Atomic<Int>(0)
    /// Connections being refused with 503, across loops; bounded so a flood cannot pile them up.
    let refusingConnections = Atomic<Int>(0)
    /// Declared body bytes admitted and not yet answered, across loops (`maxBodyBytesInFlight`).
    let bodyBytesInFlight = Atomic<Int>(0)
    /// Connections served per client address (`maxConnectionsPerAddress`), across loops; an
    /// address leaves the table with its last connection.
    private let connectionsByAddress = Mutex<[String: Int]>([:])

    /// Takes one of `address`'s places; false (nothing taken) when it holds `maxConnectionsPerAddress`.
    func takeAddressSlot(_ address: String) -> Bool {
        let cap = self.configuration.maxConnectionsPerAddress
        return self.connectionsByAddress.withLock { table in
            let held = table[address, default: 0]
            guard held < cap else { return false }
            table[address] = held + 1
            return true
        }
    }

    /// Gives back a place taken by `takeAddressSlot`.
    func releaseAddressSlot(_ address: String) {
        self.connectionsByAddress.withLock { table in
            guard let held = table[address] else { return }
            table[address] = held > 1 ? held - 1 : nil
        }
    }

    /// Whether connections from `address` are capped per address (not a trusted proxy's).
    func capsPerAddress(_ address: String?) -> Bool {
        guard self.configuration.maxConnectionsPerAddress > 0, let address else { return false }
        return !IPAddressRange.any(self.configuration.trustedProxies, contains: address)
    }

    /// Counts `bytes` of body in flight; false (nothing counted) when that would pass the budget.
    func reserveBody(_ bytes: Int) -> Bool {
        let total = self.bodyBytesInFlight.add(bytes, ordering: .relaxed).newValue
        if total > self.configuration.maxBodyBytesInFlight && total != bytes {
            self.bodyBytesInFlight.subtract(bytes, ordering: .relaxed)
            return false
        }
        return true
    }

    init(configuration: ServerConfiguration, responder: any HTTPResponder, onEvent: @escaping @Sendable (TransportEvent) -> Void) {
        self.configuration = configuration
        self.responder = responder
        self.onEvent = onEvent
    }
}

/// One epoll instance on one thread. It owns its connections; other threads reach it only
/// through `inbox` (locked) plus a write to its eventfd.
///
/// `@unchecked Sendable`: every stored `var` is read and written only on the loop's own
/// thread (`run()` and what it calls, including `respond` closures invoked synchronously
/// from the responder there; a thread-local marker tells `deliver` which case it is in).
/// The `let`s are immutable; `inbox` is a `Mutex`. `wakeFD` stays open until `deinit`, so a
/// thread holding the loop may write to it at any time, outside the lock.
final class EventLoop: @unchecked Sendable {
    /// What another thread hands back to a connection: a response, or a decision on a head.
    enum Answer {
        case response(HTTPResponse)
        case admission(HTTPAdmission)
    }

    private struct Inbox {
        var responses: [(fd: Int32, id: UInt64, sequence: UInt64, answer: Answer)] = []
        var wakePending = false
        var closed = false
        var shutdownDeadline: Double? = nil
    }

    private let shared: ServerShared
    private let listenFD: Int32
    let epollFD: Int32
    private let wakeFD: Int32
    private let inbox = Mutex(Inbox())

    private var connections: [Connection?] = []
    private var connectionCount = 0
    private var nextConnectionID: UInt64 = 0
    private var now: Double
    private var nextTick: Double
    private let tickInterval: Double
    private var date: String = ""
    private var dateSecond = -1
    private var listening = false
    private var acceptResumeAt: Double? = nil
    private var draining = false
    private var forceDeadline = Double.infinity
    private let readBuffer: UnsafeMutableRawBufferPointer
    private let timeouts: HTTPConnectionStateMachine.Timeouts
    private let refusal: HTTPResponse
    private let bodyBudgetRefusal: HTTPResponse

    /// One read takes up to this much: a request whose whole body has arrived with its head (a
    /// 1000-identifier mapping batch is 45–130 KB) is parsed whole and dispatched once, rather than
    /// admitted from its head first (a worker's turn and a hand-back to the loop) only because the
    /// read stopped short of its end.
    static let readBufferSize = 256 * 1024
    /// Larger idle output buffers are released rather than kept for the next response.
    static let keptOutputCapacity = 64 * 1024
    /// Bodies at least this large are sent from the response's own array behind the head (one
    /// `sendmsg` of two pieces) instead of being copied into the output buffer after it.
    static let separateBodyBytes = 16 * 1024
    static let maxRefusing = 1024

    init(shared: ServerShared, listenFD: Int32) throws(TransportError) {
        self.shared = shared
        self.listenFD = listenFD
        let configuration = shared.configuration
        do {
            self.epollFD = try syscallBlocking("epoll_create1") { epoll_create1(concord_EPOLL_CLOEXEC) }
        } catch {
            throw TransportError("cannot start event loop: \(error)")
        }
        do {
            self.wakeFD = try syscallBlocking("eventfd") { eventfd(0, concord_EFD_NONBLOCK | concord_EFD_CLOEXEC) }
        } catch {
            closeDescriptor(self.epollFD)
            throw TransportError("cannot start event loop: \(error)")
        }
        self.timeouts = .init(header: configuration.headerReadTimeout, body: configuration.bodyReadTimeout, idle: configuration.idleTimeout,
                              minBodyRate: configuration.minBodyRate, bodyRateGrace: configuration.bodyRateGrace)
        // Timers are checked on a coarse tick: a quarter of the shortest timeout, at most
        // 250 ms (timeouts land within that of their deadline), at least 5 ms.
        let shortest = min(configuration.headerReadTimeout, configuration.bodyReadTimeout, configuration.idleTimeout, configuration.lingerTimeout,
                           configuration.writeTimeout, configuration.bodyRateGrace)
        self.tickInterval = max(0.005, min(0.25, shortest / 4))
        self.now = monotonicNow()
        self.nextTick = self.now + self.tickInterval
        self.readBuffer = .allocate(byteCount: EventLoop.readBufferSize, alignment: 16)
        var refusal = HTTPParseError(status: 503, name: "tooManyConnections", message: "the server has too many connections; retry shortly").response
        refusal.headers.add(name: "Retry-After", value: "1")
        self.refusal = refusal
        var budget = HTTPParseError(status: 503, name: "unavailable", message: "the server is receiving too many request bodies; retry shortly").response
        budget.headers.add(name: "Retry-After", value: "1")
        self.bodyBudgetRefusal = budget
        do {
            _ = try syscallBlocking("epoll_ctl") { concord_epoll_ctl(self.epollFD, EPOLL_CTL_ADD, self.wakeFD, concord_EPOLLIN, UInt64(self.wakeFD)) }
        } catch {
            closeDescriptor(self.wakeFD)
            closeDescriptor(self.epollFD)
            self.readBuffer.deallocate()
            throw TransportError("cannot start event loop: \(error)")
        }
        self.startListening()
    }

    deinit {
        self.readBuffer.deallocate()
        closeDescriptor(self.wakeFD)
    }

    /// Releases the descriptors of a loop whose thread never started.
    func abandon() {
        self.inbox.withLock { inbox in inbox.closed = true }
        closeDescriptor(self.epollFD)
    }

    // MARK: Cross-thread entry points

    /// Delivers a response from any thread. On the loop's own thread it is applied at
    /// once (the responder answered inline); elsewhere it is queued and the loop woken.
    func deliver(fd: Int32, id: UInt64, sequence: UInt64, answer: Answer) {
        if concord_current_loop() == Unmanaged.passUnretained(self).toOpaque() {
            self.complete(fd: fd, id: id, sequence: sequence, answer: answer)
            return
        }
        let wake = self.inbox.withLock { inbox in
            // After the loop exited the response has nobody to go to: dropping it is the
            // documented "respond after close is harmless".
            guard !inbox.closed else { return false }
            inbox.responses.append((fd, id, sequence, answer))
            // One wakeup per batch: the loop takes every queued response when it wakes.
            guard !inbox.wakePending else { return false }
            inbox.wakePending = true
            return true
        }
        // Outside the lock: on a busy core the woken loop thread may run at once, and it takes
        // this lock first thing.
        if wake { EventLoop.signal(self.wakeFD) }
    }

    /// Asks the loop to drain and exit, force-closing what is left at `deadline`.
    func requestShutdown(deadline: Double) {
        self.inbox.withLock { inbox in
            guard !inbox.closed else { return }
            inbox.shutdownDeadline = deadline
            EventLoop.signal(self.wakeFD)
        }
    }

    /// Writes to the eventfd (open for the loop's lifetime, so never a reused number).
    private static func signal(_ wakeFD: Int32) {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, 8)
    }

    // MARK: The loop

    /// Runs until shutdown completes. Called on the loop's own thread.
    func run() {
        concord_set_current_loop(Unmanaged.passUnretained(self).toOpaque())
        defer { concord_set_current_loop(nil) }
        self.refreshDate()
        let maxEvents = 256
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: maxEvents)
        defer { events.deallocate() }
        while true {
            let waitMs = Int32(max(0, min(1000, ((self.nextTick - self.now) * 1000).rounded(.up))))
            let count = epoll_wait(self.epollFD, events, Int32(maxEvents), waitMs)
            self.now = monotonicNow()
            if count > 0 {
                for index in 0..<Int(count) {
                    let fd = Int32(truncatingIfNeeded: concord_epoll_event_data(events + index))
                    let mask = concord_epoll_event_events(events + index)
                    if fd == self.wakeFD {
                        self.drainInbox()
                    } else if fd == self.listenFD {
                        self.acceptConnections()
                    } else {
                        self.handle(fd: fd, events: mask)
                    }
                }
            }
            if self.now >= self.nextTick {
                self.tick()
                self.nextTick = self.now + self.tickInterval
            }
            if self.draining {
                if self.connectionCount == 0 { break }
                if self.now >= self.forceDeadline {
                    self.closeAll()
                    break
                }
            }
        }
        self.inbox.withLock { inbox in
            inbox.closed = true
            inbox.responses.removeAll()
        }
        closeDescriptor(self.epollFD)
    }

    private func drainInbox() {
        var counter: UInt64 = 0
        _ = Glibc.read(self.wakeFD, &counter, 8)
        let (responses, shutdownDeadline) = self.inbox.withLock { inbox in
            let taken = inbox.responses
            inbox.responses.removeAll(keepingCapacity: true)
            inbox.wakePending = false
            return (taken, inbox.shutdownDeadline)
        }
        for item in responses {
            self.complete(fd: item.fd, id: item.id, sequence: item.sequence, answer: item.answer)
        }
        if let shutdownDeadline, !self.draining {
            self.beginDraining(deadline: shutdownDeadline)
        }
    }

    private func beginDraining(deadline: Double) {
        self.draining = true
        self.forceDeadline = deadline
        self.stopListening()
        self.acceptResumeAt = nil
        for case let connection? in self.connections where connection.lingerDeadline == nil {
            connection.machine.beginDraining(into: &connection.actions)
            self.process(connection)
        }
    }

    private func tick() {
        self.refreshDate()
        if let resume = self.acceptResumeAt, self.now >= resume, !self.draining {
            self.acceptResumeAt = nil
            self.startListening()
        }
        for case let connection? in self.connections {
            if let linger = connection.lingerDeadline {
                if self.now >= linger { self.close(connection) }
            } else if connection.pendingOutputBytes > 0,
                      self.now - connection.lastWriteProgress >= self.shared.configuration.writeTimeout {
                // The client stopped reading: give up on it.
                self.close(connection)
            } else if let deadline = connection.machine.deadline, self.now >= deadline {
                connection.machine.tick(now: self.now, into: &connection.actions)
                self.process(connection)
            }
        }
    }

    private func refreshDate() {
        let second = wallClockSeconds()
        if second != self.dateSecond {
            self.dateSecond = second
            self.date = HTTPDate.format(epochSeconds: second)
        }
    }

    // MARK: Listening

    private func startListening() {
        guard !self.listening else { return }
        // EPOLLEXCLUSIVE: one shared listener, and a new connection wakes one loop, not all.
        let result = concord_epoll_ctl(self.epollFD, EPOLL_CTL_ADD, self.listenFD, concord_EPOLLIN | concord_EPOLLEXCLUSIVE, UInt64(self.listenFD))
        self.listening = result == 0
    }

    private func stopListening() {
        guard self.listening else { return }
        // DEL rather than MOD: EPOLLEXCLUSIVE registrations cannot be modified.
        _ = concord_epoll_ctl(self.epollFD, EPOLL_CTL_DEL, self.listenFD, 0, 0)
        self.listening = false
    }

    private func acceptConnections() {
        guard self.listening else { return }
        for _ in 0..<64 {
            let result: IOResult<Int32>
            do {
                result = try syscall("accept4") { concord_accept4(self.listenFD) }
            } catch {
                switch error.errno {
                case ECONNABORTED, EPROTO, EPERM:
                    // The client gave up before we accepted: nothing to do.
                    continue
                default:
                    // EMFILE, ENFILE, ENOBUFS, ENOMEM and anything unexpected: pause the
                    // listener briefly instead of spinning on a level-triggered error.
                    self.stopListening()
                    self.acceptResumeAt = self.now + 0.1
                    self.shared.onEvent(.acceptError(errno: error.errno))
                    return
                }
            }
            guard case .processed(let fd) = result else { return }
            self.accepted(fd: fd)
        }
    }

    private func accepted(fd: Int32) {
        configureAcceptedSocket(fd)
        let address = Connection.peerAddress(fd)
        let open = self.shared.openConnections.add(1, ordering: .relaxed).newValue
        if open > self.shared.configuration.maxConnections {
            self.shared.openConnections.subtract(1, ordering: .relaxed)
            self.refuse(fd: fd, address: address)
            return
        }
        // One address may not take every place: over its own cap, the same answer.
        let capped = self.shared.capsPerAddress(address)
        if capped, let address, !self.shared.takeAddressSlot(address) {
            self.shared.openConnections.subtract(1, ordering: .relaxed)
            self.refuse(fd: fd, address: address)
            return
        }
        self.nextConnectionID &+= 1
        let machine = HTTPConnectionStateMachine(limits: self.shared.configuration.limits, timeouts: self.timeouts, now: self.now,
                                                 admitBodiesOver: self.shared.configuration.admitBodiesOver)
        let connection = Connection(fd: fd, id: self.nextConnectionID, machine: machine, interest: concord_EPOLLIN, counted: true,
                                    remoteAddress: address)
        connection.addressSlot = capped ? address : nil
        guard self.register(connection) else { return }
    }

    /// Over the connection limit: answer 503 with `Retry-After` and close with lingering.
    private func refuse(fd: Int32, address: String?) {
        self.shared.onEvent(.protocolError(status: 503, name: "tooManyConnections"))
        let refusing = self.shared.refusingConnections.add(1, ordering: .relaxed).newValue
        guard refusing <= EventLoop.maxRefusing else {
            // A flood: do not keep even the refusals around.
            self.shared.refusingConnections.subtract(1, ordering: .relaxed)
            closeDescriptor(fd)
            return
        }
        self.nextConnectionID &+= 1
        let machine = HTTPConnectionStateMachine(limits: self.shared.configuration.limits, timeouts: self.timeouts, now: self.now)
        let connection = Connection(fd: fd, id: self.nextConnectionID, machine: machine, interest: concord_EPOLLIN, counted: false,
                                    remoteAddress: address)
        connection.output = HTTPResponseWriter.serialize(self.refusal, keepAlive: false, isHead: false, date: self.date)
        connection.closeRequested = true
        connection.lingerRequested = true
        guard self.register(connection) else { return }
        self.flush(connection)
    }

    private func register(_ connection: Connection) -> Bool {
        let fd = connection.fd
        if concord_epoll_ctl(self.epollFD, EPOLL_CTL_ADD, fd, connection.interest, UInt64(UInt32(bitPattern: fd))) != 0 {
            self.shared.onEvent(.connectionError("epoll_ctl: \(SystemError.describe(Glibc.errno))"))
            closeDescriptor(fd)
            self.release(connection)
            return false
        }
        let index = Int(fd)
        if index >= self.connections.count {
            self.connections.append(contentsOf: repeatElement(nil, count: max(index + 1 - self.connections.count, self.connections.count)))
        }
        self.connections[index] = connection
        self.connectionCount += 1
        return true
    }

    // MARK: Connection I/O

    private func handle(fd: Int32, events: UInt32) {
        let index = Int(fd)
        guard index >= 0, index < self.connections.count, let connection = self.connections[index] else { return }
        if events & concord_EPOLLOUT != 0 {
            self.flush(connection)
            guard self.connections[index] === connection else { return }
            // Output drained below the bound: pipelined requests held back may go on.
            if connection.machine.hasPendingInput, connection.lingerDeadline == nil,
               connection.pendingOutputBytes < self.shared.configuration.maxPendingOutputBytes {
                self.process(connection)
                guard self.connections[index] === connection else { return }
            }
        }
        if events & (concord_EPOLLIN | concord_EPOLLHUP | concord_EPOLLERR) != 0 {
            self.readable(connection)
        }
    }

    /// A read or send failed: the connection closes. ECONNRESET, EPIPE and ETIMEDOUT mean the client
    /// is gone (nothing to answer, nothing to report); anything else is reported.
    private func failed(_ connection: Connection, _ error: SystemError) {
        if error.errno != ECONNRESET && error.errno != EPIPE && error.errno != ETIMEDOUT {
            self.shared.onEvent(.connectionError(error.description))
        }
        self.close(connection)
    }

    private func readable(_ connection: Connection) {
        let result: IOResult<Int>
        do {
            result = try syscall("read") { Glibc.read(connection.fd, self.readBuffer.baseAddress, EventLoop.readBufferSize) }
        } catch {
            return self.failed(connection, error)
        }
        guard case .processed(let count) = result else { return }
        if connection.lingerDeadline != nil {
            // Lingering: discard input; EOF ends it early.
            if count == 0 { self.close(connection) }
            return
        }
        if count == 0 {
            connection.machine.receivedEOF(now: self.now, into: &connection.actions)
            // A request still with the responder is told (a long-poll then answers at once).
            if connection.machine.isBusy { connection.clientGone?.signal() }
        } else {
            connection.machine.received(UnsafeRawBufferPointer(rebasing: self.readBuffer[0..<count]), now: self.now, into: &connection.actions)
        }
        self.process(connection)
    }

    /// Applies a response on the loop thread.
    private func complete(fd: Int32, id: UInt64, sequence: UInt64, answer: Answer) {
        let index = Int(fd)
        guard index >= 0, index < self.connections.count, let connection = self.connections[index], connection.id == id,
              connection.lingerDeadline == nil
        else { return }
        switch answer {
        case .response(let response):
            connection.clientGone = nil
            connection.machine.respond(response, sequence: sequence, now: self.now, into: &connection.actions)
        case .admission(let decision):
            connection.machine.admitted(decision, sequence: sequence, now: self.now, into: &connection.actions)
        }
        self.process(connection)
    }

    /// Runs the connection's queued actions in order, then writes. Re-entrant calls (a
    /// responder answering inline from `handle`) only add to the queue.
    private func process(_ connection: Connection) {
        while self.processOnce(connection) {}
    }

    /// One round of `process`; true when it should run again at once.
    private func processOnce(_ connection: Connection) -> Bool {
        if connection.processing { return false }
        connection.processing = true
        let maxPending = self.shared.configuration.maxPendingOutputBytes
        var index = 0
        while true {
            if index == connection.actions.count {
                // Everything queued is done: parse pipelined input, unless output is backed up.
                guard connection.machine.hasPendingInput, connection.pendingOutputBytes < maxPending else { break }
                connection.machine.advance(now: self.now, into: &connection.actions)
                if index == connection.actions.count { break }
            }
            let action = connection.actions[index]
            index += 1
            switch action {
            case .dispatch(let request, let admitted, let sequence):
                let gone = ClientGoneSignal()
                connection.clientGone = gone
                let context = ConnectionContext(remoteAddress: connection.remoteAddress, clientGone: gone)
                let fd = connection.fd
                let id = connection.id
                let respond: @Sendable (HTTPResponse) -> Void = { [self] response in
                    self.deliver(fd: fd, id: id, sequence: sequence, answer: .response(response))
                }
                // A head the responder admitted goes to the handler it chose then.
                if let admitted { admitted(request, context, respond) } else { self.shared.responder.handle(request, context: context, respond: respond) }
            case .admit(let head, let sequence):
                let fd = connection.fd
                let id = connection.id
                // The budget of bodies in flight comes first: over it, the body is not read.
                // (A chunked body's length is unknown here; it is bounded by its route's limit.)
                let declared = head.contentLength ?? 0
                if declared > 0 {
                    guard self.shared.reserveBody(declared) else {
                        connection.machine.admitted(.reject(self.bodyBudgetRefusal), sequence: sequence, now: self.now, into: &connection.actions)
                        continue
                    }
                    connection.reservedBodyBytes = declared
                }
                self.shared.responder.admit(head, context: ConnectionContext(remoteAddress: connection.remoteAddress)) { [self] decision in
                    self.deliver(fd: fd, id: id, sequence: sequence, answer: .admission(decision))
                }
            case .writeResponse(let response, let keepAlive, let isHead, let version):
                self.releaseBody(connection)
                connection.joinOutputBody()
                if response.body.count >= EventLoop.separateBodyBytes, HTTPResponseWriter.sendsBody(status: response.status, isHead: isHead) {
                    // The head alone (written as for HEAD: same fields, same Content-Length), and the
                    // body goes out from the response's own array in the same send: no copy of it.
                    HTTPResponseWriter.write(
                        response, keepAlive: keepAlive, requestVersion: version, isHead: true, date: self.date, into: &connection.output)
                    connection.outputBody = response.body
                } else {
                    HTTPResponseWriter.write(
                        response, keepAlive: keepAlive, requestVersion: version, isHead: isHead, date: self.date, into: &connection.output)
                }
            case .sendContinue:
                connection.joinOutputBody()
                connection.output.append(contentsOf: HTTPResponseWriter.continueResponse)
            case .closeWhenFlushed(let linger):
                connection.closeRequested = true
                connection.lingerRequested = linger
            case .protocolError(let status, let name):
                self.shared.onEvent(.protocolError(status: status, name: name))
            }
        }
        connection.actions.removeAll(keepingCapacity: true)
        connection.processing = false
        self.flush(connection)
        // The kernel took all the output at once: held-back pipelined requests may go on
        // now (no EPOLLOUT will come to resume them).
        return connection.machine.hasPendingInput && connection.lingerDeadline == nil
            && connection.pendingOutputBytes < maxPending
            && Int(connection.fd) < self.connections.count && self.connections[Int(connection.fd)] === connection
    }

    /// Writes pending output, then closes, lingers or updates epoll interest.
    private func flush(_ connection: Connection) {
        let fd = connection.fd
        if connection.outputOffset == 0 { connection.lastWriteProgress = self.now }
        while connection.pendingOutputBytes > 0 {
            let result: IOResult<Int>
            do {
                let offset = connection.outputOffset
                result = try syscall("send") {
                    connection.output.withUnsafeBytes { head in
                        connection.outputBody.withUnsafeBytes { body in
                            EventLoop.send(fd, head, body, from: offset)
                        }
                    }
                }
            } catch {
                return self.failed(connection, error)
            }
            guard case .processed(let written) = result else { break }
            connection.outputOffset += written
            connection.lastWriteProgress = self.now
        }
        if connection.pendingOutputBytes == 0 {
            connection.output.removeAll(keepingCapacity: connection.output.capacity <= EventLoop.keptOutputCapacity)
            connection.outputBody = []
            connection.outputOffset = 0
            if connection.closeRequested && connection.lingerDeadline == nil {
                if connection.lingerRequested {
                    // Half-close so the client sees our answer and EOF, then drain its
                    // remaining input for a bounded time instead of answering it with RST.
                    _ = Glibc.shutdown(fd, Int32(SHUT_WR))
                    connection.lingerDeadline = self.now + min(self.shared.configuration.lingerTimeout, max(0, self.forceDeadline - self.now))
                } else {
                    self.close(connection)
                    return
                }
            }
        }
        self.updateInterest(connection)
    }

    /// Sends `head` then `body` from `offset` (counted across both) in one call: `send` for one
    /// piece, `sendmsg` with two. MSG_NOSIGNAL: a reset client is EPIPE, never SIGPIPE.
    private static func send(_ fd: Int32, _ head: UnsafeRawBufferPointer, _ body: UnsafeRawBufferPointer, from offset: Int) -> Int {
        if body.isEmpty || offset >= head.count {
            let piece = body.isEmpty ? head : body
            let start = body.isEmpty ? offset : offset - head.count
            return Glibc.send(fd, piece.baseAddress.map { $0 + start }, piece.count - start, Int32(MSG_NOSIGNAL))
        }
        var pieces = (iovec(iov_base: UnsafeMutableRawPointer(mutating: head.baseAddress! + offset), iov_len: head.count - offset),
                      iovec(iov_base: UnsafeMutableRawPointer(mutating: body.baseAddress!), iov_len: body.count))
        return withUnsafeMutableBytes(of: &pieces) { raw in
            var message = msghdr()
            message.msg_iov = raw.baseAddress!.assumingMemoryBound(to: iovec.self)
            message.msg_iovlen = 2
            return sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
        }
    }

    private func updateInterest(_ connection: Connection) {
        var wanted: UInt32 = 0
        if connection.lingerDeadline != nil {
            wanted = concord_EPOLLIN
        } else {
            if connection.pendingOutputBytes > 0 { wanted |= concord_EPOLLOUT }
            if !connection.closeRequested, connection.machine.wantsInput,
               connection.pendingOutputBytes < self.shared.configuration.maxPendingOutputBytes {
                wanted |= concord_EPOLLIN
            }
        }
        guard wanted != connection.interest else { return }
        connection.interest = wanted
        _ = concord_epoll_ctl(self.epollFD, EPOLL_CTL_MOD, connection.fd, wanted, UInt64(UInt32(bitPattern: connection.fd)))
    }

    private func close(_ connection: Connection) {
        let index = Int(connection.fd)
        guard index < self.connections.count, self.connections[index] === connection else { return }
        self.connections[index] = nil
        self.connectionCount -= 1
        connection.clientGone?.signal()
        connection.clientGone = nil
        // Closing the fd also removes it from the epoll set (we never dup it).
        closeDescriptor(connection.fd)
        self.release(connection)
    }

    private func releaseBody(_ connection: Connection) {
        guard connection.reservedBodyBytes > 0 else { return }
        self.shared.bodyBytesInFlight.subtract(connection.reservedBodyBytes, ordering: .relaxed)
        connection.reservedBodyBytes = 0
    }

    private func release(_ connection: Connection) {
        self.releaseBody(connection)
        if let address = connection.addressSlot {
            connection.addressSlot = nil
            self.shared.releaseAddressSlot(address)
        }
        if connection.counted {
            self.shared.openConnections.subtract(1, ordering: .relaxed)
        } else {
            self.shared.refusingConnections.subtract(1, ordering: .relaxed)
        }
    }

    private func closeAll() {
        for case let connection? in self.connections {
            self.close(connection)
        }
    }
}
