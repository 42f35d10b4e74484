import ConcordDomain
@testable import ConcordStorage
import CSQLite
import Foundation
import Synchronization
import Testing

/// `PRAGMA integrity_check` and the account ids of a database file, through a plain read-only
/// connection (the backup must be usable without Concord).
private func inspect(_ path: String) throws -> (integrity: String, accounts: Set<String>) {
    var db: OpaquePointer?
    defer { sqlite3_close_v2(db) }
    guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let db else { throw Boom() }
    func column(_ sql: String) throws -> [String] {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK, let stmt else { throw Boom() }
        defer { sqlite3_finalize(stmt) }
        var rows: [String] = []
        while sqlite3_step(stmt) == SQLITE_ROW { rows.append(String(cString: sqlite3_column_text(stmt, 0))) }
        return rows
    }
    return (try column("PRAGMA integrity_check").joined(separator: "; "), Set(try column("SELECT account_id FROM accounts")))
}

@Suite struct SQLiteBackupTests {
    @Test func backupWhileAWriterKeepsWritingIsConsistentAndHoldsEveryEarlierCommit() throws {
        let dir = try TempDir()
        let store = try SQLiteStore(path: dir.db)
        // Enough rows that the copy takes a while, so the writer commits during it.
        let seeded = (0..<20_000).map { "seed-\($0)" }
        try store.writeServer { tx in
            for id in seeded { try tx.insertAccount(accountID: id, name: String(repeating: "n", count: 64), tokenHash: Array(id.utf8), createdAt: Date()) }
        }

        let committed = Atomic<Int>(0)   // writer commits so far
        let stop = Atomic<Bool>(false)
        let writerDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { writerDone.signal() }
            var n = 0
            while !stop.load(ordering: .relaxed) {
                let id = "live-\(n)"
                do {
                    try store.writeServer { tx in try tx.insertAccount(accountID: id, name: "live", tokenHash: Array(id.utf8), createdAt: Date()) }
                } catch {
                    return
                }
                n += 1
                committed.store(n, ordering: .releasing)
            }
        }
        while committed.load(ordering: .acquiring) < 3 { usleep(1_000) }

        let before = committed.load(ordering: .acquiring)
        let destination = dir.path + "/backup.sqlite"
        try SQLiteStore.backup(databaseAt: dir.db, to: destination)
        let after = committed.load(ordering: .acquiring)
        stop.store(true, ordering: .relaxed)
        writerDone.wait()
        let total = committed.load(ordering: .acquiring)

        let (integrity, accounts) = try inspect(destination)
        #expect(integrity == "ok")
        #expect(Set(seeded).isSubset(of: accounts))
        // A snapshot: every live write committed before the backup started is in it, and the
        // live writes it holds are a prefix (no gaps: nothing half-copied).
        let live = accounts.filter { $0.hasPrefix("live-") }
        #expect(live.count >= before && live.count <= after)
        #expect(live == Set((0..<live.count).map { "live-\($0)" }))
        #expect(total > before, "the writer kept committing")

        // The copy opens as a Concord database of the current schema.
        let reopened = try SQLiteStore(path: destination)
        #expect(try reopened.read(account: "seed-19999") { tx in try tx.accountExists() })
        // Nothing left behind but the copy.
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(!names.contains { $0.contains(".partial-") })
    }

    @Test func backupNeverOverwritesAnExistingFile() throws {
        let dir = try TempDir()
        let store = try SQLiteStore(path: dir.db)
        try store.writeServer { tx in try tx.insertAccount(accountID: "A", name: "n", tokenHash: [1], createdAt: Date()) }
        let destination = dir.path + "/existing"
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: destination))

        #expect(throws: SQLiteBackupError.destinationExists(path: destination)) {
            try store.backup(to: destination)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data("keep me".utf8))
        #expect(SQLiteBackupError.destinationExists(path: "/x").description == "/x already exists; a backup never overwrites a file")
    }

    @Test func backupOfAMissingDatabaseFailsWithOneLineAndCreatesNothing() throws {
        let dir = try TempDir()
        let destination = dir.path + "/copy.sqlite"
        #expect {
            try SQLiteStore.backup(databaseAt: dir.path + "/missing.sqlite", to: destination)
        } throws: { error in
            guard case .failed(let message) = error as? SQLiteBackupError else { return false }
            return message.hasPrefix("cannot open database \(dir.path)/missing.sqlite: ") && !message.contains("\n")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }

    @Test func backupIntoAMissingDirectoryFailsAndLeavesTheSourceAlone() throws {
        let dir = try TempDir()
        let store = try SQLiteStore(path: dir.db)
        try store.writeServer { tx in try tx.insertAccount(accountID: "A", name: "n", tokenHash: [1], createdAt: Date()) }
        #expect(throws: SQLiteBackupError.self) {
            try store.backup(to: dir.path + "/no-such-dir/copy.sqlite")
        }
        #expect(try store.read(account: "A") { tx in try tx.accountExists() })
    }

    @Test func backupCopiesADatabaseOfAnotherSchemaAsItIs() throws {
        // A read-only connection, not a store: no migration runs, so any schema is copied as is
        // (an operator backs up before an upgrade, or with an older binary).
        let dir = try TempDir()
        do {
            let store = try SQLiteStore(path: dir.db)
            try store.writer.run("INSERT INTO schema_migrations (version, applied_at) VALUES (99, 'later')")
        }
        let destination = dir.path + "/copy.sqlite"
        try SQLiteStore.backup(databaseAt: dir.db, to: destination)
        #expect(try inspect(destination).integrity == "ok")
        var copy: OpaquePointer?
        defer { sqlite3_close_v2(copy) }
        #expect(sqlite3_open_v2(destination, &copy, SQLITE_OPEN_READONLY, nil) == SQLITE_OK)
        var stmt: OpaquePointer?
        defer { sqlite3_finalize(stmt) }
        #expect(sqlite3_prepare_v2(copy, "SELECT max(version) FROM schema_migrations", -1, &stmt, nil) == SQLITE_OK)
        #expect(sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_int(stmt, 0) == 99)
    }
}
