import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// Migration 4 (token times, issue 12) on a database written at schema 3, on both engines: the
/// tokens issued before it still authenticate, and they date from their account or device.
@Suite struct TokenMigrationTests {
    static let accountHash: [UInt8] = Array(repeating: 1, count: 32)
    static let deviceHash: [UInt8] = Array(repeating: 2, count: 32)

    @Test(arguments: TestEngine.available)
    func tokensFromSchema3StillWorkAndDateFromTheirOwners(_ engine: TestEngine) throws {
        switch engine {
        case .sqlite: try Self.sqlite()
        case .postgres: try Self.postgres()
        }
    }

    static func sqlite() throws {
        let directory = NSTemporaryDirectory() + "concord-migration-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/v3.sqlite"
        do {
            let db = try Connection(path: path)
            try db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
            for m in SQLiteMigrations.all where m.version <= 3 {
                try db.execute(m.sql)
                try db.run("INSERT INTO schema_migrations (version, applied_at) VALUES (?, 'then')", [.int(Int64(m.version))])
            }
            try db.run("INSERT INTO accounts (account_key, account_id, name, created_at) VALUES (1, 'acc', 'A', 1000)")
            try db.run("INSERT INTO devices (account_key, device_key, device_id, name, created_at) VALUES (1, 1, 'dev', 'D', 2000)")
            try db.run("INSERT INTO tokens (token_hash, kind, account_key, device_key) VALUES (?, 1, 1, NULL)", [.blob(Self.accountHash)])
            try db.run("INSERT INTO tokens (token_hash, kind, account_key, device_key) VALUES (?, 2, 1, 1)", [.blob(Self.deviceHash)])
        }
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        try Self.expectMigrated(store)
    }

    static func postgres() throws {
        let admin = try #require(TestEngine.postgresURL)
        let schema = "concord_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try PostgresAdmin.execute(url: admin, "CREATE SCHEMA \(schema)")
        defer { try? PostgresAdmin.execute(url: admin, "DROP SCHEMA IF EXISTS \(schema) CASCADE") }
        let url = admin + (admin.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
        var sql = "CREATE TABLE schema_migrations (version bigint PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());"
        for m in PostgresMigrations.all where m.version <= 3 { sql += m.sql + "\nINSERT INTO schema_migrations (version) VALUES (\(m.version));\n" }
        sql += """
            INSERT INTO accounts (account_id, name, created_at) VALUES ('acc', 'A', 1000);
            INSERT INTO devices (account_id, device_id, name, created_at) VALUES ('acc', 'dev', 'D', 2000);
            INSERT INTO tokens (token_hash, kind, account_id, device_id) VALUES ('\\x\(String(repeating: "01", count: 32))', 1, 'acc', NULL);
            INSERT INTO tokens (token_hash, kind, account_id, device_id) VALUES ('\\x\(String(repeating: "02", count: 32))', 2, 'acc', 'dev');
            """
        try PostgresAdmin.execute(url: url, sql)
        let store = try PostgresStore(configuration: PostgresConfiguration(url: url, poolSize: 1))
        defer { store.close() }
        try Self.expectMigrated(store)
    }

    static func expectMigrated(_ store: any ConcordStore) throws {
        let account = try store.readServer { tx in try tx.tokenOwner(tokenHash: Self.accountHash) }
        #expect(account == TokenOwner(principal: .account(accountID: "acc"), lastUsedAt: nil))
        let device = try store.readServer { tx in try tx.tokenOwner(tokenHash: Self.deviceHash) }
        #expect(device == TokenOwner(principal: .device(DeviceRef(accountID: "acc", deviceID: "dev")), lastUsedAt: nil))
        let times = try store.read(account: "acc") { tx in try tx.deviceTokenTimes() }
        #expect(times == ["dev": TokenTimes(createdAt: 2000, lastUsedAt: nil)])
    }
}
