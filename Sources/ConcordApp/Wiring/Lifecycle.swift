import Synchronization

/// The components of a running server, each registered once, in the order it started, with how
/// to stop it (after swift-service-lifecycle's `ServiceGroup`): a start that fails stops those
/// already started in reverse order, and so does the normal shutdown — one list for both, so a
/// component cannot be stopped on one path and forgotten on the other.
final class Lifecycle: Sendable {
    /// Why components are being stopped.
    enum Reason: Sendable {
        /// A later component failed to start: undo everything, nothing was served.
        case startFailed
        /// The server ran and is shutting down.
        case shutdown
    }

    /// A stop, with the name it is logged and tested by.
    struct Component: Sendable {
        let name: String
        let stop: @Sendable (Reason) -> Void
    }

    private let components = Mutex<[Component]>([])
    private let stopped = Mutex(false)

    /// Starts a component: runs `start` now and, once it returned, registers how to stop what it
    /// started. A throw registers nothing (what `start` opened, it closes itself).
    func start<T>(_ name: String, _ start: () throws(StartupError) -> T,
                  stop: @escaping @Sendable (T, Reason) -> Void) throws(StartupError) -> T where T: Sendable {
        let value = try start()
        self.components.withLock { $0.append(Component(name: name, stop: { reason in stop(value, reason) })) }
        return value
    }

    /// Registers a stop for something started outside (no value to hand back).
    func register(_ name: String, stop: @escaping @Sendable (Reason) -> Void) {
        self.components.withLock { $0.append(Component(name: name, stop: stop)) }
    }

    /// The registered components' names, in start order.
    var names: [String] { self.components.withLock { $0.map(\.name) } }

    /// Stops every registered component in reverse order, once; later calls return at once.
    func stop(_ reason: Reason) {
        let already = self.stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !already else { return }
        for component in self.components.withLock({ $0 }).reversed() { component.stop(reason) }
    }
}
