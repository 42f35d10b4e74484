#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ConcordDomain
import ConcordStorage
import Foundation

/// The app's handle on storage: the opened store (readiness, shutdown) and the one
/// `ConcordService` every route calls. `StorageHook.open` is the one place that builds it.
public struct StorageHook: Sendable {
    public let store: any ConcordStore
    /// The domain service over the store (accounts, libraries, mapping, history, journals).
    public let service: ConcordService

    public init(store: any ConcordStore, service: ConcordService) {
        self.store = store
        self.service = service
    }

    /// Closes storage; called once at shutdown after the last request finished.
    public func close() { self.store.close() }

    /// Opens the configured database (creating its directory), migrates it, and builds the
    /// service with the configured history retention and `maxBatch`. Throws a one-line
    /// reason when it cannot (unreadable file, unreachable server, newer schema).
    /// `poolSize`: PostgreSQL connections kept at most.
    static func open(
        _ database: Configuration.Database, history: Configuration.History = Configuration.History(),
        maxBatch: Int = Configuration.Limits().maxBatch, sqliteSynchronous: SQLiteSynchronous = .normal, poolSize: Int = 8,
        sqliteMemory: SQLiteMemory = SQLiteMemory(), mappingIndexMegabytes: Int = DomainConfiguration().mappingIndexBytes >> 20,
        quotas: Quotas = Quotas()
    ) throws(StartupError) -> StorageHook {
        var domain = DomainConfiguration()
        domain.quotas = quotas
        domain.mappingIndexBytes = mappingIndexMegabytes << 20
        domain.maxBatch = maxBatch
        domain.historyMaxChanges = history.maxChanges
        domain.historyMaxAge = Double(history.maxAgeDays) * 24 * 3600
        let store = try Self.openStore(database, sqliteSynchronous: sqliteSynchronous, poolSize: poolSize, sqliteMemory: sqliteMemory)
        do {
            return StorageHook(store: store, service: try ConcordService(store: store, configuration: domain))
        } catch {
            store.close()
            let name = if case .sqlite(let path) = database { path } else { database.description }
            throw StartupError("cannot use database \(name): \(Self.oneLine(error.message))")
        }
    }

    /// The engine the configuration names, opened and migrated.
    private static func openStore(_ database: Configuration.Database, sqliteSynchronous: SQLiteSynchronous, poolSize: Int,
                                  sqliteMemory: SQLiteMemory) throws(StartupError) -> any ConcordStore {
        switch database {
        case .postgres(let url):
            do {
                return try PostgresStore(configuration: try PostgresConfiguration(url: url, poolSize: max(1, poolSize)))
            } catch {
                throw StartupError("cannot use database \(database): \(Self.oneLine(error.message))")
            }
        case .sqlite(let path):
            try DataDirectory.create(forDatabaseAt: path)
            do {
                return try SQLiteStore(path: path, synchronous: sqliteSynchronous == .full ? .full : .normal, memory: sqliteMemory)
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
