import CConcordSystem
import ConcordHTTP

/// One accepted socket and everything the loop keeps for it. Owned by exactly one event
/// loop and touched only on that loop's thread; the loop closes `fd` exactly once.
final class Connection {
    let fd: Int32
    /// Distinguishes this connection from a later one that reuses the same fd number,
    /// so a late `respond` cannot reach the wrong client.
    let id: UInt64
    var machine: HTTPConnectionStateMachine
    /// Actions the machine produced, processed in order (a queue, see `EventLoop.process`).
    var actions: [HTTPConnectionStateMachine.Action] = []
    var processing = false
    /// Serialised output not yet accepted by the kernel, from `outputOffset` on: `output`, then
    /// `outputBody` (the last response's large body, sent from the response's own array rather
    /// than copied behind its head; `outputOffset` counts across both).
    var output: [UInt8] = []
    var outputBody: [UInt8] = []
    var outputOffset = 0
    /// The epoll events currently registered.
    var interest: UInt32
    /// Close once `output` is written (with or without lingering).
    var closeRequested = false
    var lingerRequested = false
    /// Set once the write side is shut down: read and discard until EOF or this deadline.
    var lingerDeadline: Double? = nil
    /// When the kernel last accepted output from us (or output became pending).
    var lastWriteProgress: Double = 0
    /// Counts toward `HTTPServer.openConnections` (refused 503 connections do not).
    let counted: Bool
    /// Bytes of the current request's body counted in `ServerShared.bodyBytesInFlight`,
    /// given back when its response is queued or the connection closes.
    var reservedBodyBytes = 0
    /// The client's IP address, nil when unknown (given to the responder with each request).
    let remoteAddress: String?
    /// The address whose place this connection holds in `ServerShared.connectionsByAddress`
    /// (nil: not counted per address — a trusted proxy, no cap, or a refusal).
    var addressSlot: String?
    /// The request with the responder, told when the client goes before its answer (`ConnectionContext.clientGone`).
    var clientGone: ClientGoneSignal?

    init(fd: Int32, id: UInt64, machine: HTTPConnectionStateMachine, interest: UInt32, counted: Bool, remoteAddress: String?) {
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.id = id
        self.machine = machine
        self.interest = interest
        self.counted = counted
    }

    /// The peer's IP address of socket `fd`, nil when unknown.
    static func peerAddress(_ fd: Int32) -> String? {
        var text = [CChar](repeating: 0, count: 64)
        return concord_peer_address(fd, &text, 64) == 0
            ? String(decoding: text.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
    }

    var pendingOutputBytes: Int { self.output.count + self.outputBody.count - self.outputOffset }

    /// Moves `outputBody` behind `output`, so more output can be appended in order.
    func joinOutputBody() {
        guard !self.outputBody.isEmpty else { return }
        self.output.append(contentsOf: self.outputBody)
        self.outputBody = []
    }
}
