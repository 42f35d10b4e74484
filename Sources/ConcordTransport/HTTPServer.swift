import CConcordSystem
import ConcordHTTP
import Glibc
import Synchronization

/// An HTTP/1.1 server on raw sockets: one listening socket shared by N epoll event loops
/// (one thread each), keep-alive, pipelining in order, limits and timeouts from
/// `ServerConfiguration`, graceful shutdown.
///
/// One shared listener (registered with EPOLLEXCLUSIVE) rather than an SO_REUSEPORT
/// listener per loop: on this project's wrk runs the two were equal with keep-alive and the
/// shared one was ahead with a new connection per request; and SO_REUSEPORT would let a
/// second process of the same user bind the same port silently instead of failing.
public final class HTTPServer: Sendable {
    private struct Running {
        var listenFD: Int32
        var loops: [EventLoop]
        var threads: [pthread_t]
    }

    private enum Phase {
        case idle
        case running(Running)
        case stopped
    }

    private let shared: ServerShared
    private let phase = Mutex(Phase.idle)

    /// A server that will serve `responder`; nothing happens until `start()`.
    /// `onEvent` is called from loop threads; it must be cheap and thread-safe.
    public init(
        configuration: ServerConfiguration,
        responder: any HTTPResponder,
        onEvent: @escaping @Sendable (TransportEvent) -> Void = { _ in }
    ) {
        self.shared = ServerShared(configuration: configuration, responder: responder, onEvent: onEvent)
    }

    /// Connections currently being served (refused 503 connections excluded). Any thread.
    public var openConnections: Int {
        self.shared.openConnections.load(ordering: .relaxed)
    }

    /// Binds, listens and starts the loops. Returns the bound port (port 0 → ephemeral).
    /// Throws `TransportError` with a one-line reason, e.g.
    /// "cannot listen on 0.0.0.0:8080: address already in use".
    @discardableResult
    public func start() throws(TransportError) -> Int {
        // A client that resets mid-write must produce EPIPE, not kill the process.
        // (MSG_NOSIGNAL covers send; this covers anything else that writes to a socket.)
        signal(SIGPIPE, SIG_IGN)
        let configuration = self.shared.configuration
        let result: Result<Int, TransportError> = self.phase.withLock { phase in
            guard case .idle = phase else {
                return .failure(TransportError("the server was already started or shut down"))
            }
            let listener: (fd: Int32, port: Int)
            do throws(TransportError) {
                listener = try makeListener(host: configuration.host, port: configuration.port)
            } catch {
                return .failure(error)
            }
            var loops: [EventLoop] = []
            for _ in 0..<max(1, configuration.eventLoopCount) {
                do throws(TransportError) {
                    loops.append(try EventLoop(shared: self.shared, listenFD: listener.fd))
                } catch {
                    // Loops never ran: closing their epoll fds releases everything.
                    for loop in loops { loop.abandon() }
                    closeDescriptor(listener.fd)
                    return .failure(error)
                }
            }
            var threads: [pthread_t] = []
            for (index, loop) in loops.enumerated() {
                let batch = configuration.batchScheduling
                guard let thread = startThread(name: "concord-loop-\(index)", {
                    if batch { _ = concord_set_thread_batch_scheduling() }
                    loop.run()
                }) else {
                    let deadline = monotonicNow()
                    for started in loops[..<index] { started.requestShutdown(deadline: deadline) }
                    for thread in threads { pthread_join(thread, nil) }
                    for unstarted in loops[index...] { unstarted.abandon() }
                    closeDescriptor(listener.fd)
                    return .failure(TransportError("cannot start event loop thread: \(SystemError.describe(Glibc.errno))"))
                }
                threads.append(thread)
            }
            phase = .running(Running(listenFD: listener.fd, loops: loops, threads: threads))
            return .success(listener.port)
        }
        let port = try result.get()
        self.shared.onEvent(.listening(host: configuration.host, port: port))
        return port
    }

    /// Stops accepting, closes idle connections, lets requests in flight finish (their
    /// responses carry `Connection: close`), force-closes whatever is left after
    /// `gracePeriod` seconds, and returns once every loop thread has exited.
    /// Safe from any thread, including a signal-handling one; later calls return at once.
    /// Called on an event-loop thread (from a responder), it starts the same shutdown but
    /// returns without waiting, since that loop cannot finish while its thread is here.
    public func shutdown(gracePeriod: Double) {
        let running: Running? = self.phase.withLock { phase in
            guard case .running(let running) = phase else {
                phase = .stopped
                return nil
            }
            phase = .stopped
            return running
        }
        guard let running else { return }
        let deadline = monotonicNow() + max(0, gracePeriod)
        for loop in running.loops { loop.requestShutdown(deadline: deadline) }
        let join = {
            for thread in running.threads { pthread_join(thread, nil) }
            // Every loop has removed the listener from its epoll set and exited.
            closeDescriptor(running.listenFD)
        }
        if concord_current_loop() != nil {
            // Called from a responder on a loop thread: that loop cannot wait for itself,
            // so the joining happens on a helper thread and this call returns at once.
            if let helper = startThread(name: "concord-stop", join) {
                pthread_detach(helper)
            } else {
                join()
            }
            return
        }
        join()
    }
}

/// Carries a closure into a new pthread.
private final class ThreadBody {
    let name: String
    let body: () -> Void
    init(name: String, _ body: @escaping () -> Void) {
        self.name = String(name.utf8.prefix(15)) ?? "concord-loop"
        self.body = body
    }
}

/// Starts a joinable thread running `body`; nil if the system refuses.
private func startThread(name: String, _ body: @escaping () -> Void) -> pthread_t? {
    var thread = pthread_t()
    let box = Unmanaged.passRetained(ThreadBody(name: name, body)).toOpaque()
    let status = pthread_create(&thread, nil, { argument in
        guard let argument else { return nil }
        let body = Unmanaged<ThreadBody>.fromOpaque(argument).takeRetainedValue()
        concord_set_thread_name(body.name)
        body.body()
        return nil
    }, box)
    guard status == 0 else {
        Unmanaged<ThreadBody>.fromOpaque(box).release()
        errno = status
        return nil
    }
    return thread
}
