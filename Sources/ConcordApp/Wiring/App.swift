#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CConcordSystem
import ConcordDomain
import ConcordHTTP
import ConcordMappingIndex
import ConcordOutbound
import ConcordObservability
import ConcordStorage
import ConcordTransport
import Dispatch
import Foundation
import Synchronization

/// A started Concord server: listening, serving, until `shutdown()`.
public final class RunningApp: Sendable {
    /// The bound port (the real one when configured with port 0).
    public let port: Int
    public let context: AppContext
    let server: HTTPServer
    let dispatcher: Dispatcher
    let sink: LogSink
    /// What started, in order; stopped in reverse by `shutdown()`.
    let lifecycle: Lifecycle

    init(port: Int, context: AppContext, server: HTTPServer, dispatcher: Dispatcher, sink: LogSink, lifecycle: Lifecycle) {
        self.port = port
        self.context = context
        self.server = server
        self.dispatcher = dispatcher
        self.sink = sink
        self.lifecycle = lifecycle
    }

    /// Graceful shutdown: every component `startApp` registered, stopped in reverse order of
    /// start — held long-polls answered, the listener closed and requests in flight finished
    /// within `shutdownGrace`, the workers stopped, storage closed (unless a request
    /// still runs after the grace: the time stays bounded), the logs flushed. Later calls return at once.
    public func shutdown() {
        self.lifecycle.stop(.shutdown)
    }
}

/// Starts a server for `configuration`: logger, storage, admin token, routes, listener.
/// Throws a one-line reason when it cannot start (port taken, database unusable).
///
/// Each component is registered with `Lifecycle` as it starts; a failed start stops those
/// already started in reverse order, as `RunningApp.shutdown()` does.
///
/// - Parameter sink: where log lines go; stdout when nil.
/// - Parameter extraRoutes: routes served besides the API's (tests use it for slow handlers).
/// - Parameter scheduler: where timed work waits (nil: a `Scheduler` of its own, stopped at
///   shutdown; tests pass a `ManualScheduler` to move long-polls' time themselves).
public func startApp(_ configuration: Configuration, sink: LogSink? = nil, extraRoutes: [Route] = [],
                     scheduler: (any TimedWorkScheduler)? = nil) throws(StartupError) -> RunningApp {
    let sink = sink ?? LogSink()
    let logger = Logger(level: configuration.logLevel, sink: sink)
    let metrics = MetricsRegistry()
    let lifecycle = Lifecycle()
    let clock = AppClock.monotonic
    let wallClock = WallClock.system
    /// When the shutdown began, and how many requests were still unfinished after the workers' deadline.
    let shutdown = ShutdownProgress()
    lifecycle.register("logs") { reason in
        if reason == .shutdown { logger.notice("stopped") }
        sink.shutdown()
    }
    // Timed work (long-poll deadlines, background snapshot saves) waits here; stopped after
    // everything that schedules on it.
    let ownScheduler = scheduler == nil ? Scheduler(clock: clock) : nil
    let scheduler = scheduler ?? ownScheduler!
    lifecycle.register("scheduler") { _ in ownScheduler?.stop() }
    do throws(StartupError) {
        let cores = ServerConfiguration.coreCount
        let workers = configuration.workers > 0 ? configuration.workers : max(4, 2 * cores)
        // Webhooks: destinations checked against webhooks.allowedHosts, secrets sealed under the webhook key.
        let policy: DestinationPolicy
        do { policy = try DestinationPolicy(allowedHosts: configuration.webhooks.allowedHosts) } catch { throw StartupError(String(describing: error)) }
        let (webhookKey, generatedKeyFile) = try WebhookKeyFile.resolve(configured: configuration.webhooks.secretKey, database: configuration.database,
                                                                         logger: logger)
        // Like a generated admin token: a key no served secret was sealed under is not kept by a failed start.
        if let generatedKeyFile {
            lifecycle.register("generated webhook key") { reason in if reason == .startFailed { unlink(generatedKeyFile) } }
        }
        let wakeRelay = WebhookWakeRelay()
        let coalesced = metrics.counter("concord_webhook_coalesced_total", help: "Webhook events that took a newer change in place, or were superseded by one.")
        var storageOptions = StorageOptions(configuration, workers: workers)
        storageOptions.webhooks = WebhookEnvironment(destinations: PolicyDestinations(policy: policy), secrets: KeyedWebhookSecrets(key: webhookKey),
                                                     settings: configuration.webhooks.settings, wake: { wakeRelay.fire() },
                                                     coalesced: { coalesced.increment() })
        storageOptions.wallClock = wallClock
        // The mapping index's retries are timed by the one scheduler; each load runs on a utility queue.
        storageOptions.runLater = { delay, work in
            _ = scheduler.schedule(after: delay) { DispatchQueue.global(qos: .utility).async(execute: work) }
        }
        let storage = try lifecycle.start("storage", { () throws(StartupError) in try StorageHook.open(storageOptions) }) { storage, reason in
            let unfinished = shutdown.unfinished.load(ordering: .relaxed)
            guard reason == .startFailed || unfinished == 0 else {
                // Closing storage would wait for those requests (a write holds the writer), past the
                // bounded grace. They were never answered, so nothing they wrote was acknowledged:
                // once the process exits, SQLite's WAL and PostgreSQL drop their open transactions.
                logger.warning("shutdown grace over; exiting with requests unfinished", metadata: ["unfinished": .int(unfinished)])
                return
            }
            if reason == .shutdown {
                // Within what is left of the grace (an orchestrator kills the process after it).
                let left = max(1, configuration.server.timeouts.shutdownGrace - shutdown.secondsSinceStart(clock))
                saveMappingIndexSnapshots(storage.service, deadline: wallClock.now().addingTimeInterval(left), onlyQuiet: false, logger: logger, clock: clock)
            }
            storage.service.flushPendingWrites()
            storage.close()
        }
        for warning in storage.warnings { logger.warning(warning) }
        // Settled accounts saved while serving, so that a start after a crash finds them too;
        // stopped (a save in progress finished) before storage's stop saves the rest.
        if storage.service.mappingIndex?.snapshots != nil, configuration.mappingIndexSnapshotSeconds > 0 {
            let saver = BackgroundSnapshots(every: Double(configuration.mappingIndexSnapshotSeconds), scheduler: scheduler) {
                saveMappingIndexSnapshots(storage.service, onlyQuiet: true, logger: logger, clock: clock)
            }
            lifecycle.register("mapping index snapshots") { _ in saver.stop() }
        }
        // Long-polls hear other instances' commits through PostgreSQL; stopped by `close()`.
        storage.listenForOtherInstances()
        if let index = storage.service.mappingIndex {
            registerMappingIndexMetrics(metrics, index)
            index.onCatchUp { c in
                logger.info("mapping index caught up with another instance", metadata: [
                    "account": .string(c.accountID), "from": .int(Int(c.fromVersion)), "to": .int(Int(c.toVersion)),
                    "how": .string(c.fromLog ? "log" : "reload"), "ms": .double(c.seconds * 1000),
                    "cpu_ms": .double(c.cpuSeconds * 1000)])
            }
        }

        let (adminToken, generatedTokenFile) = try AdminToken.resolve(configured: configuration.adminToken, database: configuration.database, logger: logger)
        // A token nobody could use (the server never listened) must not be the one the next
        // start reads back: the operator never saw it served. A served one is kept.
        if let generatedTokenFile {
            lifecycle.register("generated admin token") { reason in if reason == .startFailed { unlink(generatedTokenFile) } }
        }
        // Delivery runs beside the requests, never in them; stopped before storage closes.
        let isSQLite = if case .sqlite = configuration.database { true } else { false }
        let webhookEngine = WebhookDeliveryEngine(service: storage.service, sender: WebhookSender(policy: policy, userAgent: "Concord/\(CommandLineInterface.version)"),
                                                  settings: configuration.webhooks.settings, logger: logger, metrics: metrics, ownsDatabase: isSQLite,
                                                  scheduler: scheduler)
        wakeRelay.set { webhookEngine.wake() }
        // New events (committed here or by another instance), or a lost connection to the others:
        // a commit whose change an event already waiting took in place gives the engine nothing new.
        storage.store.feedSignals.observe { signal in
            if case .committed = signal { return }
            webhookEngine.wake()
        }
        webhookEngine.start()
        lifecycle.register("webhook delivery") { _ in webhookEngine.stop(grace: configuration.server.timeouts.shutdownGrace) }
        let context = AppContext(configuration: configuration, logger: logger, metrics: metrics, adminToken: adminToken, storage: storage, clock: clock,
                                 scheduler: scheduler, webhooks: webhookEngine)

        let dispatcher = try lifecycle.start("workers", { () throws(StartupError) in
            Dispatcher(routes: allRoutes(context) + extraRoutes, logger: logger, metrics: metrics, workerCount: workers, cores: cores,
                       rates: context.rates, bodyLimits: BodyLimits(configuration.server.limits), clock: clock,
                       trustedProxies: configuration.server.trustedProxies,
                       batchScheduling: configuration.server.threadScheduling == .batch)
        }) { dispatcher, reason in
            let grace = configuration.server.timeouts.shutdownGrace
            let deadline = reason == .startFailed ? 0.1 : max(0.1, grace - shutdown.secondsSinceStart(clock))
            shutdown.unfinished.store(dispatcher.shutdown(deadline: deadline), ordering: .relaxed)
        }

        let httpServer = HTTPServer(configuration: ServerConfiguration(configuration.server), responder: dispatcher,
                                    onEvent: transportEventHandler(logger: logger, metrics: metrics))
        registerProcessMetrics(metrics, server: httpServer, startTime: wallClock.now())
        let port = try lifecycle.start("listener", { () throws(StartupError) -> Int in
            do throws(TransportError) {
                return try httpServer.start()
            } catch {
                throw StartupError(error.message)
            }
        }) { (_: Int, _: Lifecycle.Reason) in httpServer.shutdown(gracePeriod: configuration.server.timeouts.shutdownGrace) }
        // Held long-polls are answered first (their empty page), so the listener's drain does not wait for them.
        lifecycle.register("long-polls") { _ in
            shutdown.began.store(clock.nanoseconds(), ordering: .relaxed)
            context.longPolls.shutdown()
        }
        logger.notice("listening", metadata: [
            "host": .string(configuration.server.host), "port": .int(port),
            "database": .string(configuration.database.description), "workers": .int(workers),
        ])
        return RunningApp(port: port, context: context, server: httpServer, dispatcher: dispatcher, sink: sink, lifecycle: lifecycle)
    } catch {
        lifecycle.stop(.startFailed)
        throw error
    }
}

/// How far a shutdown has come: when it began (the workers' deadline is what is left of the grace),
/// and the requests still unfinished after it (storage is then not closed under them).
final class ShutdownProgress: Sendable {
    let began = Atomic<Int64>(0)
    let unfinished = Atomic<Int>(0)

    func secondsSinceStart(_ clock: AppClock) -> Double {
        let began = self.began.load(ordering: .relaxed)
        return began == 0 ? 0 : Double(clock.nanoseconds() - began) / 1e9
    }
}

extension ServerConfiguration {
    /// The transport's settings from the configuration's `server` section.
    init(_ server: Configuration.Server) {
        self.init(host: server.host, port: server.port)
        self.limits = HTTPLimits(
            maxRequestLineBytes: server.limits.requestLineBytes, maxHeaderBytes: server.limits.headerBytes,
            maxHeaderCount: server.limits.headerCount, maxBodyBytes: server.limits.bodyBytes)
        // The server's own limit is the manifests' (a 413 says what to do).
        self.limits.bodyLimitAdvice = "raise server.limits.bodyBytes, or send a whole library as an upload in parts: POST /v1/library/uploads."
        self.maxConnections = server.limits.maxConnections
        self.maxConnectionsPerAddress = server.limits.maxConnectionsPerAddress
        self.trustedProxies = server.trustedProxies
        self.maxBodyBytesInFlight = server.limits.bodyBytesInFlight
        self.headerReadTimeout = server.timeouts.headerRead
        self.bodyReadTimeout = server.timeouts.bodyRead
        self.minBodyRate = server.timeouts.minBodyRate
        self.bodyRateGrace = server.timeouts.bodyRateGrace
        self.idleTimeout = server.timeouts.idle
        self.writeTimeout = server.timeouts.write
        if server.eventLoops > 0 { self.eventLoopCount = server.eventLoops }
        self.batchScheduling = server.threadScheduling == .batch
    }
}

/// The mapping index's accounts saved to their snapshots (the next start loads them from there),
/// and what it took logged: at shutdown, once no request runs, every account changed since its
/// snapshot; in the background (`onlyQuiet`), those that have settled (a pass that saves nothing
/// logs nothing).
private func saveMappingIndexSnapshots(_ service: ConcordService, deadline: Date = .distantFuture, onlyQuiet: Bool, logger: Logger, clock: AppClock) {
    guard service.mappingIndex?.snapshots != nil, (service.mappingIndex?.statistics.accounts ?? 0) > 0 else { return }
    let start = clock.nanoseconds()
    let (saved, failures) = service.saveMappingIndexSnapshots(deadline: deadline, onlyQuiet: onlyQuiet)
    for failure in failures {
        logger.warning("mapping index snapshot not saved", metadata: ["account": .string(failure.accountID), "error": .string("\(failure.error)")])
    }
    guard saved > 0 || !onlyQuiet else { return }
    logger.notice("mapping index snapshots saved", metadata: [
        "accounts": .int(saved), "seconds": .double(Double(clock.nanoseconds() - start) / 1e9), "background": .bool(onlyQuiet),
    ])
}

/// Runs `save` every `seconds` (counted from the end of the previous save) until `stop()`, which
/// waits for a save in progress to end. The scheduler says when; the save runs on a queue of its
/// own, since it takes seconds and the scheduler's other deadlines must not wait for it.
final class BackgroundSnapshots: Sendable {
    private let seconds: Double
    private let scheduler: any TimedWorkScheduler
    private let save: @Sendable () -> Void
    private let saves = DispatchQueue(label: "concord-snapshots")
    /// The next save on the scheduler; nil once stopped.
    private let next = Mutex<ScheduledWork?>(nil)
    private let stopped = Atomic<Bool>(false)

    init(every seconds: Double, scheduler: any TimedWorkScheduler, save: @escaping @Sendable () -> Void) {
        self.seconds = seconds
        self.scheduler = scheduler
        self.save = save
        self.scheduleNext()
    }

    private func scheduleNext() {
        self.next.withLock { next in
            guard !self.stopped.load(ordering: .relaxed) else { return }
            next = self.scheduler.schedule(after: self.seconds) { [self] in
                self.saves.async { [self] in
                    guard !self.stopped.load(ordering: .relaxed) else { return }
                    self.save()
                    self.scheduleNext()
                }
            }
        }
    }

    /// Returns once no save runs (one begun before finishes first); none begins after.
    func stop() {
        self.next.withLock { next in
            self.stopped.store(true, ordering: .relaxed)
            if let next { self.scheduler.cancel(next) }
            next = nil
        }
        self.saves.sync {}
    }

    /// Returns once the save queued or running now (if any) has ended: for tests.
    func waitForSaves() { self.saves.sync {} }
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
        ("concord_mapping_index_catch_ups_total", "Account indexes found behind another instance's writes: caught up from the mapping log, or reloaded.", { $0.catchUps }),
        ("concord_mapping_index_log_catch_ups_total", "Of those, caught up by applying the other instances' changes from the mapping log (PostgreSQL), without a reload.", { $0.logCatchUps }),
        ("concord_mapping_index_logged_writes_applied_total", "Other instances' write transactions applied to an account index from the mapping log.", { $0.loggedWritesApplied }),
        ("concord_mapping_index_applied_writes_total", "Write transactions applied to an account index after their commit.", { $0.appliedWrites }),
        ("concord_mapping_index_evictions_total", "Account indexes evicted to stay within mappingIndexMegabytes.", { $0.evictions }),
        ("concord_mapping_index_too_large_total", "Mapping reads served from storage because the account does not fit the budget.", { $0.tooLarge }),
        ("concord_mapping_index_over_budget_loads_total", "Loads given up in a request because the account did not fit the budget (retried off the request path).", { $0.overBudgetLoads }),
        ("concord_mapping_index_admissions_refused_total", "Mapping reads served from storage because loading the account would have evicted one in use.", { $0.refusedAdmissions }),
        ("concord_mapping_index_background_loads_total", "Account loads off the request path: too-large accounts' retries and slow loads (mappingIndexInlineLoadObjects).", { $0.backgroundLoads }),
        ("concord_mapping_index_background_loads_fitted_total", "Background loads that fitted the budget and were installed.", { $0.backgroundLoadsFitted }),
        ("concord_mapping_index_deferred_loads_total", "Loads moved off the request path: a large account without a current snapshot (mappingIndexInlineLoadObjects).", { $0.deferredLoads }),
        ("concord_mapping_index_reads_while_loading_total", "Mapping reads served from storage while the account loaded off the request path.", { $0.readsWhileLoading }),
        ("concord_mapping_index_snapshot_loads_total", "Accounts loaded from their mapping index snapshot (mappingIndexSnapshots) instead of their tables.", { $0.snapshotLoads }),
        ("concord_mapping_index_snapshots_rejected_total", "Snapshots found stale or damaged (removed; the account loaded from its tables).", { $0.rejectedSnapshots }),
        ("concord_mapping_index_snapshots_saved_total", "Accounts saved to their snapshot (in the background once settled, mappingIndexSnapshotSeconds, and at shutdown).", { $0.savedSnapshots }),
    ]
    for (name, help, read) in counters {
        metrics.gauge(name, help: help) { Double(read(index.statistics)) }
    }
    metrics.gauge("concord_mapping_index_budget_bytes", help: "Memory the mapping index may hold (mappingIndexMegabytes).") { Double(index.budgetBytes) }
    metrics.gauge("concord_mapping_index_resident_bytes", help: "Estimated bytes held by the loaded account indexes.") { Double(index.statistics.residentBytes) }
    metrics.gauge("concord_mapping_index_accounts", help: "Accounts whose index is loaded.") { Double(index.statistics.accounts) }
}

/// Open connections, start time and build of the process.
private func registerProcessMetrics(_ metrics: MetricsRegistry, server: HTTPServer, startTime: Date) {
    metrics.gauge("concord_http_open_connections", help: "Connections currently open.") { Double(server.openConnections) }
    let startTime = startTime.timeIntervalSince1970
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
