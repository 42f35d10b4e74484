#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CConcordSystem
import ConcordDomain
import ConcordHTTP
import ConcordObservability
import ConcordStorage
import ConcordTransport
import Dispatch
import Synchronization

/// A started Concord server: listening, serving, until `shutdown()`.
public final class RunningApp: Sendable {
    /// The bound port (the real one when configured with port 0).
    public let port: Int
    public let context: AppContext
    let server: HTTPServer
    let dispatcher: Dispatcher
    let sink: LogSink
    private let stopped = Mutex(false)

    init(port: Int, context: AppContext, server: HTTPServer, dispatcher: Dispatcher, sink: LogSink) {
        self.port = port
        self.context = context
        self.server = server
        self.dispatcher = dispatcher
        self.sink = sink
    }

    /// Graceful shutdown, in reverse order of start: stop accepting and let requests in
    /// flight finish within `shutdownGrace` (API.md §8), stop the workers, close storage
    /// (unless a request still runs after the grace: the time stays bounded), flush the logs.
    /// Later calls return at once.
    public func shutdown() {
        let already = self.stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !already else { return }
        let grace = self.context.configuration.server.timeouts.shutdownGrace
        let start = MonotonicClock.nanoseconds()
        // Held long-polls are answered first (their empty page), so the drain below does not wait for them.
        self.context.longPolls.shutdown()
        self.server.shutdown(gracePeriod: grace)
        let spent = Double(MonotonicClock.nanoseconds() - start) / 1e9
        let unfinished = self.dispatcher.shutdown(deadline: max(0.1, grace - spent))
        if unfinished == 0 {
            self.context.storage.close()
        } else {
            // Closing storage would wait for those requests (a write holds the writer), past the
            // bounded grace. They were never answered, so nothing they wrote was acknowledged:
            // once the process exits, SQLite's WAL and PostgreSQL drop their open transactions.
            self.context.logger.warning("shutdown grace over; exiting with requests unfinished", metadata: ["unfinished": .int(unfinished)])
        }
        self.context.logger.notice("stopped")
        self.sink.shutdown()
    }
}

/// Starts a server for `configuration`: logger, storage, admin token, routes, listener.
/// Throws a one-line reason when it cannot start (port taken, database unusable).
///
/// - Parameter sink: where log lines go; stdout when nil.
/// - Parameter extraRoutes: routes served besides the API's (tests use it for slow handlers).
public func startApp(_ configuration: Configuration, sink: LogSink? = nil, extraRoutes: [Route] = []) throws(StartupError) -> RunningApp {
    let sink = sink ?? LogSink()
    let logger = Logger(level: configuration.logLevel, sink: sink)
    let metrics = MetricsRegistry()
    // What has started so far, undone in reverse order when a later step fails.
    var started = StartedComponents()
    do throws(StartupError) {
        let cores = ServerConfiguration.coreCount
        let workers = configuration.workers > 0 ? configuration.workers : max(4, 2 * cores)
        // Each worker holds at most one connection at a time: more would sit idle.
        let poolSize = configuration.databasePoolSize > 0 ? configuration.databasePoolSize : workers
        let storage = try StorageHook.open(
            configuration.database, history: configuration.history, maxBatch: configuration.server.limits.maxBatch,
            sqliteSynchronous: configuration.sqliteSynchronous, poolSize: poolSize,
            sqliteMemory: SQLiteMemory(cacheKiB: configuration.sqliteCacheMegabytes * 1024, mmapBytes: configuration.sqliteMmapMegabytes << 20),
            mappingIndexMegabytes: configuration.mappingIndexMegabytes, quotas: configuration.quotas)
        started.add { storage.close() }
        // Long-polls hear other instances' commits through PostgreSQL (issue 13).
        (storage.store as? PostgresStore)?.listenForOtherInstances()
        if let index = storage.service.mappingIndex { registerMappingIndexMetrics(metrics, index) }

        let (adminToken, generatedTokenFile) = try AdminToken.resolve(configured: configuration.adminToken, database: configuration.database, logger: logger)
        // A token nobody could use (the server never listened) must not be the one the next
        // start reads back: the operator never saw it served.
        if let generatedTokenFile { started.add { unlink(generatedTokenFile) } }
        let context = AppContext(configuration: configuration, logger: logger, metrics: metrics, adminToken: adminToken, storage: storage)

        let dispatcher = Dispatcher(routes: allRoutes(context) + extraRoutes, logger: logger, metrics: metrics, workerCount: workers, cores: cores,
                                    rates: context.rates, bodyLimits: BodyLimits(configuration.server.limits), clock: context.clock)
        started.add { dispatcher.shutdown(deadline: 0.1) }

        let httpServer = HTTPServer(configuration: ServerConfiguration(configuration.server), responder: dispatcher,
                                    onEvent: transportEventHandler(logger: logger, metrics: metrics))
        registerProcessMetrics(metrics, server: httpServer)
        let port: Int
        do {
            port = try httpServer.start()
        } catch {
            throw StartupError(error.message)
        }
        logger.notice("listening", metadata: [
            "host": .string(configuration.server.host), "port": .int(port),
            "database": .string(configuration.database.description), "workers": .int(workers),
        ])
        return RunningApp(port: port, context: context, server: httpServer, dispatcher: dispatcher, sink: sink)
    } catch {
        started.unwind()
        sink.shutdown()
        throw error
    }
}

/// Components a start has brought up, each with how to stop it: a failed start stops them in
/// reverse order, so nothing it opened outlives it.
struct StartedComponents {
    private var stops: [() -> Void] = []

    mutating func add(_ stop: @escaping () -> Void) { self.stops.append(stop) }

    func unwind() {
        for stop in self.stops.reversed() { stop() }
    }
}

extension ServerConfiguration {
    /// The transport's settings from the configuration's `server` section.
    init(_ server: Configuration.Server) {
        self.init(host: server.host, port: server.port)
        self.limits = HTTPLimits(
            maxRequestLineBytes: server.limits.requestLineBytes, maxHeaderBytes: server.limits.headerBytes,
            maxHeaderCount: server.limits.headerCount, maxBodyBytes: server.limits.bodyBytes)
        self.maxConnections = server.limits.maxConnections
        self.maxBodyBytesInFlight = server.limits.bodyBytesInFlight
        self.headerReadTimeout = server.timeouts.headerRead
        self.bodyReadTimeout = server.timeouts.bodyRead
        self.minBodyRate = server.timeouts.minBodyRate
        self.bodyRateGrace = server.timeouts.bodyRateGrace
        self.idleTimeout = server.timeouts.idle
        self.writeTimeout = server.timeouts.write
        if server.eventLoops > 0 { self.eventLoopCount = server.eventLoops }
    }
}

/// Logs what the transport reports and counts refused requests.
private func transportEventHandler(logger: Logger, metrics: MetricsRegistry) -> @Sendable (TransportEvent) -> Void {
    let refused = metrics.counter("concord_http_refused_total", help: "Requests refused by the transport (parse errors, limits, timeouts, 503).")
    return { event in
        switch event {
        case .listening: break
        case .connectionError(let message): logger.warning("connection error", metadata: ["error": .string(message)])
        case .acceptError(let code): logger.error("accept failed", metadata: ["errno": .int(Int(code))])
        case .protocolError(let status, let name):
            refused.increment()
            logger.info("request refused", metadata: ["status": .int(status), "error": .string(name)])
        }
    }
}

/// The mapping index's counters and size (read at exposition time).
private func registerMappingIndexMetrics(_ metrics: MetricsRegistry, _ index: MappingIndex) {
    let counters: [(String, String, @Sendable (MappingIndex.Statistics) -> Int)] = [
        ("concord_mapping_index_hits_total", "Mapping reads answered by an account index already current.", { $0.hits }),
        ("concord_mapping_index_loads_total", "Account indexes loaded from storage (first use, after eviction).", { $0.loads }),
        ("concord_mapping_index_catch_ups_total", "Account indexes reloaded because another instance had written.", { $0.catchUps }),
        ("concord_mapping_index_applied_writes_total", "Write transactions applied to an account index after their commit.", { $0.appliedWrites }),
        ("concord_mapping_index_evictions_total", "Account indexes evicted to stay within mappingIndexMegabytes.", { $0.evictions }),
        ("concord_mapping_index_too_large_total", "Mapping reads served from storage because the account does not fit the budget.", { $0.tooLarge }),
    ]
    for (name, help, read) in counters {
        metrics.gauge(name, help: help) { Double(read(index.statistics)) }
    }
    metrics.gauge("concord_mapping_index_resident_bytes", help: "Estimated bytes held by the loaded account indexes.") { Double(index.statistics.residentBytes) }
    metrics.gauge("concord_mapping_index_accounts", help: "Accounts whose index is loaded.") { Double(index.statistics.accounts) }
}

/// Open connections, start time and build of the process.
private func registerProcessMetrics(_ metrics: MetricsRegistry, server: HTTPServer) {
    metrics.gauge("concord_http_open_connections", help: "Connections currently open.") { Double(server.openConnections) }
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let startTime = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    metrics.gauge("concord_process_start_time_seconds", help: "When the process started, in seconds since the Unix epoch.") { startTime }
    metrics.gauge("concord_build_info", help: "Always 1; the version is a label.", labels: [("version", CommandLineInterface.version)]) { 1 }
}

/// `concord serve`: starts, serves until SIGTERM or SIGINT, shuts down gracefully.
/// Returns the process exit status: 0 after a clean shutdown, 1 when it cannot start.
public func serve(_ configuration: Configuration) -> Int32 {
    // Take the signals away from their default action (terminate) before anything
    // starts, so a signal arriving during startup is not lost and does not kill us.
    signal(SIGTERM, SIG_IGN)
    signal(SIGINT, SIG_IGN)
    let received = Mutex<Int32>(0)
    let stop = DispatchSemaphore(value: 0)
    let queue = DispatchQueue(label: "concord.signals")
    let sources = [SIGTERM, SIGINT].map { number in
        let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
        source.setEventHandler {
            received.withLock { $0 = number }
            stop.signal()
        }
        source.resume()
        return source
    }
    defer { for source in sources { source.cancel() } }

    // A fixed mmap threshold: buffers of 1 MiB and more (request bodies, large answers) get their
    // own mapping and go back to the kernel when freed. glibc otherwise raises the threshold
    // after the first such free, and a 20 MB manifest body then stays in the heap for good.
    _ = concord_set_mmap_threshold(1 << 20)
    // Fixing the mmap threshold also fixes glibc's trim threshold at 128 KiB: every answer of a
    // mapping batch (130 KB) then handed its pages back on free and faulted them in again, zeroed, on
    // the next request. 8 MiB of free heap top is kept; requests or answers of 1 MiB and more still
    // return memory explicitly (Dispatcher's malloc_trim).
    _ = concord_set_trim_threshold(8 << 20)
    // One malloc arena per core, not glibc's eight: each arena keeps its own free memory, and
    // with a worker pool larger than the core count that multiplied the resident size (measured
    // in docs/benchmarks.md) for no measurable gain in speed.
    _ = concord_set_arena_max(Int32(max(2, ServerConfiguration.coreCount)))
    let app: RunningApp
    do {
        app = try startApp(configuration)
    } catch {
        printError("concord: cannot start: \(error.message)")
        return 1
    }
    stop.wait()
    let number = received.withLock { $0 }
    app.context.logger.notice("shutting down", metadata: ["signal": .string(number == SIGINT ? "SIGINT" : "SIGTERM")])
    app.shutdown()
    return 0
}

/// One line on stderr.
func printError(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    bytes.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
}
