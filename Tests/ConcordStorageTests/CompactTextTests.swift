import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// SQLite's binary form of record GUIDs and fingerprints (`CompactText`, migration 11): exactly the
/// canonical spellings convert, every conversion reads back as the text written, and a database
/// written before it converts in place and answers as before.
@Suite struct CompactTextTests {
    static let sha256 = Base64URL.encode(SHA256.hash(Array("content".utf8)))   // 43 characters, 32 bytes

    @Test(arguments: [
        // (text, stored bytes: nil = stays text)
        ("0C44A1D2-0000-4000-8000-000000000001", 16),          // an upper-case UUID
        ("FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", 16),
        ("0c44a1d2-0000-4000-8000-000000000001", 27),          // lower case: not a GUID's spelling, but base64url
        ("0C44A1D2-0000-4000-8000-00000000000G", 27),
        ("0C44A1D2-0000-4000-8000-00000000000=", nil),
        ("0C44A1D2+0000-4000-8000-000000000001", nil),
        ("0C44A1D200004000800000000000000001AB", 27),          // no dashes: base64url of 27 bytes
        (sha256, 32),
        ("AAAAAAAAAAAAAAAAAAAAAA", nil),                        // base64url of 16 bytes: would read back as a GUID
        ("AAAAAAAAAAAAAAAAAAAAAAAAAA", 19),
        ("AQ", 1), ("AAE", 2), ("ABCD", 3),
        ("AC", nil),                                            // unused low bits set: not canonical
        ("ABD", nil),
        ("A", nil), ("ABCDE", nil),                             // a length base64 cannot have
        ("", nil),                                              // no fingerprint
        ("AB=", nil), ("AB+/", nil), ("AB\u{0}C", nil), ("ÀB", nil),
    ] as [(String, Int?)])
    func onlyCanonicalSpellingsConvertAndReadBackAsWritten(_ text: String, _ storedBytes: Int?) {
        let stored = CompactText.compact(text)
        #expect(stored?.count == storedBytes, "\(text)")
        if let stored {
            #expect(stored.withUnsafeBytes { CompactText.expand($0) } == text)
        }
    }

    /// Every byte string of the lengths that convert reads back as a text that converts to it again.
    @Test func everyStoredFormExpandsToATextThatCompactsToIt() {
        var random = SystemRandomNumberGenerator()
        for length in [1, 2, 3, 15, 17, 31, 32, 33, 48, 64] {
            for _ in 0..<200 {
                let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
                let text = bytes.withUnsafeBytes { CompactText.expand($0) }
                #expect(CompactText.compact(text) == bytes, "\(length): \(text)")
            }
        }
        for _ in 0..<200 {
            let guid = (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }
            let text = guid.withUnsafeBytes { CompactText.expand($0) }
            #expect(text == UUID(uuid: guid.withUnsafeBytes { $0.load(as: uuid_t.self) }).uuidString)
            #expect(CompactText.compact(text) == guid)
        }
    }

    /// What SQLite holds: blobs for the canonical GUIDs and fingerprints, text for the rest, and
    /// `concord_compact` in SQL agrees with the Swift binding.
    @Test func theColumnsHoldTheBinaryForms() throws {
        let dir = try TempDir()
        let store = try SQLiteStore(path: dir.db)
        defer { store.close() }
        let service = try ConcordService(store: store, configuration: DomainConfiguration())
        let account = try service.accounts.createAccount(name: "A")
        let device = DeviceRef(accountID: account.accountID, deviceID: try service.accounts.createDevice(accountID: account.accountID, name: "d", platform: nil).deviceID)
        try service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: [
            .asset("P-1", fingerprint: Self.sha256), .asset("P-2", fingerprint: ""), .asset("P-3", fingerprint: "AAAAAAAAAAAAAAAAAAAAAA"),
        ])), device: device)
        let answers = try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["P-1", "P-2", "P-3"], device: device).map(\.result)
        var rows: [String] = []
        try store.writer.query("SELECT local_id, typeof(fingerprint), length(fingerprint), typeof(record_guid), length(record_guid) FROM objects ORDER BY local_id") { s in
            rows.append("\(s.text(0)) \(s.text(1)) \(s.int(2)) \(s.text(3)) \(s.int(4))")
        }
        #expect(rows == ["P-1 blob 32 blob 16", "P-2 text 0 blob 16", "P-3 text 22 blob 16"])
        var records: [String] = []
        try store.writer.query("SELECT typeof(guid), typeof(fingerprint) FROM records ORDER BY created_order") { s in records.append("\(s.text(0)) \(s.text(1))") }
        #expect(records == ["blob blob", "blob text", "blob text"])
        var sqlForm = ""
        try store.writer.query("SELECT hex(concord_compact(?)), concord_compact(?), concord_compact(NULL) IS NULL", [.text("0C44A1D2-0000-4000-8000-000000000001"), .text("abc")]) { s in
            sqlForm = "\(s.text(0)) \(s.text(1)) \(s.int(2))"
        }
        #expect(sqlForm == "0C44A1D2000040008000000000000001 abc 1")
        // And the answers read back the texts (the service's own checks of them passed).
        #expect(answers.allSatisfy { if case .found = $0 { true } else { false } }, "\(answers)")
    }

    /// A database of schema 10 (text everywhere) converts: GUIDs and fingerprints become their
    /// binary forms, and mapping answers as before, from storage and from the index.
    @Test func aSchema10DatabaseConvertsInPlace() throws {
        try OldSchemaDatabase.open(.sqlite, atVersion: 10, seed: (sqlite: LayoutMigrationTests.sqliteSeed, postgres: "")) { store in
            let sqlite = try #require(store as? SQLiteStore)
            var types: [String] = []
            try sqlite.writer.query("SELECT typeof(guid), typeof(fingerprint) FROM records UNION ALL SELECT typeof(record_guid), typeof(fingerprint) FROM objects") { s in
                types.append("\(s.text(0))/\(s.text(1))")
            }
            #expect(Set(types) == ["blob/blob", "null/blob", "null/text"], "\(types)")
            let mac = DeviceRef(accountID: "acc", deviceID: "mac"), pc = DeviceRef(accountID: "acc", deviceID: "pc")
            let r1 = "\(LayoutMigrationTests.g1):001:\(LayoutMigrationTests.fingerprint(1))"
            let r2 = "\(LayoutMigrationTests.g2):001:\(LayoutMigrationTests.fingerprint(2))"
            for indexBytes in [0, 64 << 20] {
                var configuration = DomainConfiguration()
                configuration.mappingIndexBytes = indexBytes
                let service = try ConcordService(store: store, configuration: configuration)
                #expect(try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["MAC-1", "MAC-2"], device: mac).map(\.result) == [.found(r1), .found(r2)])
                #expect(try service.mapping.localIdentifiers(forCloudIdentifiers: [r1, r2], device: pc).map(\.result) == [.found("PC-1"), .found("PC-2")])
                #expect(try service.library.object(localIdentifier: "PC-2", device: pc).fingerprint == LayoutMigrationTests.fingerprint(2))
            }
        }
    }
}
