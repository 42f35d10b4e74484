#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ConcordDomain
import ConcordStorage
import Foundation

/// The app's handle on storage: the one `ConcordService` every route calls, how `/ready`
/// asks whether storage answers, and how shutdown closes it. `StorageHook.open` is the one
/// place that builds it.
public struct StorageHook: Sendable {
    /// The domain service over the opened store (accounts, libraries, mapping, history).
    public let service: ConcordService
    /// True when storage answers a trivial query right now. May block briefly.
    public var isReady: @Sendable () -> Bool
    /// Closes storage; called once at shutdown after the last request finished.
    public var close: @Sendable () -> Void

    public init(service: ConcordService, isReady: @escaping @Sendable () -> Bool, close: @escaping @Sendable () -> Void) {
        self.service = service
        self.isReady = isReady
        self.close = close
    }

    /// Opens the configured database (creating its directory), migrates it, and builds the
    /// service with the configured history retention and `maxBatch`. Throws a one-line
    /// reason when it cannot (unreadable file, unreachable server, newer schema).
    /// `poolSize`: PostgreSQL connections kept at most.
    static func open(
        _ database: Configuration.Database, history: Configuration.History = Configuration.History(),
        maxBatch: Int = Configuration.Limits().maxBatch, sqliteSynchronous: SQLiteSynchronous = .normal, poolSize: Int = 8
    ) throws(StartupError) -> StorageHook {
        var domain = DomainConfiguration()
        domain.maxBatch = maxBatch
        domain.historyMaxChanges = history.maxChanges
        domain.historyMaxAge = Double(history.maxAgeDays) * 24 * 3600
        switch database {
        case .postgres(let url):
            let store: PostgresStore
            let name: String
            do {
                let configuration = try PostgresConfiguration(url: url, poolSize: max(1, poolSize))
                name = configuration.displayName
                store = try PostgresStore(configuration: configuration)
            } catch {
                throw StartupError("cannot use database \(database): \(Self.oneLine(error.message))")
            }
            let service: ConcordService
            do {
                service = try ConcordService(store: store, configuration: domain)
            } catch {
                store.close()
                throw StartupError("cannot use database postgres \(name): \(Self.oneLine(error.message))")
            }
            return StorageHook(service: service, isReady: { store.ping() }, close: { store.close() })
        case .sqlite(let path):
            try DataDirectory.create(forDatabaseAt: path)
            let store: SQLiteStore
            do {
                store = try SQLiteStore(path: path, synchronous: sqliteSynchronous == .full ? .full : .normal)
            } catch {
                // SQLiteStoreError already names the file: keep only its reason.
                var reason = String(describing: error)
                let prefix = "cannot open database \(path): "
                if reason.hasPrefix(prefix) { reason.removeFirst(prefix.count) }
                throw StartupError("cannot use database \(path): \(Self.oneLine(reason))")
            }
            let service: ConcordService
            do {
                service = try ConcordService(store: store, configuration: domain)
            } catch {
                store.close()
                throw StartupError("cannot use database \(path): \(Self.oneLine(error.message))")
            }
            return StorageHook(service: service, isReady: { store.ping() }, close: { store.close() })
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
