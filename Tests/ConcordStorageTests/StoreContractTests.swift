import ConcordDomain
@testable import ConcordStorage
import ConcordTestSupport
import Foundation
import Testing

/// What every engine of `ConcordStore` must do, run on each available engine.
@Suite struct StoreContractTests {
    /// Record GUIDs as the domain makes them: upper-case UUIDs (PostgreSQL stores them as `uuid`).
    static func guid(_ n: Int) -> String { String(format: "0C44A1D2-0000-4000-8000-%012X", n) }

    @Test(arguments: TestEngine.available) func writeRollsBackWhenTheBodyThrows(_ engine: TestEngine) throws {
        let db = try TestDatabase(engine)
        #expect(throws: Boom.self) {
            try db.store.writeServer { tx in
                try tx.insertAccount(accountID: "A", name: "n", tokenHash: [1], createdAt: Date())
                throw Boom()
            }
        }
        #expect(try db.store.read(account: "A") { tx in try tx.accountExists() } == false)
        try db.store.writeServer { tx in try tx.insertAccount(accountID: "A", name: "n", tokenHash: [1], createdAt: Date()) }
        #expect(try db.store.read(account: "A") { tx in try tx.accountExists() })
    }

    /// Bytes and text travel unchanged: every byte value in a setting, and identifiers made of the
    /// characters that quoting, array literals or JSON would have to escape.
    @Test(arguments: TestEngine.available) func bytesAndTextRoundTripUnchanged(_ engine: TestEngine) throws {
        let db = try TestDatabase(engine)
        let bytes = (0...255).map { UInt8($0) } + [0, 0]
        try db.store.writeServer { tx in try tx.setSetting("all-bytes", bytes) }
        #expect(try db.store.readServer { tx in try tx.setting("all-bytes") } == bytes)
        try db.store.writeServer { tx in try tx.setSetting("empty", []) }
        #expect(try db.store.readServer { tx in try tx.setting("empty") } == [])

        let name = #"O'Brien "quoted" \back\slash {a,b} NULL 🎞️ é"#
        let device = DeviceRef(accountID: "acc", deviceID: "dev")
        let ids = [#"a'b"#, #"c"d"#, #"e\f"#, "{g,h}", "NULL", "", "🎞️/L0/001", " spaced ", "ü"].filter { !$0.isEmpty }
        try db.store.writeServer { tx in
            try tx.insertAccount(accountID: "acc", name: name, tokenHash: [9, 0, 9], createdAt: Date(timeIntervalSince1970: 1_800_000_000.25))
        }
        try db.store.write(account: "acc") { tx in
            try tx.insertDevice(device, name: name, platform: nil, tokenHash: [0], createdAt: Date())
            try tx.putObjects(device, ids.map { StoredObject(object: .assetCollection($0, fingerprint: "fp-" + $0, title: name), link: nil) })
        }
        let back = try db.store.read(account: device.accountID) { tx in try tx.objects(device, localIdentifiers: ids + ["missing"]) }
        #expect(Set(back.map(\.object.localIdentifier)) == Set(ids))
        #expect(back.allSatisfy { $0.object.title == name && $0.object.fingerprint == "fp-" + $0.object.localIdentifier })
        #expect(try db.store.read(account: "acc") { tx in try tx.devices().first?.name } == name)
        #expect(try db.store.readServer { tx in try tx.principal(tokenHash: [9, 0, 9]) } == .account(accountID: "acc"))
        // Byte order, whatever the database's collation.
        let page = try db.store.read(account: device.accountID) { tx in try tx.objectPage(device, type: .assetCollection, after: nil, limit: 100) }
        #expect(page.map(\.localIdentifier) == ids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    }

    /// `insertNewObjects` stores what `putObjects` stores for objects a device does not have: every
    /// column, a link, the order given; the stored rows then update and list as any other.
    @Test(arguments: TestEngine.available) func newObjectsInsertedAsPutWouldStoreThem(_ engine: TestEngine) throws {
        let db = try TestDatabase(engine)
        let put = DeviceRef(accountID: "acc", deviceID: "put"), inserted = DeviceRef(accountID: "acc", deviceID: "inserted")
        try db.store.writeServer { tx in try tx.insertAccount(accountID: "acc", name: "A", tokenHash: [7], createdAt: Date()) }
        let record = CloudRecord(guid: Self.guid(1), type: .asset, fingerprint: "fp-linked")
        let objects = [
            StoredObject(object: LibraryObject(localIdentifier: "z-linked", type: .asset, fingerprint: "fp-linked", mediaType: .video,
                                               creationDate: "2024-05-01T10:00:00Z", modificationDate: "2024-05-02T10:00:00.5Z",
                                               hasAdjustments: true, isFavorite: true, title: "T", photoKitCloudIdentifier: "PK:1"), link: record),
            StoredObject(object: .assetCollection("a-album", fingerprint: "", title: "Album", assets: ["z-linked", "m-plain"]), link: nil),
            StoredObject(object: .asset("m-plain", fingerprint: "fp-plain"), link: nil),
        ]
        try db.store.write(account: "acc") { tx in
            try tx.insertDevice(put, name: "p", platform: nil, tokenHash: [1], createdAt: Date())
            try tx.insertDevice(inserted, name: "i", platform: nil, tokenHash: [2], createdAt: Date())
            try tx.insertRecords([record], createdAt: Date())
            try tx.putObjects(put, objects)
            try tx.insertNewObjects(inserted, objects)
        }
        let ids = objects.map(\.object.localIdentifier)
        func stored(_ device: DeviceRef) throws -> [StoredObject] {
            try db.store.read(account: "acc") { tx in try tx.objects(device, localIdentifiers: ids) }
                .sorted { $0.object.localIdentifier < $1.object.localIdentifier }
        }
        #expect(try stored(inserted) == stored(put))
        #expect(try stored(inserted).first { $0.object.localIdentifier == "z-linked" }?.link == record)
        #expect(try ArrivalOrderTests.storedOrder(db, inserted) == ids)
        // An update by putObjects finds the inserted row.
        try db.store.write(account: "acc") { tx in try tx.putObjects(inserted, [StoredObject(object: .asset("m-plain", fingerprint: "fp-new"), link: nil)]) }
        #expect(try stored(inserted).map(\.object.fingerprint) == ["", "fp-new", "fp-linked"])
        #expect(try ArrivalOrderTests.storedOrder(db, inserted) == ids)
        // PostgreSQL's unique index refuses an identifier the device has, and the write rolls back
        // (SQLite's index by local identifier is not unique: there the caller's guarantee is all).
        if engine == .postgres {
            #expect(throws: (any Error).self) {
                try db.store.write(account: "acc") { tx in try tx.insertNewObjects(inserted, [StoredObject(object: .asset("m-plain", fingerprint: "fp-again"), link: nil)]) }
            }
            #expect(try stored(inserted).map(\.object.fingerprint) == ["", "fp-new", "fp-linked"])
            #expect(try ArrivalOrderTests.storedOrder(db, inserted) == ids)
        }
    }

    /// The journal storage protocols behave the same on every engine: upserts replace, listings come
    /// in creation order, deleting a journal takes its entries, the feed counts and prunes, and a
    /// write on a missing account is notFound.
    @Test(arguments: TestEngine.available) func journalStorageRoundTripsAndPrunes(_ engine: TestEngine) throws {
        let db = try TestDatabase(engine)
        func journals<T>(account: String = "acc", _ body: (any AccountWriteTransaction) throws -> T) throws -> T {
            try db.store.write(account: account) { tx in try body(tx) }
        }
        try db.store.writeServer { tx in try tx.insertAccount(accountID: "acc", name: "n", tokenHash: [1], createdAt: Date()) }
        let photos = ["G1", #"q"uo'te"#, "🎞️"]
        try journals { j in
            try j.putJournal(StoredJournal(journalID: "J2", title: "second", version: 2, entryCount: 0, createdSeq: 2, createdAt: 2.5, updatedAt: 2.5))
            try j.putJournal(StoredJournal(journalID: "J1", title: "first", version: 1, entryCount: 0, createdSeq: 1, createdAt: 1.5, updatedAt: 1.5))
            try j.putJournalEntry(StoredJournalEntry(journalID: "J1", entryID: "b", text: "B", photos: photos, version: 3, createdSeq: 3))
            try j.putJournalEntry(StoredJournalEntry(journalID: "J1", entryID: "a", text: "A", photos: [], version: 4, createdSeq: 4))
            // Replaces the row: text, photos and version change.
            try j.putJournalEntry(StoredJournalEntry(journalID: "J1", entryID: "b", text: "B2", photos: ["G9"], version: 5, createdSeq: 3))
            try j.putJournal(StoredJournal(journalID: "J1", title: "first", version: 5, entryCount: 2, createdSeq: 1, createdAt: 1.5, updatedAt: 5.5))
            for seq in Int64(1)...5 {
                try j.appendJournalChange(seq: seq, createdAt: Double(seq), details: JournalChangeDetails(entries: JournalChangeLists(inserted: ["J1/\(seq)"])))
            }
        }
        try journals { j in
            #expect(try j.journals().map(\.journalID) == ["J1", "J2"])
            #expect(try j.journal(journalID: "J1") == StoredJournal(journalID: "J1", title: "first", version: 5, entryCount: 2, createdSeq: 1, createdAt: 1.5, updatedAt: 5.5))
            #expect(try j.journalEntryIDs(journalID: "J1") == ["b", "a"])
            #expect(try j.journalEntries(journalID: "J1").map(\.photos) == [["G9"], []])
            #expect(try j.journalEntry(journalID: "J1", entryID: "b")?.text == "B2")
            try j.putJournalEntry(StoredJournalEntry(journalID: "J2", entryID: "x", text: "", photos: photos, version: 6, createdSeq: 6))
            #expect(try j.journalEntry(journalID: "J2", entryID: "x")?.photos == photos)
            #expect(try j.journalFeed() == JournalFeedState(lastChangeSeq: 5, prunedThroughSeq: 0))
            #expect(try j.journalChanges(after: 1, limit: 2).map(\.seq) == [2, 3])
            #expect(try j.journalChanges(after: 4, limit: 10).first?.details.entries.inserted == ["J1/5"])
            #expect(try j.latestJournalChangeSeq(createdAtOrBefore: 3.5) == 3)
            #expect(try j.latestJournalChangeSeq(createdAtOrBefore: 0.5) == nil)
            try j.pruneJournalChanges(throughSeq: 3)
            #expect(try j.journalFeed() == JournalFeedState(lastChangeSeq: 5, prunedThroughSeq: 3))
            #expect(try j.journalChanges(after: 0, limit: 10).map(\.seq) == [4, 5])
            try j.deleteJournalEntry(journalID: "J1", entryID: "a")
            try j.deleteJournal(journalID: "J2")
            #expect(try j.journals().map(\.journalID) == ["J1"])
            #expect(try j.journalEntryIDs(journalID: "J1") == ["b"])
            #expect(try j.journalEntryIDs(journalID: "J2") == [])
        }
        // Reads of a missing account answer nothing; writes are notFound.
        try journals(account: "nobody") { (j: any AccountWriteTransaction) throws in
            #expect(try j.journals() == [])
            #expect(try j.journalFeed() == JournalFeedState(lastChangeSeq: 0, prunedThroughSeq: 0))
        }
        for write in [
            { (j: any JournalWrites) in try j.putJournal(StoredJournal(journalID: "J", title: "t", version: 1, entryCount: 0, createdSeq: 1, createdAt: 0, updatedAt: 0)) },
            { j in try j.putJournalEntry(StoredJournalEntry(journalID: "J", entryID: "e", text: "", photos: [], version: 1, createdSeq: 1)) },
            { j in try j.appendJournalChange(seq: 1, createdAt: 0, details: JournalChangeDetails()) },
            { j in try j.deleteJournal(journalID: "J") },
        ] as [(any JournalWrites) throws -> Void] {
            #expect(throws: DomainError.notFound(message: "No such account.")) { try journals(account: "nobody", write) }
        }
    }

    /// A batch of 5000 identifiers is one statement each way and answers exactly the stored ones.
    @Test(arguments: TestEngine.available) func largeBatchesRoundTrip(_ engine: TestEngine) throws {
        let db = try TestDatabase(engine)
        let device = DeviceRef(accountID: "acc", deviceID: "dev")
        let n = 5000
        try db.store.writeServer { tx in try tx.insertAccount(accountID: "acc", name: "n", tokenHash: [1], createdAt: Date()) }
        try db.store.write(account: "acc") { tx in
            try tx.insertDevice(device, name: "d", platform: nil, tokenHash: [2], createdAt: Date())
            try tx.putObjects(device, (0..<n).map { StoredObject(object: .asset("id-\($0)", fingerprint: "fp-\($0 % 100)"), link: nil) })
            let records = (0..<100).map { CloudRecord(guid: Self.guid($0), type: .asset, fingerprint: "fp-\($0)") }
            try tx.insertRecords(records, createdAt: Date())
            try tx.setLinks(device, (0..<100).map { ("id-\($0)", Self.guid($0)) })
        }
        let wanted = (0..<n).filter { $0 % 3 == 0 }.map { "id-\($0)" }
        let found = try db.store.read(account: device.accountID) { tx in try tx.objects(device, localIdentifiers: wanted) }
        #expect(found.count == wanted.count)
        #expect(found.first { $0.object.localIdentifier == "id-3" }?.link == CloudRecord(guid: Self.guid(3), type: .asset, fingerprint: "fp-3"))
        let byContent = try db.store.read(account: device.accountID) { tx in try tx.objects(device, matching: [ContentKey(type: .asset, fingerprint: "fp-7")]) }
        #expect(byContent.count == n / 100)
        #expect(byContent.map(\.object.localIdentifier) == byContent.map(\.object.localIdentifier).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        // Records come back oldest first; those linked on this device are not "unlinked".
        let unlinked = try db.store.write(account: device.accountID) { tx in try tx.unlinkedRecords(device, matching: [ContentKey(type: .asset, fingerprint: "fp-7")]) }
        #expect(unlinked.isEmpty)
        try db.store.write(account: device.accountID) { tx in try tx.dropLinks(device, guids: [Self.guid(7)]) }
        #expect(try db.store.write(account: device.accountID) { tx in try tx.unlinkedRecords(device, matching: [ContentKey(type: .asset, fingerprint: "fp-7")]) }.map(\.guid) == [Self.guid(7)])
        try db.store.write(account: device.accountID) { tx in try tx.deleteObjects(device, localIdentifiers: wanted) }
        #expect(try db.store.read(account: device.accountID) { tx in try tx.allObjects(device) }.count == n - wanted.count)
    }

    /// Links set after objects were read in the same transaction follow the writes in between: a
    /// deleted object takes no link, and an object linked twice keeps the second (PostgreSQL links
    /// objects it found unlinked by number: `UnlinkedObjectNumbers`).
    @Test(arguments: TestEngine.available) func linksAfterALookupFollowTheWritesInBetween(_ engine: TestEngine) throws {
        let db = try TestDatabase(engine)
        let device = DeviceRef(accountID: "acc", deviceID: "dev")
        func record(_ n: Int, _ fingerprint: String) -> CloudRecord { CloudRecord(guid: Self.guid(n), type: .asset, fingerprint: fingerprint) }
        try db.store.writeServer { tx in try tx.insertAccount(accountID: "acc", name: "n", tokenHash: [1], createdAt: Date()) }
        try db.store.write(account: "acc") { tx in
            try tx.insertDevice(device, name: "d", platform: nil, tokenHash: [2], createdAt: Date())
            try tx.putObjects(device, ["a", "b", "c"].map { StoredObject(object: .asset($0, fingerprint: "fp-" + $0), link: nil) })
            try tx.insertRecords([record(1, "fp-b"), record(2, "fp-c")], createdAt: Date())
            try tx.setLinks(device, [("b", Self.guid(1))])
        }
        try db.store.write(account: "acc") { tx in
            #expect(try tx.objects(device, localIdentifiers: ["a", "b", "c"]).count == 3)
            try tx.deleteObjects(device, localIdentifiers: ["a"])
            try tx.insertRecords([record(3, "fp-a"), record(4, "fp-c")], createdAt: Date())
            try tx.setLinks(device, [("a", Self.guid(3)), ("c", Self.guid(2))])
            try tx.setLinks(device, [("c", Self.guid(4))])
        }
        let found = try db.store.write(account: "acc") { tx in
            (try tx.unlinkedRecords(device, matching: [ContentKey(type: .asset, fingerprint: "fp-a")]).map(\.guid),
             try tx.unlinkedRecords(device, matching: [ContentKey(type: .asset, fingerprint: "fp-c")]).map(\.guid),
             try tx.objects(device, localIdentifiers: ["a", "b", "c"]).map { [$0.object.localIdentifier, $0.link?.guid ?? ""] }.sorted { $0[0] < $1[0] })
        }
        #expect(found.0 == [Self.guid(3)])
        #expect(found.1 == [Self.guid(2)])
        #expect(found.2 == [["b", Self.guid(1)], ["c", Self.guid(4)]])
    }

    /// Several instances starting at once on a fresh database: migrations run once, all of them open.
    @Test(arguments: TestEngine.available) func severalStoresOpeningAtOnceAllSucceed(_ engine: TestEngine) throws {
        let db = try TestDatabase(engine)
        let failures = NSLock()
        nonisolated(unsafe) var errors: [String] = []
        nonisolated(unsafe) var stores: [any ConcordStore] = []
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            do {
                let s = try db.openAnotherStore(poolSize: 1)
                failures.withLock { stores.append(s) }
            } catch {
                failures.withLock { errors.append("\(error)") }
            }
        }
        #expect(errors.isEmpty, "\(errors)")
        for s in stores { #expect(try s.readServer { tx in try tx.setting("none") } == nil) }
    }
}

/// PostgreSQL specifics: URL parsing (pure) and the pool.
@Suite struct PostgresStoreTests {
    @Test(arguments: [
        ("postgres://u:p@h:6543/db", "h", 6543, "u", "p", "db"),
        ("postgresql://u@h/db", "h", 5432, "u", nil, "db"),
        ("postgres://us%40er:p%3Aa%2Fss@127.0.0.1:5433/my%20db", "127.0.0.1", 5433, "us@er", "p:a/ss", "my db"),
        ("postgres://[::1]:5434/db", "::1", 5434, nil, nil, "db"),
    ] as [(String, String, Int, String?, String?, String)])
    func urlsParseWithPercentDecoding(_ url: String, _ host: String, _ port: Int, _ user: String?, _ password: String?, _ database: String) throws {
        let c = try PostgresConfiguration(url: url)
        #expect(c.host == host && c.port == port && c.user == user && c.password == password && c.database == database)
    }

    @Test(arguments: ["postgres://h:5432", "postgres://h:5432/", "mysql://h/db", "postgres://h/a/b"])
    func malformedURLsAreRefused(_ url: String) {
        #expect(throws: PostgresStoreError.self) { try PostgresConfiguration(url: url) }
    }

    @Test func queryItemsBecomeConnectionParameters() throws {
        let c = try PostgresConfiguration(url: "postgres://u:p@h/db?sslmode=require&options=-csearch_path%3Dx")
        let p = Dictionary(c.connectionParameters, uniquingKeysWith: { $1 })
        #expect(p["sslmode"] == "require" && p["options"] == "-csearch_path=x" && p["dbname"] == "db" && p["password"] == "p")
        #expect(c.displayName == "h:5432/db")
    }

    @Test func unreachableServerIsAOneLineError() {
        #expect {
            _ = try PostgresStore(configuration: PostgresConfiguration(host: "127.0.0.1", port: 1, database: "x"))
        } throws: { error in
            let message = "\(error)"
            return message.hasPrefix("cannot connect to postgres 127.0.0.1:1/x") && !message.contains("\n")
        }
    }

    @Test(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason + " (PostgresStoreTests: pool, newer schema; the postgres cases of StoreContractTests, journal storage included)")))
    func poolNeverExceedsItsSizeAndRefusesANewerSchema() throws {
        let db = try TestDatabase(.postgres, poolSize: 2)
        let store = try #require(db.store as? PostgresStore)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<5 { _ = try? store.readServer { tx in try tx.setting("x") } }
        }
        #expect(store.openConnections <= 2)
        try PostgresAdmin.execute(url: db.url, "INSERT INTO schema_migrations (version) VALUES (99)")
        #expect {
            _ = try db.openAnotherStore()
        } throws: { error in
            "\(error)" == "database schema version 99 is newer than this build knows (\(PostgresStore.schemaVersion)); run a newer concord"
        }
    }
}
