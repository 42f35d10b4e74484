import ConcordDomain
import ConcordTestSupport
import Foundation
import Synchronization
import Testing

@testable import ConcordStorage

/// Uploads in parts on PostgreSQL stage their objects in a table of the upload's own, dropped when
/// the upload goes (`UploadStagingSchema`): after a commit, a deletion, an expiry, a device's and an
/// account's deletion no staging table is left, and the upload tables hold a dead row per upload
/// and part at most, not one per staged object. Migration 15 moves the uploads in flight there.
@Suite(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason)))
struct UploadStagingTests {
    static let start = Date(timeIntervalSince1970: 1_700_000_000)

    /// A clock the test moves.
    final class Clock: Sendable {
        let time: Mutex<Date>
        init(_ time: Date) { self.time = Mutex(time) }
        var now: Date { self.time.withLock { $0 } }
    }

    /// A service on `store` on `clock`.
    static func service(_ store: any ConcordStore, _ clock: Clock) throws -> ConcordService {
        try ConcordService(store: store, mappingCache: nil, clock: { clock.now })
    }

    /// Runs `sql` on `store`'s database and returns the first column of the first row.
    static func scalar(_ store: any ConcordStore, _ sql: String) throws -> Int64 {
        try store.readServer { tx in try (tx as! PostgresTransaction).db.scalarInt(sql) ?? -1 }
    }

    static let stagingTables = """
        SELECT count(*)::int8 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname LIKE 'upload\\_staging\\_%'
        """

    /// Opens an upload on `device` and sends `parts` parts of `perPart` assets (ids `prefix`-n).
    static func stage(_ service: ConcordService, _ device: DeviceRef, _ prefix: String, parts: Int, perPart: Int) throws -> String {
        let id = try service.uploads.open(device: device).uploadID
        for p in 0..<parts {
            let objects = (0..<perPart).map { i in
                LibraryObject.asset("\(prefix)-\(p)-\(i)", fingerprint: String(repeating: "F", count: 42) + String(i % 10))
            }
            _ = try service.uploads.putPart(p + 1, of: id, LibrarySnapshot(objects: objects), device: device)
        }
        return id
    }

    @Test func everyWayAnUploadEndsDropsItsStagingTable() throws {
        let db = try TestDatabase(.postgres)
        let clock = Clock(Self.start)
        let service = try Self.service(db.store, clock)
        let account = try service.accounts.createAccount(name: "A")
        let phone = DeviceRef(accountID: account.accountID, deviceID: try service.accounts.createDevice(accountID: account.accountID, name: "phone", platform: nil).deviceID)
        let tablet = DeviceRef(accountID: account.accountID, deviceID: try service.accounts.createDevice(accountID: account.accountID, name: "tablet", platform: nil).deviceID)
        let perPart = 300
        var staged = 0

        // Committed: a table while open (part 2 sent twice: it replaces), none after.
        let committed = try Self.stage(service, phone, "c", parts: 2, perPart: perPart)
        _ = try Self.stage(service, phone, "unused", parts: 0, perPart: 0)   // a second open upload: two tables
        #expect(try Self.scalar(db.store, Self.stagingTables) == 2)
        let resent = (0..<perPart).map { LibraryObject.asset("c-1-\($0)", fingerprint: String(repeating: "E", count: 43)) }
        let progress = try service.uploads.putPart(2, of: committed, LibrarySnapshot(objects: resent), device: phone)
        #expect(progress.parts == 2 && progress.objects == 2 * perPart)
        let result = try service.uploads.commit(committed, reset: false, device: phone)
        #expect(result.inserted == 2 * perPart)
        staged += 3 * perPart
        #expect(try Self.scalar(db.store, Self.stagingTables) == 1)

        // Deleted by its device; then expired (found by the next open) and the device deleted.
        for upload in try db.store.write(account: account.accountID, { tx in try tx.uploads(phone) }) {
            try service.uploads.delete(upload.uploadID, device: phone)
        }
        #expect(try Self.scalar(db.store, Self.stagingTables) == 0)
        _ = try Self.stage(service, tablet, "e", parts: 1, perPart: perPart)
        clock.time.withLock { $0 += UploadService.lifetime + 1 }
        _ = try Self.stage(service, phone, "d", parts: 1, perPart: perPart)
        staged += 2 * perPart
        #expect(try Self.scalar(db.store, Self.stagingTables) == 1)
        try service.accounts.deleteDevice(accountID: account.accountID, deviceID: phone.deviceID)
        #expect(try Self.scalar(db.store, Self.stagingTables) == 0)

        // Gone with the account.
        _ = try Self.stage(service, tablet, "t", parts: 2, perPart: perPart)
        staged += 2 * perPart
        try service.accounts.deleteAccount(accountID: account.accountID)
        #expect(try Self.scalar(db.store, Self.stagingTables) == 0)

        // Dead rows: the store's connections report their statistics when they end; once the
        // inserts into and deletes from `uploads` are counted, the upload tables' dead rows are (a row per upload
        // and per part, and the uploads' touches), far fewer than the objects staged.
        (db.store as! PostgresStore).close()
        let reader = try db.openAnotherStore(poolSize: 1)
        let counted = """
            SELECT coalesce(sum(n_tup_ins + n_tup_del), 0)::int8 FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = 'uploads'
            """
        var waited = 0
        while try Self.scalar(reader, counted) < 10, waited < 100 {
            Thread.sleep(forTimeInterval: 0.2)
            waited += 1
        }
        #expect(try Self.scalar(reader, counted) == 10)   // five uploads opened, five gone
        let dead = try Self.scalar(reader, """
            SELECT coalesce(sum(n_dead_tup), 0)::int8 FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname LIKE 'upload%'
            """)
        #expect(dead <= 30, "dead rows in the upload tables: \(dead), objects staged: \(staged)")
        #expect(try Self.scalar(reader, Self.stagingTables) == 0)
    }

    /// Two accounts uploading at once through two stores (two instances): each opening creates and
    /// each commit drops a table while the other account's upload runs, and neither waits on nor
    /// disturbs the other.
    @Test func twoAccountsUploadAtOnceOnTwoInstances() throws {
        let db = try TestDatabase(.postgres)
        let clock = Clock(Self.start)
        let services = [try Self.service(db.store, clock), try Self.service(try db.openAnotherStore(), clock)]
        let devices = try services.enumerated().map { k, service in
            let account = try service.accounts.createAccount(name: "A\(k)")
            return DeviceRef(accountID: account.accountID, deviceID: try service.accounts.createDevice(accountID: account.accountID, name: "phone", platform: nil).deviceID)
        }
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { k in
            do {
                for round in 0..<4 {
                    let id = try Self.stage(services[k], devices[k], "r\(round)", parts: 3, perPart: 200)
                    let result = try services[k].uploads.commit(id, reset: true, device: devices[k])
                    if result.inserted != 600 { failures.withLock { $0.append("account \(k), round \(round): inserted \(result.inserted)") } }
                }
            } catch {
                failures.withLock { $0.append("account \(k): \(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(try Self.scalar(db.store, Self.stagingTables) == 0)
    }

    /// Migration 15 on a database at schema 13 with two uploads in flight: their objects move to
    /// their staging tables, `upload_objects` goes, and the uploads commit (or refuse a repeated
    /// identifier) as they would have.
    @Test func migration15MovesTheUploadsInFlight() throws {
        let account = "0C44A1D2-0000-4000-8000-0000000000A1", device = "0C44A1D2-0000-4000-8000-0000000000D1"
        let good = "0C44A1D2-0000-4000-8000-0000000000F1", repeated = "0C44A1D2-0000-4000-8000-0000000000F2"
        let fp = String(repeating: "F", count: 43)
        let columns = "account_id, upload_id, local_id, part, type, fingerprint, media_type, has_adjustments, is_favorite, title, members, app_created"
        try OldSchemaDatabase.open(.postgres, atVersion: 13, seed: (sqlite: "", postgres: """
            INSERT INTO accounts (account_id, name, created_at) VALUES ('\(account)', 'A', 1000);
            INSERT INTO devices (account_id, device_id, name, created_at) VALUES ('\(account)', '\(device)', 'Phone', 1000);
            INSERT INTO uploads (account_id, upload_id, device_id, touched_at) VALUES ('\(account)', '\(good)', '\(device)', \(Self.start.timeIntervalSince1970));
            INSERT INTO uploads (account_id, upload_id, device_id, touched_at) VALUES ('\(account)', '\(repeated)', '\(device)', \(Self.start.timeIntervalSince1970));
            INSERT INTO upload_parts (account_id, upload_id, part, objects) VALUES ('\(account)', '\(good)', 1, 2), ('\(account)', '\(good)', 2, 2),
                ('\(account)', '\(repeated)', 1, 1), ('\(account)', '\(repeated)', 2, 1);
            INSERT INTO upload_objects (\(columns)) VALUES
                ('\(account)', '\(good)', 'a3', 1, 1, '\(fp)', 'image', false, false, NULL, '', false),
                ('\(account)', '\(good)', 'a1', 1, 1, '\(fp)', 'image', false, true, NULL, '', false),
                ('\(account)', '\(good)', 'a2', 2, 1, '\(fp)', 'image', false, false, NULL, '', false),
                ('\(account)', '\(good)', 'c1', 2, 40, '\(fp)', 'unknown', false, false, 'Trip', 'a1' || chr(10) || 'a2', false),
                ('\(account)', '\(repeated)', 'x', 1, 1, '\(fp)', 'image', false, false, NULL, '', false),
                ('\(account)', '\(repeated)', 'x', 2, 1, '\(fp)', 'image', false, false, NULL, '', false);
            """)) { store in
            #expect(try Self.scalar(store, "SELECT count(*)::int8 FROM pg_class WHERE relname = 'upload_objects' AND relnamespace = current_schema()::regnamespace") == 0)
            #expect(try Self.scalar(store, Self.stagingTables) == 2)
            let clock = Clock(Self.start.addingTimeInterval(60))
            let service = try Self.service(store, clock)
            let phone = DeviceRef(accountID: account, deviceID: device)
            let (totals, noRepeat, twice, containers) = try store.write(account: account) { tx in
                (try tx.uploadTotals(uploadID: good), try tx.uploadRepeatedIdentifier(uploadID: good), try tx.uploadRepeatedIdentifier(uploadID: repeated),
                 try tx.uploadObjectPage(uploadID: good, containersOnly: true, after: nil, limit: 10).map(\.localIdentifier))
            }
            #expect(totals == (parts: 2, objects: 4))
            #expect(noRepeat == nil && twice == "x")
            #expect(containers == ["c1"])
            // Migration 21: both tables are indexed by part and local identifier, and give their
            // objects part by part, two to a page.
            #expect(try Self.scalar(store, """
                SELECT count(*)::int8 FROM pg_indexes WHERE schemaname = current_schema()
                AND indexname LIKE 'upload\\_staging\\_%\\_by\\_part' AND indexdef LIKE '%(part, local_id)'
                """) == 2)
            let inPartOrder = try store.write(account: account) { tx in
                let first = try tx.uploadObjectPageInPartOrder(uploadID: good, after: nil, limit: 2)
                let second = try tx.uploadObjectPageInPartOrder(uploadID: good, after: first.last, limit: 2)
                let third = try tx.uploadObjectPageInPartOrder(uploadID: good, after: second.last, limit: 2)
                return [first, second, third].map { $0.objects.map(\.localIdentifier) } + [[third.last == nil ? "end" : "more"]]
            }
            #expect(inPartOrder == [["a1", "a3"], ["a2", "c1"], [], ["end"]])
            #expect(throws: DomainError.self) { try service.uploads.commit(repeated, reset: false, device: phone) }
            let result = try service.uploads.commit(good, reset: false, device: phone)
            #expect(result.inserted == 4)
            let library = try service.library.listObjects(type: nil, after: nil, limit: 10, device: phone).objects
            #expect(library.map(\.localIdentifier) == ["a1", "a2", "a3", "c1"])
            #expect(library.first?.isFavorite == true && library.last?.members == ["a1", "a2"] && library.last?.title == "Trip")
            #expect(try Self.scalar(store, Self.stagingTables) == 1)
        }
    }
}
