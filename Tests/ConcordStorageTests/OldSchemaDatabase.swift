import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// A database written by an older build: the migrations up to `version` applied, then `seed` SQL
/// (the rows that build would have written), then opened by today's store, which migrates it.
/// For the migration tests of both engines.
enum OldSchemaDatabase {
    /// Runs `body` on a store of `engine` opened on a database at schema `version` holding `seed`
    /// (the SQL for that engine: `seed.sqlite` or `seed.postgres`).
    static func open(_ engine: TestEngine, atVersion version: Int, seed: (sqlite: String, postgres: String),
                     _ body: (any ConcordStore) throws -> Void) throws {
        switch engine {
        case .sqlite: try self.sqlite(version, seed.sqlite, body)
        case .postgres: try self.postgres(version, seed.postgres, body)
        }
    }

    private static func sqlite(_ version: Int, _ seed: String, _ body: (any ConcordStore) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "concord-migration-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/v\(version).sqlite"
        do {
            let db = try Connection(path: path)
            try db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
            for m in SQLiteMigrations.all where m.version <= version {
                try db.execute(m.sql)
                try db.run("INSERT INTO schema_migrations (version, applied_at) VALUES (?, 'then')", [.int(Int64(m.version))])
            }
            try db.execute(seed)
        }
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        try body(store)
    }

    private static func postgres(_ version: Int, _ seed: String, _ body: (any ConcordStore) throws -> Void) throws {
        try self.postgresSchema(atVersion: version, seed: seed) { url in
            let store = try PostgresStore(configuration: PostgresConfiguration(url: url, poolSize: 2))
            defer { store.close() }
            try body(store)
        }
    }

    /// Runs `body` with the URL of a throwaway PostgreSQL schema at `version` holding `seed`, not
    /// opened by a store yet (so a test can watch the migration itself); dropped afterwards.
    static func postgresSchema(atVersion version: Int, seed: String, _ body: (String) throws -> Void) throws {
        let admin = try #require(TestEngine.postgresURL)
        let schema = "concord_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try PostgresAdmin.execute(url: admin, "CREATE SCHEMA \(schema)")
        defer { try? PostgresAdmin.execute(url: admin, "DROP SCHEMA IF EXISTS \(schema) CASCADE") }
        let url = admin + (admin.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
        var sql = "CREATE TABLE schema_migrations (version bigint PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());"
        for m in PostgresMigrations.all where m.version <= version { sql += m.sql + "\nINSERT INTO schema_migrations (version) VALUES (\(m.version));\n" }
        try PostgresAdmin.execute(url: url, sql + seed)
        try body(url)
    }

    /// A PostgreSQL migration that meets a row it cannot convert: on a schema at `version` holding
    /// `seed`, opening a store fails with an error containing `failure`, and the schema is still
    /// `version` with its rows as they were (`unchanged` probes them); once `fix` (SQL) puts the
    /// row right, the next start migrates (`migrated` checks the store it opened).
    static func postgresMigrationStops(atVersion version: Int, seed: String, failure: String,
                                       unchanged: (PGConnection) throws -> Void, fix: String,
                                       migrated: (PostgresStore) throws -> Void,
                                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        try self.postgresSchema(atVersion: version, seed: seed) { url in
            do {
                _ = try PostgresStore(configuration: PostgresConfiguration(url: url, poolSize: 1))
                Issue.record("the migration ran over a row it cannot convert (\(failure))", sourceLocation: sourceLocation)
            } catch {
                #expect("\(error)".contains(failure), "\(error)", sourceLocation: sourceLocation)
            }
            let probe = try PGConnection(parameters: PostgresConfiguration(url: url).connectionParameters)
            #expect(try probe.scalarInt("SELECT max(version) FROM schema_migrations") == Int64(version), sourceLocation: sourceLocation)
            try unchanged(probe)
            try probe.execute(fix)
            probe.close()
            let store = try PostgresStore(configuration: PostgresConfiguration(url: url, poolSize: 1))
            defer { store.close() }
            try migrated(store)
        }
    }
}
