import ConcordHTTP

/// What the transport calls for each complete request.
///
/// `handle` is called on an event-loop thread and must not block it: anything that
/// may wait (storage) is moved to another queue by the responder. `respond` must be
/// called exactly once, from any thread; the transport hops back to the connection's
/// loop, keeps pipelined responses in request order, and applies keep-alive rules.
/// What the transport knows of the connection (peer address, the client going away) comes in
/// `context`, not on the request.
public protocol HTTPResponder: Sendable {
    func handle(_ request: HTTPRequest, context: ConnectionContext, respond: @escaping @Sendable (HTTPResponse) -> Void)

    /// Decides from a head whether its body is read (called before reading a body the client
    /// waits to send — `Expect: 100-continue` —, a chunked one, or one larger than
    /// `ServerConfiguration.admitBodiesOver` that did not arrive with its head; by default every
    /// body still to come). Same threading
    /// rules as `handle`: never block the loop; `decide` exactly once, from any thread.
    func admit(_ head: HTTPRequestHead, context: ConnectionContext, decide: @escaping @Sendable (HTTPAdmission) -> Void)
}

extension HTTPResponder {
    /// Every body is read.
    public func admit(_ head: HTTPRequestHead, context: ConnectionContext, decide: @escaping @Sendable (HTTPAdmission) -> Void) {
        decide(.proceed(maxBodyBytes: nil, handler: nil))
    }

    /// A request that came on no connection (tests, in-process callers).
    public func handle(_ request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) {
        self.handle(request, context: ConnectionContext(), respond: respond)
    }
}
