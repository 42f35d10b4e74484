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

extension OldSchemaDatabase {
    /// What the PostgreSQL migration tests' seed (devices mac and pc of account "acc", records `g1` and
    /// `g2`) answers once migrated, from storage and from the in-memory index loaded from the
    /// migrated tables. `macKeys`: how many of mac's objects the seed gave a PhotoKit key.
    static func expectSeedAnswers(_ store: PostgresStore, g1: String, g2: String, macKeys: Int,
                                  sourceLocation: SourceLocation = #_sourceLocation) throws {
        let mac = DeviceRef(accountID: "acc", deviceID: "mac"), pc = DeviceRef(accountID: "acc", deviceID: "pc")
        let r1 = "\(g1):001:\(contentFingerprint(1))", r2 = "\(g2):001:\(contentFingerprint(2))"
        #expect(try store.read(account: "acc") { tx in try tx.mappingVersion() } == 4, sourceLocation: sourceLocation)
        for indexBytes in [0, 64 << 20] {
            var configuration = DomainConfiguration()
            configuration.mappingIndexBytes = indexBytes
            let service = try ConcordService(store: store, configuration: configuration)
            #expect(try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["MAC-1", "MAC-2"], device: mac).map(\.result)
                    == [.found(r1), .found(r2)], sourceLocation: sourceLocation)
            #expect(try service.mapping.localIdentifiers(forCloudIdentifiers: [r1, r2], device: mac).map(\.result)
                    == [.found("MAC-1"), .found("MAC-2")], sourceLocation: sourceLocation)
            #expect(try service.mapping.localIdentifiers(forCloudIdentifiers: [r1], device: pc).map(\.result) == [.found("PC-1")],
                    sourceLocation: sourceLocation)
            let o1 = try service.library.object(localIdentifier: "MAC-1", device: mac)
            #expect(o1.isFavorite && o1.fingerprint == contentFingerprint(1), sourceLocation: sourceLocation)
            #expect(try service.library.object(localIdentifier: "MAC-ALBUM", device: mac).members == ["MAC-1", "MAC-2"],
                    sourceLocation: sourceLocation)
            #expect(try service.library.listObjects(type: .asset, after: "MAC-1", limit: 10, device: mac).objects.map(\.localIdentifier)
                    == ["MAC-2", "MAC-3"], sourceLocation: sourceLocation)
            #expect(try service.mapping.status(device: mac)
                    == LibraryStatus(objects: 4, withFingerprint: 2, withKey: macKeys, linked: 2, wanted: 0), sourceLocation: sourceLocation)
            #expect(try service.mapping.status(device: pc)
                    == LibraryStatus(objects: 3, withFingerprint: 2, withKey: 0, linked: 1, wanted: 1), sourceLocation: sourceLocation)
            #expect(try service.mapping.wanted(device: pc, after: nil, limit: 10).objects.map(\.localIdentifier) == ["PC-NOHASH"],
                    sourceLocation: sourceLocation)
        }
    }
}

extension OldSchemaDatabase {
    /// Writes on the migrated seed: new objects take the next numbers, an update keeps its number, a
    /// first mapping links by content; a deleted object takes its link with it, and a record still
    /// links to at most one object per device.
    static func expectSeedWrites(_ store: PostgresStore, probe: PGConnection, g1: String, g2: String,
                                 sourceLocation: SourceLocation = #_sourceLocation) throws {
        let mac = DeviceRef(accountID: "acc", deviceID: "mac"), pc = DeviceRef(accountID: "acc", deviceID: "pc")
        let r2 = "\(g2):001:\(contentFingerprint(2))"
        let service = try ConcordService(store: store, configuration: DomainConfiguration())
        try service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: [
            .asset("PC-3", fingerprint: contentFingerprint(3)), .asset("PC-2", fingerprint: contentFingerprint(2)),
        ])), device: pc)
        #expect(try probe.scalarInt("SELECT object_no FROM objects WHERE device_key = 2 AND local_id = 'PC-3'") == 4, sourceLocation: sourceLocation)
        #expect(try probe.scalarInt("SELECT object_no FROM objects WHERE device_key = 2 AND local_id = 'PC-2'") == 2, sourceLocation: sourceLocation)
        #expect(try service.mapping.localIdentifiers(forCloudIdentifiers: [r2], device: pc).map(\.result) == [.found("PC-2")],
                sourceLocation: sourceLocation)
        let fresh = try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["PC-3"], device: pc)
        guard case .found(let r3)? = fresh.first?.result else {
            Issue.record("PC-3 got no cloud identifier: \(fresh)", sourceLocation: sourceLocation)
            return
        }
        #expect(try service.mapping.localIdentifiers(forCloudIdentifiers: [r3], device: pc).map(\.result) == [.found("PC-3")],
                sourceLocation: sourceLocation)
        try service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(delete: ["MAC-2"])), device: mac)
        #expect(try probe.scalarInt("SELECT count(*) FROM links WHERE device_key = 1") == 1, sourceLocation: sourceLocation)
        #expect(throws: (any Error).self, sourceLocation: sourceLocation) {
            try store.write(account: "acc") { tx in try tx.setLinks(pc, [("PC-NOHASH", g1)]) }
        }
    }
}
