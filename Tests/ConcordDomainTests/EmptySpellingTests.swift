import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

/// Where each case runs: every engine, with the mapping index on and off (storage answering).
struct MappingSetup: CustomStringConvertible, Sendable {
    let engine: TestEngine
    let index: Bool
    var description: String { "\(self.engine), index \(self.index ? "on" : "off")" }

    static let all: [MappingSetup] = TestEngine.available.flatMap { [MappingSetup(engine: $0, index: true), MappingSetup(engine: $0, index: false)] }

    func env() throws -> TestEnv {
        var configuration = DomainConfiguration()
        if !self.index { configuration.mappingIndexBytes = 0 }
        return try TestEnv(self.engine, configuration: configuration)
    }
}

/// Cloud → local with an empty fingerprint part (`<GUID>:001:`): the record's own fingerprint
/// stands for it, so both spellings of a record name the same object by content too; with no
/// fingerprint on the record either, or no record, the identifier is not found. Table-driven.
@Suite struct EmptySpellingTests {
    struct Case: CustomStringConvertible, Sendable {
        let name: String
        /// Device A's assets (id, fingerprint, key); A maps `asked` to make the record.
        var a: [(String, String, String?)] = [("a1", fp(1), nil)]
        var asked = "a1"
        /// Device B's assets (id, fingerprint), and those B maps local → cloud before asking.
        var b: [(String, String)] = []
        var bMapsFirst: [String] = []
        /// The identifier B asks: the record's GUID with an empty fingerprint part (unless a GUID
        /// of no record, or another type code).
        var unknownGUID = false
        var typeCode = "001"
        var contentMatch = true
        /// Sent by A after its mapping (the record takes it when it has none).
        var aLaterFingerprint: String?
        let expected: MappingResult
        /// B's links after the answer.
        let linkedOnB: Int
        var description: String { self.name }
    }

    static let notFound = MappingResult.error(.identifierNotFound(limitedLibrary: false))

    static let cases: [Case] = [
        Case(name: "one object with the record's content: found and linked", b: [("b1", fp(1)), ("b2", fp(2))],
             expected: .found("b1"), linkedOnB: 1),
        Case(name: "several with the record's content: all of them sorted, none linked", b: [("b-z", fp(1)), ("b-a", fp(1)), ("b2", fp(2))],
             expected: .error(.multipleIdentifiersFound(localIdentifiers: ["b-a", "b-z"])), linkedOnB: 0),
        Case(name: "none with the record's content", b: [("b2", fp(2))], expected: notFound, linkedOnB: 0),
        Case(name: "contentMatch false skips content", b: [("b1", fp(1))], contentMatch: false, expected: notFound, linkedOnB: 0),
        Case(name: "a record without a fingerprint: nothing to match", a: [("a1", "", nil)], b: [("b1", ""), ("b2", fp(1))],
             expected: notFound, linkedOnB: 0),
        Case(name: "no such record", b: [("b1", fp(1))], unknownGUID: true, expected: notFound, linkedOnB: 0),
        Case(name: "the record's GUID with another type code is no record", b: [("b1", fp(1))], typeCode: "040", expected: notFound, linkedOnB: 0),
        Case(name: "an object linked to another record is answered, not relinked",
             a: [("a1", fp(1), nil), ("a2", fp(1), nil)], asked: "a2", b: [("b1", fp(1))], bMapsFirst: ["b1"],
             expected: .found("b1"), linkedOnB: 1),
        Case(name: "a record that took its fingerprint later", a: [("a1", "", nil)], b: [("b1", fp(1))], aLaterFingerprint: fp(1),
             expected: .found("b1"), linkedOnB: 1),
        Case(name: "a record carrying a key no object of B carries: by content", a: [("a1", fp(1), "K1")],
             b: [("b1", fp(1))], expected: .found("b1"), linkedOnB: 1),
    ]

    @Test(arguments: MappingSetup.all, cases) func emptySpellingMatchesByTheRecordsFingerprint(_ setup: MappingSetup, _ c: Case) throws {
        let env = try setup.env()
        let a = try env.device("A"), b = try env.device("B")
        try env.service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: c.a.map {
            .asset($0.0, fingerprint: $0.1, photoKitCloudIdentifier: $0.2.map { "\($0):001:h" })
        })), device: a)
        let records = try c.a.map { try env.cloudID(a, $0.0) }
        let asked = try #require(CloudIdentifier(parsing: records[c.a.firstIndex { $0.0 == c.asked }!]))
        if let later = c.aLaterFingerprint {
            try env.put(a, assets: [(c.asked, later)])
            #expect(try env.cloudID(a, c.asked) == asked.stringValue + later, "the record took the fingerprint")
        }
        try env.put(b, assets: c.b)
        _ = try env.cloud(b, c.bMapsFirst)
        let linkedBefore = try env.service.mapping.status(device: b).linked
        let guid = c.unknownGUID ? "00000000-0000-4000-8000-00000000ABCD" : asked.guid
        let identifier = "\(guid):\(c.typeCode):"
        let answer = try env.service.mapping.localIdentifierResults(forCloudIdentifiers: IdentifierBatch([identifier]), device: b, contentMatch: c.contentMatch)
        #expect(answer == [c.expected])
        #expect(try env.service.mapping.status(device: b).linked == c.linkedOnB, "linked before: \(linkedBefore)")
        // Asked again: the same answer (now by the stored link where one was stored).
        #expect(try env.service.mapping.localIdentifierResults(forCloudIdentifiers: IdentifierBatch([identifier]), device: b, contentMatch: c.contentMatch) == [c.expected])
        // A link stored for the empty spelling is the record's: B's object answers the record, spelled with its fingerprint.
        if case .found(let local) = c.expected, c.linkedOnB > linkedBefore {
            let full = try env.cloudID(b, local)
            #expect(full.hasPrefix(asked.guid + ":001:") && CloudIdentifier(parsing: full)?.fingerprint.isEmpty == false)
        }
    }

    /// Journals resolve their photos as cloud → local does: an entry holding the empty spelling
    /// opens on a device that has the record's content.
    @Test(arguments: MappingSetup.all) func aJournalPhotoSpelledEmptyOpensByTheRecordsContent(_ setup: MappingSetup) throws {
        let env = try setup.env()
        let a = try env.device("A"), b = try env.device("B")
        try env.put(a, assets: [("a1", "")])
        let bare = try env.cloudID(a, "a1")
        #expect(bare.hasSuffix(":001:"))
        let journal = try env.service.journals.createJournal(title: "j", device: a)
        _ = try env.service.journals.putEntry(journalID: journal.journalID, entryID: "e", text: "t", photos: [.cloudIdentifier(bare)], ifMatch: nil, device: a)
        try env.put(b, assets: [("b1", fp(3))])
        #expect(try env.service.journals.journal(journal.journalID, device: b).entries.first?.photos.map(\.result) == [Self.notFound])
        // A hashes its photo: the record takes the fingerprint, and the entry opens on B by content.
        try env.put(a, assets: [("a1", fp(3))])
        let read = try env.service.journals.journal(journal.journalID, device: b)
        #expect(read.entries.first?.photos.map(\.result) == [.found("b1")])
        #expect(read.entries.first?.photos.map(\.cloudIdentifier) == [bare], "the entry keeps the spelling it was written with")
        #expect(try env.cloudID(b, "b1") == bare + fp(3), "the link was stored")
    }
}

/// The wanted rule's second clause: an object without fingerprint and key, linked to a record with
/// neither, is wanted (only its content can ever match that record elsewhere, and hashing it
/// downloads nothing), until it or the record gains a fingerprint or the record a key. Table-driven:
/// each case a few steps, then the wanted lists of both devices.
@Suite struct WantedForItsLinkTests {
    struct Case: CustomStringConvertible, Sendable {
        let name: String
        /// Steps on device A (0) and B (1), in order.
        let steps: [Step]
        /// The wanted lists after them (A, B).
        let wantedA: [String]
        let wantedB: [String]
        var description: String { self.name }
    }

    enum Step: Sendable {
        /// Upserts an asset: (id, fingerprint, key).
        case put(Int, String, String, String?)
        /// Upserts an album without fingerprint or key.
        case album(Int, String)
        /// Local → cloud.
        case map(Int, [String])
        /// The person links device `d`'s object to the record device `from`'s object is linked to.
        case link(Int, String, from: Int, String)
        case delete(Int, String)
    }

    static let cases: [Case] = [
        Case(name: "keyless, unhashed, mapped: wanted", steps: [.put(0, "a1", "", nil), .map(0, ["a1"])], wantedA: ["a1"], wantedB: []),
        Case(name: "not mapped: no record, nothing to match", steps: [.put(0, "a1", "", nil)], wantedA: [], wantedB: []),
        Case(name: "with a key: its record carries the key", steps: [.put(0, "a1", "", "K1"), .map(0, ["a1"])], wantedA: [], wantedB: []),
        Case(name: "hashed: not wanted", steps: [.put(0, "a1", fp(1), nil), .map(0, ["a1"])], wantedA: [], wantedB: []),
        Case(name: "an album too", steps: [.album(0, "c1"), .map(0, ["c1"])], wantedA: ["c1"], wantedB: []),
        Case(name: "hashed later: the record takes the fingerprint, not wanted",
             steps: [.put(0, "a1", "", nil), .map(0, ["a1"]), .put(0, "a1", fp(1), nil)], wantedA: [], wantedB: []),
        Case(name: "a key later: not wanted", steps: [.put(0, "a1", "", nil), .map(0, ["a1"]), .put(0, "a1", "", "K1")], wantedA: [], wantedB: []),
        Case(name: "the record takes a key from another device's object",
             steps: [.put(0, "a1", "", nil), .map(0, ["a1"]), .put(1, "b1", "", "K1"), .link(1, "b1", from: 0, "a1")], wantedA: [], wantedB: []),
        Case(name: "two devices on one bare record: both wanted",
             steps: [.put(0, "a1", "", nil), .map(0, ["a1"]), .put(1, "b1", "", nil), .link(1, "b1", from: 0, "a1")], wantedA: ["a1"], wantedB: ["b1"]),
        Case(name: "one hashes: the record takes its fingerprint, the other is no longer wanted",
             steps: [.put(0, "a1", "", nil), .map(0, ["a1"]), .put(1, "b1", "", nil), .link(1, "b1", from: 0, "a1"), .put(0, "a1", fp(1), nil)],
             wantedA: [], wantedB: []),
        Case(name: "the record's first object deleted: still bare, the other still wanted",
             steps: [.put(0, "a1", "", nil), .map(0, ["a1"]), .put(1, "b1", "", nil), .link(1, "b1", from: 0, "a1"), .delete(0, "a1")],
             wantedA: [], wantedB: ["b1"]),
        Case(name: "both clauses at once, in byte order",
             steps: [.put(0, "a-hashed", fp(1), nil), .map(0, ["a-hashed"]), .put(1, "b-z", "", nil), .put(1, "b-a", "", nil), .map(1, ["b-z"])],
             wantedA: [], wantedB: ["b-a", "b-z"]),
    ]

    @Test(arguments: MappingSetup.all, cases) func wantedForItsLink(_ setup: MappingSetup, _ c: Case) throws {
        let env = try setup.env()
        let devices = [try env.device("A"), try env.device("B")]
        for step in c.steps {
            switch step {
            case .put(let d, let id, let fingerprint, let key):
                try env.service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: [
                    .asset(id, fingerprint: fingerprint, photoKitCloudIdentifier: key.map { "\($0):001:h" }),
                ])), device: devices[d])
            case .album(let d, let id):
                try env.service.library.applyChanges(LibraryChangeRequest(assetCollections: LibraryChangePart(upsert: [.assetCollection(id, fingerprint: "")])),
                                                     device: devices[d])
            case .map(let d, let ids):
                _ = try env.cloud(devices[d], ids)
            case .link(let d, let id, let from, let theirs):
                try env.service.mapping.link(cloudIdentifier: try env.cloudID(devices[from], theirs), localIdentifier: id, device: devices[d])
            case .delete(let d, let id):
                try env.service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(delete: [id])), device: devices[d])
            }
            // Read between steps too: cached answers must follow every write.
            _ = try devices.map { try env.service.mapping.status(device: $0) }
        }
        for (device, expected) in zip(devices, [c.wantedA, c.wantedB]) {
            let page = try env.service.mapping.wanted(device: device, after: nil, limit: 1000)
            #expect(page.objects.map(\.localIdentifier) == expected && page.total == expected.count && page.next == nil)
            #expect(try env.service.mapping.status(device: device).wanted == expected.count)
            // Paged one at a time: the same list.
            var paged: [String] = []
            var after: String?
            repeat {
                let p = try env.service.mapping.wanted(device: device, after: after, limit: 1)
                paged += p.objects.map(\.localIdentifier)
                after = p.next
            } while after != nil
            #expect(paged == expected)
        }
    }
}
