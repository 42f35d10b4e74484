#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ConcordDomain
import ConcordMappingIndex
import ConcordStorage
import Foundation

/// Everything opening storage takes, in one value (read from the configuration by `init(_:workers:)`).
public struct StorageOptions: Sendable {
    public var database: Configuration.Database
    /// History retention (changes kept, their age).
    public var history = Configuration.History()
    public var maxBatch = Configuration.Limits().maxBatch
    public var sqliteSynchronous: SQLiteSynchronous = .normal
    /// PostgreSQL connections kept at most.
    public var poolSize = 8
    public var sqliteMemory = SQLiteMemory()
    public var mappingIndexMegabytes = DomainConfiguration().mappingIndexBytes >> 20
    /// `mappingIndexSnapshots`: a directory, `auto` or `off`.
    public var mappingIndexSnapshots = "auto"
    public var mappingIndexInlineLoadObjects = DomainConfiguration().mappingIndexInlineLoadObjects
    public var quotas = Quotas()
    /// Byte bounds.
    public var dataBounds = DataBounds()
    /// Webhooks' destination checks, secrets and settings (nil: webhook routes answer 404).
    public var webhooks: WebhookEnvironment? = nil
    /// The time of changes and records (and of the mapping index's retries).
    public var wallClock = WallClock.system
    /// Where the mapping index's retries wait (`startApp`: the app's one scheduler); the retry's
    /// load itself runs on a queue of its own, never on the scheduler's thread.
    public var runLater: @Sendable (_ delay: Double, _ work: @escaping @Sendable () -> Void) -> Void = MappingIndex.onGlobalQueue

    public init(database: Configuration.Database) { self.database = database }

    /// The configuration's storage settings; `workers` sizes the PostgreSQL pool unless
    /// `databasePoolSize` does (each worker holds at most one connection at a time: more would sit idle).
    public init(_ configuration: Configuration, workers: Int) {
        self.database = configuration.database
        self.history = configuration.history
        self.maxBatch = configuration.server.limits.maxBatch
        self.sqliteSynchronous = configuration.sqliteSynchronous
        self.poolSize = configuration.databasePoolSize > 0 ? configuration.databasePoolSize : workers
        self.sqliteMemory = SQLiteMemory(cacheKiB: configuration.sqliteCacheMegabytes * 1024, mmapBytes: configuration.sqliteMmapMegabytes << 20)
        self.mappingIndexMegabytes = configuration.mappingIndexMegabytes
        self.mappingIndexSnapshots = configuration.mappingIndexSnapshots
        self.mappingIndexInlineLoadObjects = configuration.mappingIndexInlineLoadObjects
        self.quotas = configuration.quotas
        self.dataBounds = configuration.dataBounds
    }

    /// The snapshot directory `mappingIndexSnapshots` names (nil: off, or `auto` with PostgreSQL).
    var snapshotDirectory: String? {
        switch self.mappingIndexSnapshots {
        case "off": return nil
        case "auto":
            guard case .sqlite(let path) = self.database, path != ":memory:" else { return nil }
            return path + "-index"
        default: return self.mappingIndexSnapshots
        }
    }

    /// The domain's settings among them.
    var domain: DomainConfiguration {
        var domain = DomainConfiguration()
        domain.quotas = self.quotas
        domain.dataBounds = self.dataBounds
        domain.mappingIndexBytes = self.mappingIndexMegabytes << 20
        domain.mappingIndexInlineLoadObjects = self.mappingIndexInlineLoadObjects
        domain.maxBatch = self.maxBatch
        domain.historyMaxChanges = self.history.maxChanges
        domain.historyMaxAge = Double(self.history.maxAgeDays) * 24 * 3600
        return domain
    }
}

/// The app's handle on storage: the opened store (readiness, shutdown) and the one
/// `ConcordService` every route calls. `StorageHook.open` is the one place that builds it.
public struct StorageHook: Sendable {
    public let store: any ConcordStore
    /// The domain service over the store (accounts, libraries, mapping, history, journals).
    public let service: ConcordService
    /// Starts hearing other instances' feed commits (PostgreSQL; nothing for SQLite, whose one
    /// process is the only writer). Decided where the engine's concrete type is known.
    private let listen: @Sendable () -> Void
    /// What opening storage could not set up and went on without (for the log).
    public private(set) var warnings: [String] = []

    public init(store: any ConcordStore, service: ConcordService) {
        self.init(store: store, service: service, listen: {})
    }

    init(store: any ConcordStore, service: ConcordService, listen: @escaping @Sendable () -> Void) {
        self.store = store
        self.service = service
        self.listen = listen
    }

    /// Closes storage; called once at shutdown after the last request finished.
    public func close() { self.store.close() }

    /// Long-polls hear other instances' commits; `close()` stops it.
    func listenForOtherInstances() { self.listen() }

    /// Opens `database` with every other option at its default.
    static func open(_ database: Configuration.Database) throws(StartupError) -> StorageHook {
        try Self.open(StorageOptions(database: database))
    }

    /// Opens the configured database (creating its directory), migrates it, and builds the
    /// service with the configured history retention and `maxBatch`. Throws a one-line
    /// reason when it cannot (unreadable file, unreachable server, newer schema).
    static func open(_ options: StorageOptions) throws(StartupError) -> StorageHook {
        let (store, listen) = try Self.openStore(options)
        var domain = options.domain
        var warnings: [String] = []
        if domain.mappingIndexBytes > 0, let directory = options.snapshotDirectory {
            do {
                domain.mappingIndexSnapshots = try IndexSnapshotDirectory(path: directory)
            } catch where options.mappingIndexSnapshots == "auto" {
                // A cache beside the database: without it, loads come from the tables.
                warnings.append("mapping index snapshots off: \(error)")
            } catch {
                store.close()
                throw StartupError("cannot use mappingIndexSnapshots: \(error)")
            }
        }
        do {
            // The mapping index (ConcordMappingIndex) is wired in here: the domain knows it only as a `MappingCache`.
            let index = MappingIndex.wired(store: store, configuration: domain, clock: options.wallClock.now, runLater: options.runLater)
            var hook = StorageHook(store: store, service: try ConcordService(store: store, configuration: domain, mappingCache: index,
                                                                             clock: options.wallClock.now, webhooks: options.webhooks),
                                   listen: listen)
            hook.warnings = warnings
            return hook
        } catch {
            store.close()
            let name = if case .sqlite(let path) = options.database { path } else { options.database.description }
            throw StartupError("cannot use database \(name): \(Self.oneLine(error.message))")
        }
    }

    /// The engine the options name, opened and migrated, and how it starts listening to other instances.
    private static func openStore(_ options: StorageOptions) throws(StartupError) -> (any ConcordStore, @Sendable () -> Void) {
        let database = options.database
        switch database {
        case .postgres(let url):
            do {
                let store = try PostgresStore(configuration: try PostgresConfiguration(url: url, poolSize: max(1, options.poolSize)))
                return (store, { store.listenForOtherInstances() })
            } catch {
                throw StartupError("cannot use database \(database): \(Self.oneLine(error.message))")
            }
        case .sqlite(let path):
            try DataDirectory.create(forDatabaseAt: path)
            do {
                let store = try SQLiteStore(path: path, synchronous: options.sqliteSynchronous == .full ? .full : .normal, memory: options.sqliteMemory)
                return (store, {})
            } catch {
                // SQLiteStoreError already names the file: keep only its reason.
                var reason = String(describing: error)
                let prefix = "cannot open database \(path): "
                if reason.hasPrefix(prefix) { reason.removeFirst(prefix.count) }
                throw StartupError("cannot use database \(path): \(Self.oneLine(reason))")
            }
        }
    }

    private static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).joined(separator: " ")
    }
}

/// A failure to start: printed as one line on stderr, exit status 1.
public struct StartupError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { self.message }
}

/// The directory holding the SQLite file (and the generated admin token).
enum DataDirectory {
    static func path(forDatabaseAt path: String) -> String {
        let url = URL(fileURLWithPath: path)
        return url.deletingLastPathComponent().path
    }

    /// Creates the database's directory (and parents) if missing.
    static func create(forDatabaseAt path: String) throws(StartupError) {
        let directory = self.path(forDatabaseAt: path)
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw StartupError("cannot create data directory \(directory): \(Self.reason(error))")
        }
    }

    static func reason(_ error: any Error) -> String {
        if let posix = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError, posix.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(posix.code)))
        }
        return (error as NSError).localizedDescription
    }
}
