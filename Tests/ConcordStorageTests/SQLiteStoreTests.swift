import ConcordDomain
import ConcordMappingIndex
@testable import ConcordStorage
import CSQLite
import Foundation
import Testing

/// A fresh directory per test, removed afterwards.
final class TempDir {
    let path = NSTemporaryDirectory() + "concord-storage-" + UUID().uuidString
    init() throws { try FileManager.default.createDirectory(atPath: self.path, withIntermediateDirectories: true) }
    deinit { try? FileManager.default.removeItem(atPath: self.path) }
    var db: String { self.path + "/db.sqlite" }
}

struct Boom: Error {}

@Suite struct SQLiteStoreTests {
    @Test func migrationsAreRecordedAndReopeningIsANoOp() throws {
        let dir = try TempDir()
        do { _ = try SQLiteStore(path: dir.db) }
        let store = try SQLiteStore(path: dir.db)
        var versions: [Int64] = []
        try store.writer.query("SELECT version FROM schema_migrations ORDER BY version") { s in versions.append(s.int(0)) }
        #expect(versions == SQLiteMigrations.all.map { Int64($0.version) })
    }

    @Test func refusesADatabaseOfANewerSchema() throws {
        let dir = try TempDir()
        do {
            let store = try SQLiteStore(path: dir.db)
            try store.writer.run("INSERT INTO schema_migrations (version, applied_at) VALUES (99, 'later')")
        }
        #expect {
            _ = try SQLiteStore(path: dir.db)
        } throws: { error in
            "\(error)" == "database schema version 99 is newer than this build knows (\(SQLiteStore.schemaVersion)); run a newer concord"
        }
    }

    @Test func openFailureIsAOneLineError() throws {
        #expect {
            _ = try SQLiteStore(path: "/nonexistent-dir-\(UUID().uuidString)/db.sqlite")
        } throws: { error in
            (error as? SQLiteStoreError)?.message.hasPrefix("cannot open database") == true
        }
    }

    @Test func writerIsWALWithSynchronousNormalByDefaultAndFullOnRequest() throws {
        let dir = try TempDir()
        let store = try SQLiteStore(path: dir.db)
        var mode = ""
        try store.writer.query("PRAGMA journal_mode") { s in mode = s.text(0) }
        #expect(mode == "wal")
        #expect(try store.writer.scalarInt("PRAGMA synchronous") == 1)   // NORMAL
        let dir2 = try TempDir()
        let full = try SQLiteStore(path: dir2.db, synchronous: .full)
        #expect(try full.writer.scalarInt("PRAGMA synchronous") == 2)    // FULL
    }

    @Test func readersCannotWrite() throws {
        let dir = try TempDir()
        let store = try SQLiteStore(path: dir.db)
        #expect(throws: SQLiteError.self) {
            try store.read(account: "A") { tx in
                try (tx as! SQLiteTransaction).insertAccount(accountID: "A", name: "n", tokenHash: [1], createdAt: Date())
            }
        }
    }

    @Test func statementsAreCachedBySQL() throws {
        let dir = try TempDir()
        let c = try Connection(path: dir.db)
        let s1 = try c.statement("SELECT 1")
        let s2 = try c.statement("SELECT 1")
        #expect(s1 === s2)
        #expect(throws: SQLiteError.self) { try c.statement("SELEKT nonsense") }
    }

    @Test func extendedResultCodesAreReported() throws {
        let dir = try TempDir()
        let c = try Connection(path: dir.db)
        try c.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
        try c.run("INSERT INTO t VALUES (1)")
        do {
            try c.run("INSERT INTO t VALUES (1)")
            Issue.record("expected a constraint error")
        } catch let e as SQLiteError {
            #expect(e.code == SQLITE_CONSTRAINT | (6 << 8))   // SQLITE_CONSTRAINT_PRIMARYKEY (a macro Swift does not import)
            #expect(e.primaryCode == SQLITE_CONSTRAINT)
        }
    }

    @Test func readsDoNotWaitForAnOpenWriteTransaction() throws {
        let dir = try TempDir()
        let store = try SQLiteStore(path: dir.db)
        try store.writeServer { tx in try tx.insertAccount(accountID: "A", name: "n", tokenHash: [1], createdAt: Date()) }
        let inWrite = DispatchSemaphore(value: 0)
        let readDone = DispatchSemaphore(value: 0)
        let writer = Thread {
            _ = try? store.writeServer { tx in
                try tx.insertAccount(accountID: "B", name: "n", tokenHash: [2], createdAt: Date())
                inWrite.signal()
                _ = readDone.wait(timeout: .now() + 5)   // hold the write lock until the read finished
            }
        }
        writer.start()
        inWrite.wait()
        // The read sees the last committed state (A, not the uncommitted B) without blocking.
        let seen = (try store.read(account: "A") { tx in try tx.accountExists() }, try store.read(account: "B") { tx in try tx.accountExists() })
        readDone.signal()
        #expect(seen == (true, false))
        while writer.isExecuting { usleep(1000) }
        #expect(try store.read(account: "B") { tx in try tx.accountExists() })
    }

    @Test func jsonArrayEscapesQuotesAndBackslashes() throws {
        let dir = try TempDir()
        let c = try Connection(path: dir.db)
        let input = ["plain", "quo\"te", "back\\slash", "é📷", "ctl\u{1}"]
        var out: [String] = []
        try c.query("SELECT value FROM json_each(?) ORDER BY key", [.text(jsonArray(input))]) { s in out.append(s.text(0)) }
        #expect(out == input)
    }

    /// `typedPairsJSON` as SQLite's `json_each` reads it back: each pair's type and text, escapes
    /// included; unsorted in the input's order, sorted by type and then the text's bytes.
    @Test(arguments: [
        (pairs: [(ObjectType.collectionList, "b"), (.asset, "quo\"te"), (.asset, "ctl\u{1}")], sorted: false,
         expected: [(20, "b"), (1, "quo\"te"), (1, "ctl\u{1}")]),
        (pairs: [(ObjectType.assetCollection, "a"), (.asset, "é📷"), (.asset, "z"), (.asset, "Z"), (.collectionList, "b\\s"), (.asset, "Za")], sorted: true,
         expected: [(1, "Z"), (1, "Za"), (1, "z"), (1, "é📷"), (20, "b\\s"), (40, "a")]),
        (pairs: [], sorted: true, expected: []),
    ] as [(pairs: [(ObjectType, String)], sorted: Bool, expected: [(Int, String)])])
    func typedPairsJSONReadsBackInItsOrder(_ c: (pairs: [(ObjectType, String)], sorted: Bool, expected: [(Int, String)])) throws {
        let dir = try TempDir()
        let connection = try Connection(path: dir.db)
        var out: [(Int, String)] = []
        let json = SQLiteTransaction.typedPairsJSON(c.pairs.map { (type: $0.0, text: $0.1) }, sorted: c.sorted)
        try connection.query("SELECT value ->> 0, value ->> 1 FROM json_each(?) ORDER BY key", [.text(json)]) { s in out.append((Int(s.int(0)), s.text(1))) }
        #expect(out.map(\.0) == c.expected.map(\.0))
        #expect(out.map(\.1) == c.expected.map(\.1))
    }

    @Test func changeDetailsRoundTrip() {
        let d = ChangeDetails(assets: ChangeLists(inserted: ["a", "b/L0/001"], updated: ["c"], deleted: []),
                              assetCollections: ChangeLists(deleted: ["x y"]),
                              collectionLists: ChangeLists(inserted: ["é"]))
        #expect(ChangeDetailsCodec.decode(ChangeDetailsCodec.encode(d)) == d)
        #expect(ChangeDetailsCodec.decode("") == ChangeDetails())
    }
}

@Suite struct QueryPlanTests {
    /// Every batch query looks identifiers up through an index; none scans a library or the records.
    @Test(arguments: [
        ("objectsByLocalIDs", SQLiteTransaction.objectsByLocalIDsSQL),
        ("objectsByContent", SQLiteTransaction.objectsByContentSQL),
        ("recordsByGUID", SQLiteTransaction.recordsByGUIDSQL),
        ("linkedObjects", SQLiteTransaction.linkedObjectsSQL),
        ("linkStates", SQLiteTransaction.linkStatesSQL),
        ("recordLinks", SQLiteTransaction.recordLinksSQL),
        ("unlinkedRecords", SQLiteTransaction.unlinkedRecordsSQL),
        ("containerPage", SQLiteTransaction.containerPageSQL),
    ])
    func batchQueriesUseIndexes(_ name: String, _ sql: String) throws {
        let dir = try TempDir()
        let store = try SQLiteStore(path: dir.db)
        var plan: [String] = []
        try store.writer.query("EXPLAIN QUERY PLAN " + sql) { s in plan.append(s.text(3)) }
        // A SEARCH on only the (account, device) prefix is a scan of a whole library.
        let scans = plan.filter {
            ($0.hasPrefix("SCAN") && !$0.hasPrefix("SCAN j")) || $0.hasSuffix("(account_key=? AND device_key=?)") || $0.hasSuffix("(account_key=?)")
        }
        #expect(scans.isEmpty, "\(name): \(plan)")
        #expect(plan.contains { $0.contains("USING") && ($0.contains("INDEX") || $0.contains("PRIMARY KEY")) }, "\(name): \(plan)")
        // Lookups by content search the fingerprint's prefix in the index (migration 12), not only the type.
        if name == "objectsByContent" || name == "unlinkedRecords" {
            #expect(plan.contains { $0.contains("_by_content") && $0.contains("<expr>=?") }, "\(name): \(plan)")
        }
    }

    /// Assets page through the local identifier's index from `after` on (migration 9 dropped their
    /// index by type, migration 19 moved the local identifier from the primary key to that index,
    /// migration 20 keyed it by the identifier's first and last 8 characters): a range search on the
    /// first 8, never a scan of the library from its start, in the index's order but for each run
    /// of equal first 8 characters (sorted alone); a page of every type too.
    @Test(arguments: [("assetPage", SQLiteTransaction.assetPageSQL), ("objectPage", SQLiteTransaction.objectPageSQL)])
    func pagesSearchTheLocalIdentifierIndexFromAfter(_ name: String, _ sql: String) throws {
        let dir = try TempDir()
        let store = try SQLiteStore(path: dir.db)
        var plan: [String] = []
        try store.writer.query("EXPLAIN QUERY PLAN " + sql) { s in plan.append(s.text(3)) }
        #expect(plan.contains { $0.hasPrefix("SEARCH o USING INDEX objects_by_local_id (account_key=? AND device_key=? AND <expr>>?)") }, "\(name): \(plan)")
        #expect(!plan.contains { $0.contains("TEMP B-TREE") && !$0.contains("RIGHT PART OF ORDER BY") }, "\(name): \(plan)")
    }
}

@Suite struct LifecycleTests {
    @Test func closeCheckpointsAndLaterCallsAreUnavailable() throws {
        let dir = try TempDir()
        let store = try SQLiteStore(path: dir.db)
        try store.writeServer { tx in try tx.insertAccount(accountID: "A", name: "n", tokenHash: [1], createdAt: Date()) }
        #expect(try store.read(account: "A") { tx in try tx.accountExists() })
        store.close()
        #expect(throws: DomainError.unavailable(message: "Storage is closed.")) { try store.read(account: "A") { tx in try tx.accountExists() } }
        #expect(throws: DomainError.unavailable(message: "Storage is closed.")) { try store.write(account: "A") { tx in try tx.accountExists() } }
        // The WAL was folded into the database file, and the data is there on reopening.
        let walSize = (try? FileManager.default.attributesOfItem(atPath: dir.db + "-wal")[.size] as? Int) ?? 0
        #expect(walSize == 0)
        let reopened = try SQLiteStore(path: dir.db)
        #expect(try reopened.read(account: "A") { tx in try tx.accountExists() })
    }
}

@Suite struct ReadinessTests {
    @Test func readyWhileOpenNotAfterClose() throws {
        let dir = try TempDir()
        let store = try SQLiteStore(path: dir.db)
        _ = try ConcordService(store: store)
        #expect(store.ping())
        store.close()
        #expect(!store.ping())
    }
}

@Suite struct SQLiteFilePermissionTests {
    /// The database holds the change-token secret and token hashes: a new one is its owner's only,
    /// and so are its WAL and shared-memory files.
    @Test func newDatabaseFilesAreOwnerOnly() throws {
        let dir = try TempDir()
        let store = try SQLiteStore(path: dir.db)
        _ = try ConcordService(store: store)
        for suffix in ["", "-wal", "-shm"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: dir.db + suffix)
            let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
            #expect(mode & 0o077 == 0, "\(dir.db + suffix): mode \(String(mode, radix: 8))")
        }
        store.close()
    }
}

/// What a deleted account wrote does not stay readable in the database file's free
/// pages (`secure_delete`), once the WAL is checkpointed (a clean stop).
@Test func aDeletedAccountsTextIsNotLeftInTheDatabaseFile() throws {
    let directory = NSTemporaryDirectory() + "concord-secure-delete-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/concord.sqlite"
    let secret = "SECRET-JOURNAL-TEXT-" + UUID().uuidString
    do {
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        let service = try ConcordService(store: store)
        let account = try service.accounts.createAccount(name: secret)
        let device = try service.accounts.createDevice(accountID: account.accountID, name: secret, platform: nil)
        let ref = DeviceRef(accountID: account.accountID, deviceID: device.deviceID)
        let journal = try service.journals.createJournal(title: secret, device: ref)
        _ = try service.journals.putEntry(journalID: journal.journalID, entryID: "e", text: String(repeating: secret, count: 20), photos: [],
                                          ifMatch: nil, device: ref)
        try service.accounts.deleteAccount(accountID: account.accountID)
    }
    let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
    #expect(bytes.range(of: Data(secret.utf8)) == nil, "the deleted account's text is still in the database file")
}
