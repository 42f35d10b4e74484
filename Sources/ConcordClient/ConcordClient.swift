import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A client of a Concord server, for apps on iOS, macOS and Linux: async/await over
/// `URLSession`, names and shapes as in PhotoKit.
///
/// One client speaks with one token: the admin token (accounts), an account token (devices)
/// or a device token (library, mappings, history, journals). `withToken(_:)` makes a client
/// for another token sharing the configuration.
///
/// ```swift
/// let client = ConcordClient(baseURL: URL(string: "https://concord.example")!, token: deviceToken)
/// let mappings = try await client.cloudIdentifierMappings(forLocalIdentifiers: ids)
/// ```
///
/// A device's client keeps the token of its last library write (`librarySyncState`) and sends
/// it as `If-Match` with the next, so a `LibraryChangedElsewhereError` means another installation
/// holding the same device token wrote. The app saves that state and passes it back at launch.
///
/// Thread-safe: share one client across tasks (and make one device's library writes through one).
public final class ConcordClient: Sendable {
    /// Settings beyond the server and the token.
    public struct Configuration: Sendable {
        /// Items per mapping request; larger batches are split. The client lowers it by itself
        /// when the server answers `413 batchTooLarge` with a smaller `maxBatch`.
        public var maxBatch: Int
        /// Chunks of one split batch in flight at once (1: one after the other).
        public var batchConcurrency: Int
        /// When to retry (503, connection failures) and how long to wait.
        public var retryPolicy: RetryPolicy
        /// The session requests go through (inject one for its delegate, proxy or caching).
        public var session: URLSession
        /// Per-request timeout, in seconds.
        public var timeout: TimeInterval
        /// Told of every HTTP request just before it is sent, each retry again (for logs,
        /// metrics, tests). Called on the sending task: keep it short.
        public var onRequest: (@Sendable (URLRequest) -> Void)?

        public init(maxBatch: Int = 10_000, batchConcurrency: Int = 2, retryPolicy: RetryPolicy = .standard, session: URLSession = .shared, timeout: TimeInterval = 60,
                    onRequest: (@Sendable (URLRequest) -> Void)? = nil) {
            self.maxBatch = maxBatch
            self.batchConcurrency = batchConcurrency
            self.retryPolicy = retryPolicy
            self.session = session
            self.timeout = timeout
            self.onRequest = onRequest
        }
    }

    /// The server's root, e.g. `https://concord.example` (paths `/v1/...` are appended).
    public let baseURL: URL
    /// The bearer token sent with every request (nil: none, for `/health`).
    public let token: String?
    /// The configuration given at creation.
    public let configuration: Configuration
    /// The batch size in force: the configured one until the server asks for less.
    let batchLimit: BatchLimit
    /// The token of this installation's last library write, and the order of library writes.
    let librarySync: LibrarySyncStore

    /// A client of the server at `baseURL` speaking with `token`.
    ///
    /// - Parameters:
    ///   - librarySyncState: what an earlier launch's client remembered of its library writes
    ///     (`librarySyncState`, saved by the app); the default remembers nothing yet.
    ///   - onLibrarySyncStateUpdate: called after each change of `librarySyncState` (each library
    ///     write), before the write returns: save the state there.
    public init(baseURL: URL, token: String?, configuration: Configuration = Configuration(),
                librarySyncState: LibrarySyncState = LibrarySyncState(),
                onLibrarySyncStateUpdate: (@Sendable (LibrarySyncState) -> Void)? = nil) {
        self.baseURL = baseURL
        self.token = token
        self.configuration = configuration
        self.batchLimit = BatchLimit(max(1, configuration.maxBatch))
        self.librarySync = LibrarySyncStore(librarySyncState, onUpdate: onLibrarySyncStateUpdate)
    }

    /// A client for the same server and configuration speaking with another token (the
    /// account token from `createAccount`, a device token from `createDevice`), with a library
    /// state of its own (another token is another device, or a fresh start).
    public func withToken(_ token: String?) -> ConcordClient {
        ConcordClient(baseURL: self.baseURL, token: token, configuration: self.configuration)
    }

    /// `withToken(_:)` keeping a library state: after `rotateDeviceToken`, the same device's
    /// client goes on with `librarySyncState` of the one before.
    public func withToken(_ token: String?, librarySyncState: LibrarySyncState,
                          onLibrarySyncStateUpdate: (@Sendable (LibrarySyncState) -> Void)? = nil) -> ConcordClient {
        ConcordClient(baseURL: self.baseURL, token: token, configuration: self.configuration,
                      librarySyncState: librarySyncState, onLibrarySyncStateUpdate: onLibrarySyncStateUpdate)
    }

    /// The batch size currently used to split mapping requests.
    public var effectiveMaxBatch: Int { self.batchLimit.value }
}

/// The batch size shared by the client's requests; lowered when the server says so.
///
/// `@unchecked Sendable`: the one stored value is read and written only under `lock`.
final class BatchLimit: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Int

    init(_ value: Int) { self.current = value }

    var value: Int {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.current
    }

    /// Keeps the smaller of the current value and `value` (never raises it: a server that
    /// once refused a size is not trusted to take it later).
    func lower(to value: Int) {
        self.lock.lock()
        defer { self.lock.unlock() }
        self.current = max(1, min(self.current, value))
    }
}
