import ConcordHTTP
import Synchronization

/// What the transport knows of the connection a request came on, handed to the responder beside
/// the request (the parsed message stays plain values; after Hummingbird's
/// `RemoteAddressRequestContext`).
public struct ConnectionContext: Sendable {
    /// The client's IP address as the transport saw it (nil when unknown).
    public var remoteAddress: String?
    /// Signalled when the client closes the connection, or its sending side, before this request
    /// is answered (nil when the transport does not tell).
    public var clientGone: ClientGoneSignal?

    public init(remoteAddress: String? = nil, clientGone: ClientGoneSignal? = nil) {
        self.remoteAddress = remoteAddress
        self.clientGone = clientGone
    }
}

/// Tells a responder holding a request (a long-poll) that its client closed the connection or
/// its sending side before the answer came: it can answer at once instead of waiting out its
/// time. A half-closed client still reads the answer; a gone one never will.
public final class ClientGoneSignal: Sendable {
    private let state = Mutex<(gone: Bool, handler: (@Sendable () -> Void)?)>((false, nil))

    public init() {}

    /// Runs `handler` once the client is gone (at once if it already is); replaces an earlier one.
    public func onGone(_ handler: @escaping @Sendable () -> Void) {
        let runNow = self.state.withLock { state -> Bool in
            if state.gone { return true }
            state.handler = handler
            return false
        }
        if runNow { handler() }
    }

    /// The transport: the client went. Runs the handler, once.
    public func signal() {
        let handler = self.state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.gone else { return nil }
            state.gone = true
            defer { state.handler = nil }
            return state.handler
        }
        handler?()
    }
}
