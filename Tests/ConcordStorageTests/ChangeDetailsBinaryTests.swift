import ConcordBytes
import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// SQLite's binary history details (`ChangeDetailsBinary`, migration 13): every identifier reads
/// back as written, in the text form's order; the text form's size is what the byte bound counts;
/// damaged bytes are refused; and entries written as text before the migration still read.
@Suite struct ChangeDetailsBinaryTests {
    static let uuid = "6F9619FF-8B86-D011-B42D-00C04FC964FF"

    @Test(arguments: [
        // (identifier, bytes of its entry)
        (uuid + "/L0/001", 17),                   // PhotoKit's asset shape
        (uuid + "/L0/040", 25),                   // a UUID and another rest
        (uuid, 18),                               // a UUID alone (an empty rest)
        (uuid.lowercased() + "/L0/001", 45),      // lower case: as text
        ("IMG-1/L0/001", 14),
        ("é", 4),
        (String(repeating: "x", count: 200), 203),   // a two-byte length
        (uuid + "/L0/001é", 27),
    ] as [(String, Int)])
    func eachIdentifierShapeReadsBackAsWritten(_ id: String, _ entryBytes: Int) throws {
        let details = ChangeDetails(assets: ChangeLists(inserted: [id]))
        let bytes = ChangeDetailsBinary.encode(details)
        #expect(bytes.count == 1 + entryBytes, "\(id)")
        #expect(bytes.withUnsafeBytes { ChangeDetailsBinary.decode($0) } == details)
        #expect(ChangeDetailsCodec.encodedByteCount(details) == ChangeDetailsCodec.encode(details).utf8.count)
    }

    @Test func everyListKeepsItsIdentifiersInOrder() {
        let d = ChangeDetails(assets: ChangeLists(inserted: ["a", Self.uuid + "/L0/001", "b"], updated: ["c"], deleted: [Self.uuid]),
                              assetCollections: ChangeLists(inserted: [Self.uuid + "/L0/040"], deleted: ["x y"]),
                              collectionLists: ChangeLists(inserted: ["é"], updated: ["f"], deleted: ["g"]))
        #expect(ChangeDetailsBinary.encode(d).withUnsafeBytes { ChangeDetailsBinary.decode($0) } == d)
        #expect(ChangeDetailsCodec.encodedByteCount(d) == ChangeDetailsCodec.encode(d).utf8.count)
        #expect(ChangeDetailsBinary.encode(ChangeDetails()) == [1] && ChangeDetailsCodec.encodedByteCount(ChangeDetails()) == 0)
        // The text form (PostgreSQL's), written from the lists' bytes: its lines, and back.
        #expect(ChangeDetailsCodec.encode(d) == ["aia", "ai" + Self.uuid + "/L0/001", "aib", "auc", "ad" + Self.uuid,
                                                 "ci" + Self.uuid + "/L0/040", "cdx y", "lié", "luf", "ldg"].joined(separator: "\n"))
        #expect(ChangeDetailsCodec.decode(ChangeDetailsCodec.encode(d)) == d && ChangeDetailsCodec.encode(ChangeDetails()) == "")
    }

    @Test(arguments: [
        [UInt8](),                  // no version
        [2],                        // another version
        [1, 9],                     // a list that does not exist
        [1, 0x30],                  // a form that does not exist
        [1, 0, 5, 65],              // a length past the end
        [1, 0x20, 1, 2, 3],         // a UUID cut short
        [1, 0x10] + [UInt8](repeating: 0, count: 16) + [0x80],   // a length that does not end
    ])
    func damagedBytesAreRefused(_ bytes: [UInt8]) {
        #expect(bytes.withUnsafeBytes { ChangeDetailsBinary.decode($0) } == nil)
    }

    /// Through the store: entries are stored in binary and read back; an entry written as text by
    /// an older build (before migration 13) still reads and counts its length for the byte bound.
    @Test func theHistoryStoresBinaryAndStillReadsText() throws {
        let dir = try TempDir()
        let store = try SQLiteStore(path: dir.db)
        defer { store.close() }
        let device = DeviceRef(accountID: "acc", deviceID: "dev")
        let new = ChangeDetails(assets: ChangeLists(inserted: IdentifierList((0..<100).map { String(format: "%08X-0000-4000-8000-000000000000/L0/001", $0) })))
        let old = ChangeDetails(assets: ChangeLists(deleted: ["old-1", "old-2"]))
        try store.writeServer { tx in try tx.insertAccount(accountID: "acc", name: "n", tokenHash: [1], createdAt: Date()) }
        try store.write(account: "acc") { tx in
            try tx.insertDevice(device, name: "d", platform: nil, tokenHash: [2], createdAt: Date())
            try tx.appendChange(device, seq: 1, createdAt: 1, details: new)
        }
        try store.writer.run("INSERT INTO changes (account_key, device_key, seq, created_at, details) VALUES (1, 1, 2, 2, ?)",
                             [.text(ChangeDetailsCodec.encode(old))])
        var stored: [String] = []
        try store.writer.query("SELECT typeof(details), length(details), details_bytes FROM changes ORDER BY seq") { s in
            stored.append("\(s.text(0)) \(s.int(1)) \(s.isNull(2) ? "-" : String(s.int(2)))")
        }
        #expect(stored == ["blob 1701 4599", "text 15 -"])   // 100 × (43 + 3) − 1
        try store.write(account: "acc") { tx throws in
            #expect(try tx.changes(device, after: 0, limit: 10).map(\.details) == [new, old])
            // The bound counts the text form's bytes: 4 599 + 15.
            #expect(try tx.changeSeqOverBytes(device, keeping: 4614) == nil)
            #expect(try tx.changeSeqOverBytes(device, keeping: 4613) == 1)
        }
    }
}
