import ConcordDomain
import ConcordStorage
import ConcordTestSupport
import Foundation
import Testing

/// The storage methods of The bounds, on both engines.
@Suite struct BoundsStoreTests {
    @Test(arguments: TestEngine.available) func keptKeysAreMeasuredAndTiedToTheirAccount(_ engine: TestEngine) throws {
        let db = try TestDatabase(engine)
        let overhead = DataBounds.idempotencyKeyOverhead
        try db.store.writeServer { tx in
            try tx.insertAccount(accountID: "acc", name: "n", tokenHash: [1], createdAt: Date())
            try tx.insertAccount(accountID: "other", name: "n", tokenHash: [2], createdAt: Date())
            #expect(try tx.idempotencyKeptBytes(accountID: "acc", createdAfter: 0) == 0)
            try tx.putIdempotencyRecord(owner: [1], key: "k1", accountID: "acc", IdempotencyRecord(fingerprint: [0], answer: nil, createdAt: 1))
            #expect(try tx.idempotencyKeptBytes(accountID: "acc", createdAfter: 0) == 2 + overhead)
            try tx.setIdempotencyAnswer(owner: [1], key: "k1", answer: [UInt8](repeating: 7, count: 1000), accountID: "acc")
            #expect(try tx.idempotencyKeptBytes(accountID: "acc", createdAfter: 0) == 1002 + overhead)
            #expect(try tx.idempotencyKeptBytes(accountID: "acc", createdAfter: 1) == 0)   // expired keys do not count
            // A key without an account (the admin's) is tied to the account its answer names.
            try tx.putIdempotencyRecord(owner: [9], key: "kü", accountID: nil, IdempotencyRecord(fingerprint: [0], answer: nil, createdAt: 1))
            #expect(try tx.idempotencyKeptBytes(accountID: "other", createdAfter: 0) == 0)
            try tx.setIdempotencyAnswer(owner: [9], key: "kü", answer: [1, 2], accountID: "other")
            #expect(try tx.idempotencyKeptBytes(accountID: "other", createdAfter: 0) == 2 + 3 + overhead)
            #expect(try tx.idempotencyRecord(owner: [9], key: "kü")?.answer == [1, 2])
            // Tied to an account that does not exist: the key goes.
            try tx.putIdempotencyRecord(owner: [9], key: "gone", accountID: nil, IdempotencyRecord(fingerprint: [0], answer: nil, createdAt: 1))
            try tx.setIdempotencyAnswer(owner: [9], key: "gone", answer: [1], accountID: "nobody")
            #expect(try tx.idempotencyRecord(owner: [9], key: "gone") == nil)
        }
        let deleted = try db.store.write(account: "other") { tx in try tx.deleteAccount() }
        #expect(deleted)
        let (left, kept) = try db.store.writeServer { tx in
            (try tx.idempotencyRecord(owner: [9], key: "kü"), try tx.idempotencyKeptBytes(accountID: "acc", createdAfter: 0))
        }
        #expect(left == nil && kept == 1002 + overhead)
    }

    @Test(arguments: TestEngine.available) func historyIsMeasuredInBytesFromTheNewest(_ engine: TestEngine) throws {
        let db = try TestDatabase(engine)
        let device = DeviceRef(accountID: "acc", deviceID: "dev")
        try db.store.writeServer { tx in try tx.insertAccount(accountID: "acc", name: "n", tokenHash: [1], createdAt: Date()) }
        try db.store.write(account: "acc") { tx in
            try tx.insertDevice(device, name: "d", platform: nil, tokenHash: [2], createdAt: Date())
            #expect(try tx.changeSeqOverBytes(device, keeping: 0) == nil)
            for seq in Int64(1)...4 {
                try tx.appendChange(device, seq: seq, createdAt: Double(seq), details: ChangeDetails(assets: ChangeLists(inserted: [String(repeating: "é", count: 500)])))
            }
            try tx.appendChange(device, seq: 5, createdAt: 5, details: nil)   // a reset: no details
            let one = try #require(try tx.changeSeqOverBytes(device, keeping: 0))
            #expect(one == 4)
            // Each change holds a little over 1000 bytes (500 two-byte characters).
            #expect(try tx.changeSeqOverBytes(device, keeping: 2500) == 2)
            #expect(try tx.changeSeqOverBytes(device, keeping: 1_000_000) == nil)
            try tx.pruneChanges(device, throughSeq: 2)
            #expect(try tx.changeSeqOverBytes(device, keeping: 2500) == nil)
        }
    }

    @Test(arguments: TestEngine.available) func journalEntriesAreReadAChunkAtATime(_ engine: TestEngine) throws {
        let db = try TestDatabase(engine)
        try db.store.writeServer { tx in try tx.insertAccount(accountID: "acc", name: "n", tokenHash: [1], createdAt: Date()) }
        try db.store.write(account: "acc") { tx in
            try tx.putJournal(StoredJournal(journalID: "J", title: "t", version: 1, entryCount: 0, createdSeq: 1, createdAt: 1, updatedAt: 1))
            for (i, id) in ["c", "a", "b", "d"].enumerated() {
                try tx.putJournalEntry(StoredJournalEntry(journalID: "J", entryID: id, text: id, photos: ["P\(i)"], version: Int64(10 + i), createdSeq: Int64(10 + i)))
            }
            try tx.putJournalEntry(StoredJournalEntry(journalID: "K", entryID: "other", text: "", photos: [], version: 20, createdSeq: 11))
        }
        let (first, rest, none) = try db.store.read(account: "acc") { tx in
            (try tx.journalEntries(journalID: "J", createdAfter: 0, limit: 2), try tx.journalEntries(journalID: "J", createdAfter: 11, limit: 10),
             try tx.journalEntries(journalID: "J", createdAfter: 13, limit: 10))
        }
        #expect(first.map(\.entryID) == ["c", "a"] && first[1].photos == ["P1"])
        #expect(rest.map(\.entryID) == ["b", "d"])
        #expect(none.isEmpty)
    }
}
