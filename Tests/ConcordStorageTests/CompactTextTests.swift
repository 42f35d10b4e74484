import ConcordDomain
import ConcordMappingIndex
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

    @Test(arguments: [
        ("1970-01-01T00:00:00Z", 0), ("2024-01-01T00:00:00Z", 1_704_067_200), ("1969-12-31T23:59:59Z", -1),
        ("2000-02-29T12:00:00Z", 951_825_600), ("0001-01-01T00:00:00Z", -62_135_596_800), ("9999-12-31T23:59:59Z", 253_402_300_799),
        ("2024-05-01T10:00:00Z", 1_714_557_600),
        // Other spellings of an instant, and what is not a date, stay text.
        ("2024-01-01T00:00:00.5Z", nil), ("2024-01-01T02:00:00+02:00", nil), ("2024-01-01t00:00:00Z", nil),
        ("2024-01-01T00:00:00z", nil), ("2023-02-29T00:00:00Z", nil), ("2024-04-31T00:00:00Z", nil), ("2024-13-01T00:00:00Z", nil),
        ("2024-01-01T24:00:00Z", nil), ("2024-12-31T23:59:60Z", nil), ("2024-1-01T00:00:00Z ", nil), ("", nil), ("+024-01-01T00:00:00Z", nil),
    ] as [(String, Int64?)])
    func canonicalDatesAreStoredAsSecondsAndReadBackAsWritten(_ text: String, _ seconds: Int64?) {
        #expect(CompactDate.seconds(text) == seconds, "\(text)")
        if let seconds { #expect(CompactDate.text(seconds) == text) }
    }

    /// Dates across the whole range read back as Foundation writes them, and convert to their seconds
    /// again, also through their 5-byte stored form.
    @Test func datesRoundTripAgainstFoundation() {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        var random = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let seconds = Int64.random(in: -62_135_596_800...253_402_300_799, using: &random)
            let text = CompactDate.text(seconds)
            #expect(CompactDate.seconds(text) == seconds, "\(seconds)")
            #expect(CompactDate.blob(seconds).withUnsafeBytes { CompactDate.seconds(blob: $0) } == seconds)
            // The creation second the domain computes (which storage then leaves to the date).
            #expect(RFC3339.epochSecond(text) == seconds, "\(text)")
            if seconds >= -2_208_988_800 {   // Foundation's years before 1900 are not all proleptic Gregorian
                #expect(text == formatter.string(from: Date(timeIntervalSince1970: Double(seconds))), "\(seconds)")
            }
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
        var video = LibraryObject.asset("P-3", fingerprint: "AAAAAAAAAAAAAAAAAAAAAA", creationDate: "2024-01-01T12:00:00.5+02:00")
        video.mediaType = .video
        video.modificationDate = "2024-03-01T00:00:00Z"
        let objects: [LibraryObject] = [
            .asset("P-1", fingerprint: Self.sha256, creationDate: "2024-01-01T00:00:00Z"), .asset("P-2", fingerprint: ""), video,
        ]
        try service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: objects)), device: device)
        #expect(try objects.map { try service.library.object(localIdentifier: $0.localIdentifier, device: device) } == objects)
        let answers = try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["P-1", "P-2", "P-3"], device: device).map(\.result)
        var rows: [String] = []
        try store.writer.query("SELECT local_id, typeof(fingerprint), length(fingerprint), typeof(record_guid), length(record_guid) FROM objects ORDER BY local_id") { s in
            rows.append("\(s.text(0)) \(s.text(1)) \(s.int(2)) \(s.text(3)) \(s.int(4))")
        }
        #expect(rows == ["P-1 blob 32 blob 16", "P-2 text 0 blob 16", "P-3 text 22 blob 16"])
        var dates: [String] = []
        try store.writer.query("""
            SELECT quote(media_type), typeof(creation_date), length(creation_date), typeof(modification_date), quote(creation_second)
            FROM objects ORDER BY local_id
            """) { s in
            dates.append("\(s.text(0)) \(s.text(1)) \(s.int(2)) \(s.text(3)) \(s.text(4))")
        }
        // A canonical creation date's seconds stand for creation_second; another date keeps it.
        #expect(dates == ["'' blob 5 null NULL", "'' null 0 null NULL", "'video' text 27 blob 1704103200"])
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
            var dates: [String] = []
            try sqlite.writer.query("SELECT DISTINCT typeof(media_type) || '/' || typeof(creation_date) || '/' || typeof(creation_second) FROM objects") { s in
                dates.append(s.text(0))
            }
            #expect(Set(dates) == ["text/blob/null", "text/null/null"], "\(dates)")
            let mac = DeviceRef(accountID: "acc", deviceID: "mac"), pc = DeviceRef(accountID: "acc", deviceID: "pc")
            let r1 = "\(LayoutMigrationTests.g1):001:\(contentFingerprint(1))"
            let r2 = "\(LayoutMigrationTests.g2):001:\(contentFingerprint(2))"
            for indexBytes in [0, 64 << 20] {
                var configuration = DomainConfiguration()
                configuration.mappingIndexBytes = indexBytes
                let service = try ConcordService(store: store, configuration: configuration)
                #expect(try service.mapping.cloudIdentifiers(forLocalIdentifiers: ["MAC-1", "MAC-2"], device: mac).map(\.result) == [.found(r1), .found(r2)])
                #expect(try service.mapping.localIdentifiers(forCloudIdentifiers: [r1, r2], device: pc).map(\.result) == [.found("PC-1"), .found("PC-2")])
                let object = try service.library.object(localIdentifier: "PC-2", device: pc)
                #expect(object.fingerprint == contentFingerprint(2) && object.creationDate == "2024-05-02T10:00:00Z" && object.mediaType == .image)
            }
        }
    }
}
