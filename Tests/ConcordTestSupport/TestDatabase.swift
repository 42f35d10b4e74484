import ConcordDomain
import ConcordStorage
import Foundation

/// The storage engines the store, domain and app suites run against: SQLite always, PostgreSQL
/// when `CONCORD_TEST_POSTGRES_URL` names a server the tests may create schemas in
/// (`.ci/run` starts a throwaway cluster and sets it).
public enum TestEngine: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    /// The admin URL of the test PostgreSQL server, nil when not configured.
    public static let postgresURL: String? = {
        guard let url = ProcessInfo.processInfo.environment["CONCORD_TEST_POSTGRES_URL"], !url.isEmpty else { return nil }
        return url
    }()

    /// Engines to run parameterised tests on.
    public static let available: [TestEngine] = postgresURL == nil ? [.sqlite] : [.sqlite, .postgres]

    /// True when the PostgreSQL cases run.
    public static var postgresAvailable: Bool { postgresURL != nil }

    /// Why the PostgreSQL cases are not run (shown on the skipped tests).
    public static let postgresSkipReason = "CONCORD_TEST_POSTGRES_URL not set: PostgreSQL tests skipped"

    /// The command controlling the throwaway cluster (`stop` / `start`), from `CONCORD_TEST_PG_CTL`.
    public static let postgresControl: String? = {
        guard let c = ProcessInfo.processInfo.environment["CONCORD_TEST_PG_CTL"], !c.isEmpty else { return nil }
        return c
    }()

    public var description: String { self.rawValue }
}

/// A fresh, empty database for one test: an SQLite file in a new directory, or a new schema
/// (`concord_test_<random>`) on the test PostgreSQL server, selected through the connection's
/// `search_path`. Dropped or removed when the value goes away.
public final class TestDatabase: @unchecked Sendable {
    // @unchecked Sendable: every stored property is a constant; `store` is itself thread-safe.
    public let engine: TestEngine
    /// What `--database` takes for this database (`sqlite:PATH` or a `postgres://` URL).
    public let url: String
    public let store: any ConcordStore
    private let cleanup: @Sendable () -> Void
    private let closeStore: @Sendable () -> Void

    public init(_ engine: TestEngine, poolSize: Int = 8) throws {
        self.engine = engine
        switch engine {
        case .sqlite:
            let directory = NSTemporaryDirectory() + "concord-test-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let path = directory + "/db.sqlite"
            let store = try SQLiteStore(path: path)
            self.url = "sqlite:" + path
            self.store = store
            self.closeStore = { store.close() }
            self.cleanup = { try? FileManager.default.removeItem(atPath: directory) }
        case .postgres:
            guard let admin = TestEngine.postgresURL else { throw PostgresStoreError(message: TestEngine.postgresSkipReason) }
            let schema = "concord_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            try PostgresAdmin.execute(url: admin, "CREATE SCHEMA \(schema)")
            self.url = admin + (admin.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
            let store: PostgresStore
            do {
                store = try PostgresStore(configuration: PostgresConfiguration(url: self.url, poolSize: poolSize))
            } catch {
                try? PostgresAdmin.execute(url: admin, "DROP SCHEMA \(schema) CASCADE")
                throw error
            }
            self.store = store
            self.closeStore = { store.close() }
            self.cleanup = { try? PostgresAdmin.execute(url: admin, "DROP SCHEMA IF EXISTS \(schema) CASCADE") }
        }
    }

    /// A second store on the same database (another "instance").
    public func openAnotherStore(poolSize: Int = 8) throws -> any ConcordStore {
        switch self.engine {
        case .sqlite: return try SQLiteStore(path: String(self.url.dropFirst("sqlite:".count)))
        case .postgres: return try PostgresStore(configuration: PostgresConfiguration(url: self.url, poolSize: poolSize))
        }
    }

    deinit {
        self.closeStore()
        self.cleanup()
    }
}
