@testable import ConcordDomain
import ConcordTestSupport
import ConcordStorage
import Foundation
import Testing

extension TestEnv {
    /// Creates a journal on `device`.
    func journal(_ device: DeviceRef, _ title: String = "Trip") throws -> JournalSummary {
        try self.service.journals.createJournal(title: title, device: device)
    }

    /// Puts an entry whose photos are `locals` (the device's local identifiers).
    @discardableResult
    func entry(_ device: DeviceRef, _ journalID: String, _ entryID: String, text: String = "", locals: [String], ifMatch: IfMatch? = nil) throws -> JournalEntryView {
        try self.service.journals.putEntry(journalID: journalID, entryID: entryID, text: text, photos: locals.map { .localIdentifier($0) }, ifMatch: ifMatch, device: device)
    }

    /// The stored object's link on `device`, nil when unlinked or missing.
    func link(_ device: DeviceRef, _ local: String) throws -> CloudRecord? {
        try self.store.read(account: device.accountID) { tx in try tx.objects(device, localIdentifiers: [local]).first?.link }
    }
}

/// The cloud identifiers of an entry's photos.
func clouds(_ e: JournalEntryView) -> [String] { e.photos.map(\.cloudIdentifier) }

@Suite struct JournalTests {
    @Test(arguments: TestEngine.available) func createListGetRenameDeleteJournals(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        #expect(try env.service.journals.listJournals(device: d) == [])
        let trip = try env.journal(d, "Trip")
        env.clock.advance(10)
        let food = try env.journal(d, "Food")
        #expect(trip.title == "Trip" && trip.entryCount == 0 && trip.version != food.version)
        #expect(try env.service.journals.listJournals(device: d).map(\.journalID) == [trip.journalID, food.journalID])   // creation order

        let detail = try env.service.journals.journal(trip.journalID, device: d)
        #expect(detail == JournalDetail(journal: trip, entries: []))

        env.clock.advance(10)
        let renamed = try env.service.journals.renameJournal(trip.journalID, title: "Summer trip", ifMatch: nil, device: d)
        #expect(renamed.title == "Summer trip" && renamed.version != trip.version && renamed.updatedAt == trip.updatedAt + 20)
        #expect(renamed.createdAt == trip.createdAt)
        // The same title again changes nothing.
        #expect(try env.service.journals.renameJournal(trip.journalID, title: "Summer trip", ifMatch: nil, device: d) == renamed)

        for bad in ["", String(repeating: "x", count: 1025)] {
            expectErrorNamed("badRequest") { try env.service.journals.createJournal(title: bad, device: d) }
            expectErrorNamed("badRequest") { try env.service.journals.renameJournal(trip.journalID, title: bad, ifMatch: nil, device: d) }
        }
        #expect(try env.service.journals.createJournal(title: String(repeating: "x", count: 1024), device: d).title.utf8.count == 1024)

        try env.service.journals.deleteJournal(trip.journalID, ifMatch: nil, device: d)
        expectErrorNamed("notFound") { try env.service.journals.journal(trip.journalID, device: d) }
        expectErrorNamed("notFound") { try env.service.journals.deleteJournal(trip.journalID, ifMatch: nil, device: d) }
        expectErrorNamed("notFound") { try env.service.journals.renameJournal(trip.journalID, title: "x", ifMatch: nil, device: d) }
        // With If-Match too: preconditions are evaluated only when the request would otherwise
        // succeed (RFC 9110 §13.2.1).
        expectErrorNamed("notFound") { try env.service.journals.deleteJournal(trip.journalID, ifMatch: .any, device: d) }
        expectErrorNamed("notFound") { try env.service.journals.renameJournal(trip.journalID, title: "x", ifMatch: .versions(["1"]), device: d) }
        expectErrorNamed("notFound") { try env.service.journals.journal("not/a\u{1}journal", device: d) }
        #expect(try env.service.journals.listJournals(device: d).map(\.journalID).first == food.journalID)
    }

    @Test(arguments: TestEngine.available) func journalsBelongToTheAccountAndAreInvisibleToOthers(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        let j = try env.journal(a)
        try env.put(a, assets: [("a1", fp(1))])
        try env.entry(a, j.journalID, "e1", locals: ["a1"])
        #expect(try env.service.journals.listJournals(device: b).map(\.journalID) == [j.journalID])
        #expect(try env.service.journals.journal(j.journalID, device: b).entries.map(\.entryID) == ["e1"])

        let other = try env.service.accounts.createAccount(name: "Other")
        let o = try env.device("o", accountID: other.accountID)
        #expect(try env.service.journals.listJournals(device: o) == [])
        expectError(.notFound(message: "No such journal.")) { try env.service.journals.journal(j.journalID, device: o) }
        expectError(.notFound(message: "No such journal.")) { try env.service.journals.putEntry(journalID: j.journalID, entryID: "x", text: "", photos: [], ifMatch: nil, device: o) }
        expectError(.notFound(message: "No such journal.")) { try env.service.journals.deleteJournal(j.journalID, ifMatch: nil, device: o) }
    }

    @Test(arguments: TestEngine.available) func entryWrittenOnOneDeviceResolvesOnAnotherFoundAmbiguousAndMissing(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        try env.put(a, assets: [("a1", fp(1)), ("a2", fp(2)), ("a3", fp(3))])
        try env.put(b, assets: [("b1", fp(1)), ("b2", fp(2)), ("b2copy", fp(2))])
        let j = try env.journal(a)
        let written = try env.entry(a, j.journalID, "day-1", text: "Beach", locals: ["a1", "a2", "a3"])
        #expect(written.photos.map(\.result) == [.found("a1"), .found("a2"), .found("a3")])
        #expect(clouds(written) == [try env.cloudID(a, "a1"), try env.cloudID(a, "a2"), try env.cloudID(a, "a3")])

        let onB = try env.service.journals.journal(j.journalID, device: b)
        #expect(onB.entries.count == 1 && onB.entries[0].text == "Beach" && onB.entries[0].version == written.version)
        #expect(onB.entries[0].photos.map(\.result) == [
            .found("b1"),
            .error(.multipleIdentifiersFound(localIdentifiers: ["b2", "b2copy"])),
            .error(.identifierNotFound(limitedLibrary: false)),
        ])
        #expect(clouds(onB.entries[0]) == clouds(written))
        // Found by content with the record existing: the link is stored, so B maps b1 to the same identifier.
        #expect(try env.link(b, "b1")?.cloudIdentifier == clouds(written)[0])
        #expect(try env.link(b, "b2") == nil && env.link(b, "b2copy") == nil)

        // A limited library marks not-found photos.
        try env.service.library.setAuthorization(.limited, device: b)
        #expect(try env.service.journals.journal(j.journalID, device: b).entries[0].photos[2].result == .error(.identifierNotFound(limitedLibrary: true)))
    }

    @Test(arguments: TestEngine.available) func entryPhotosByCloudIdentifierAreStoredCanonically(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let a = try env.device("A")
        try env.put(a, assets: [("a1", fp(1))])
        let c1 = try env.cloudID(a, "a1")
        let unknown = "0d5f2a4e-1111-4222-8333-944455556666:001:" + fp(9)
        let j = try env.journal(a)
        let e = try env.service.journals.putEntry(journalID: j.journalID, entryID: "e", text: "t", photos: [.cloudIdentifier(c1.lowercased().replacingOccurrences(of: fp(1).lowercased(), with: fp(1))), .cloudIdentifier(unknown)], ifMatch: nil, device: a)
        #expect(clouds(e) == [c1, unknown.uppercased().replacingOccurrences(of: fp(9).uppercased(), with: fp(9))])
        #expect(e.photos.map(\.result) == [.found("a1"), .error(.identifierNotFound(limitedLibrary: false))])
    }

    @Test(arguments: TestEngine.available) func unmappablePhotosAre422AndNothingIsStored(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let a = try env.device("A")
        try env.put(a, assets: [("a1", fp(1)), ("fresh", fp(5))])
        let j = try env.journal(a)
        let before = try env.service.journals.currentJournalChangeToken(device: a)
        do {
            _ = try env.service.journals.putEntry(journalID: j.journalID, entryID: "e", text: "t",
                                         photos: [.localIdentifier("fresh"), .localIdentifier("nope"), .cloudIdentifier("garbage")], ifMatch: nil, device: a)
            Issue.record("expected 422")
        } catch {
            guard case .unprocessable(_, let details) = error else { Issue.record("got \(error)"); return }
            #expect(details == [DetailField("photos", .array([
                .object([DetailField("index", .int(1)), DetailField("localIdentifier", .string("nope")),
                         DetailField("error", ItemError.identifierNotFound(limitedLibrary: false).detailValue)]),
                .object([DetailField("index", .int(2)), DetailField("cloudIdentifier", .string("garbage")),
                         DetailField("error", ItemError.invalidIdentifier.detailValue)]),
            ]))])
        }
        // Nothing stored: no entry, no version change, no change, and the record step 3 made for "fresh" rolled back.
        #expect(try env.service.journals.journal(j.journalID, device: a).entries.isEmpty)
        #expect(try env.service.journals.listJournals(device: a)[0].version == j.version)
        #expect(try env.service.journals.currentJournalChangeToken(device: a) == before)
        #expect(try env.link(a, "fresh") == nil)
    }

    @Test(arguments: TestEngine.available) func entryValidation(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let a = try env.device("A")
        try env.put(a, assets: [("a1", fp(1))])
        let c1 = try env.cloudID(a, "a1")
        let j = try env.journal(a)
        let cases: [(entryID: String, text: String, photos: [JournalPhotoInput], field: String)] = [
            ("", "", [], "entryID"),
            (String(repeating: "e", count: 256), "", [], "entryID"),
            ("tab\there", "", [], "entryID"),
            ("e", String(repeating: "t", count: JournalService.maxEntryTextBytes + 1), [], "text"),
            ("e", "", [.localIdentifier("")], "photos.localIdentifier"),
            ("e", "", [.localIdentifier("a1"), .localIdentifier("a1")], "photos.localIdentifier"),
            ("e", "", [.localIdentifier("a1"), .cloudIdentifier(c1)], "photos"),
            ("e", "", [.cloudIdentifier(c1), .cloudIdentifier(c1.lowercased().replacingOccurrences(of: fp(1).lowercased(), with: fp(1)))], "photos"),
        ]
        for c in cases {
            do {
                _ = try env.service.journals.putEntry(journalID: j.journalID, entryID: c.entryID, text: c.text, photos: c.photos, ifMatch: nil, device: a)
                Issue.record("expected 400 for \(c.field)")
            } catch {
                guard case .badRequest(_, let field) = error else { Issue.record("got \(error)"); continue }
                #expect(field == c.field)
            }
        }
        #expect(try env.service.journals.journal(j.journalID, device: a).entries.isEmpty)
        // Bounds that pass: 255 bytes, any text with newlines, an empty photo list.
        let long = String(repeating: "é", count: 127) + "x"
        #expect(try env.service.journals.putEntry(journalID: j.journalID, entryID: long, text: "line\nline", photos: [], ifMatch: nil, device: a).entryID == long)
        var config = DomainConfiguration()
        config.maxBatch = 2
        let small = try TestEnv(engine, configuration: config)
        let s = try small.device()
        let sj = try small.journal(s)
        expectError(.batchTooLarge(maxBatch: 2)) {
            try small.service.journals.putEntry(journalID: sj.journalID, entryID: "e", text: "", photos: Array(repeating: .cloudIdentifier("x"), count: 3), ifMatch: nil, device: s)
        }
    }

    @Test(arguments: TestEngine.available) func entriesKeepCreationOrderAndCount(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let a = try env.device()
        let j = try env.journal(a)
        for id in ["z", "a", "m"] { try env.entry(a, j.journalID, id, locals: []) }
        try env.entry(a, j.journalID, "z", text: "edited", locals: [])   // an edit keeps its place
        #expect(try env.service.journals.journal(j.journalID, device: a).entries.map(\.entryID) == ["z", "a", "m"])
        #expect(try env.service.journals.listJournals(device: a)[0].entryCount == 3)
        try env.service.journals.deleteEntry(journalID: j.journalID, entryID: "z", ifMatch: nil, device: a)
        try env.entry(a, j.journalID, "z", locals: [])   // re-created: last
        let detail = try env.service.journals.journal(j.journalID, device: a)
        #expect(detail.entries.map(\.entryID) == ["a", "m", "z"] && detail.journal.entryCount == 3)
        expectError(.notFound(message: "No such entry.")) { try env.service.journals.deleteEntry(journalID: j.journalID, entryID: "nope", ifMatch: nil, device: a) }
    }

    @Test(arguments: TestEngine.available) func versionsAndIfMatch(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let a = try env.device()
        let j = try env.journal(a)
        // If-Match on an entry that does not exist yet: 412 without a version (RFC 9110 §13.1.1), for * too.
        expectError(.versionMismatch(currentVersion: nil)) { try env.entry(a, j.journalID, "e", locals: [], ifMatch: .any) }
        expectError(.versionMismatch(currentVersion: nil)) { try env.entry(a, j.journalID, "e", locals: [], ifMatch: .versions(["1"])) }
        let v1 = try env.entry(a, j.journalID, "e", text: "one", locals: [])
        let v2 = try env.entry(a, j.journalID, "e", text: "two", locals: [], ifMatch: .versions([v1.version]))
        #expect(v2.version != v1.version)
        expectError(.versionMismatch(currentVersion: v2.version)) { try env.entry(a, j.journalID, "e", text: "stale", locals: [], ifMatch: .versions([v1.version])) }
        let v3 = try env.entry(a, j.journalID, "e", text: "three", locals: [], ifMatch: .any)
        #expect(try env.entry(a, j.journalID, "e", text: "four", locals: [], ifMatch: .versions(["nope", v3.version])).text == "four")
        // Unchanged content keeps the version.
        let v4 = try env.entry(a, j.journalID, "e", text: "four", locals: [])
        #expect(try env.entry(a, j.journalID, "e", text: "four", locals: []).version == v4.version)

        // The journal's version moves with its entries; rename and delete check it.
        let journalNow = try env.service.journals.listJournals(device: a)[0]
        #expect(journalNow.version == v4.version)
        expectError(.versionMismatch(currentVersion: journalNow.version)) { try env.service.journals.renameJournal(j.journalID, title: "x", ifMatch: .versions([j.version]), device: a) }
        let renamed = try env.service.journals.renameJournal(j.journalID, title: "x", ifMatch: .versions([journalNow.version]), device: a)
        expectError(.versionMismatch(currentVersion: v4.version)) { try env.service.journals.deleteEntry(journalID: j.journalID, entryID: "e", ifMatch: .versions([v1.version]), device: a) }
        try env.service.journals.deleteEntry(journalID: j.journalID, entryID: "e", ifMatch: .versions([v4.version]), device: a)
        // A version seen before a delete never matches what is created later.
        let again = try env.entry(a, j.journalID, "e", locals: [])
        #expect(![v1.version, v2.version, v3.version, v4.version].contains(again.version))
        let current = try env.service.journals.listJournals(device: a)[0].version
        #expect(current != renamed.version)
        expectError(.versionMismatch(currentVersion: current)) { try env.service.journals.deleteJournal(j.journalID, ifMatch: .versions([renamed.version]), device: a) }
        try env.service.journals.deleteJournal(j.journalID, ifMatch: .any, device: a)
    }

    @Test(arguments: TestEngine.available) func twoDevicesEditingOneEntryWithIfMatchNeverOverwriteEachOther(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        let j = try env.journal(a)
        let base = try env.entry(a, j.journalID, "e", text: "base", locals: [])
        // Both read version `base`, then race; exactly one wins, the other learns the winner's version.
        let texts = ["from A", "from B"]
        let results = UnsafeResults(count: 2)
        let service = env.service
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            let device = i == 0 ? a : b
            do {
                let e = try service.journals.putEntry(journalID: j.journalID, entryID: "e", text: texts[i], photos: [], ifMatch: .versions([base.version]), device: device)
                results.set(i, .success(e.version))
            } catch {
                results.set(i, .failure(error))
            }
        }
        let outcomes = results.values
        let winners = outcomes.indices.filter { if case .success? = outcomes[$0] { return true } else { return false } }
        #expect(winners.count == 1)
        guard let w = winners.first, case .success(let version)? = outcomes[w], case .failure(let error)? = outcomes[1 - w] else { return }
        #expect(error as? DomainError == .versionMismatch(currentVersion: version))
        let stored = try env.service.journals.journal(j.journalID, device: a).entries[0]
        #expect(stored.text == texts[w] && stored.version == version)
        // The loser retries on the current version: nothing is lost.
        let merged = try env.service.journals.putEntry(journalID: j.journalID, entryID: "e", text: texts[w] + " + " + texts[1 - w], photos: [],
                                              ifMatch: .versions([version]), device: w == 0 ? b : a)
        #expect(merged.text == texts[w] + " + " + texts[1 - w])
    }

    @Test(arguments: TestEngine.available) func deniedDevicesCannotResolveJournals(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let a = try env.device()
        try env.put(a, assets: [("a1", fp(1))])
        let j = try env.journal(a)
        try env.entry(a, j.journalID, "e", locals: ["a1"])
        try env.service.library.setAuthorization(.denied, device: a)
        expectError(.accessUserDenied) { try env.service.journals.journal(j.journalID, device: a) }
        expectError(.accessUserDenied) { try env.entry(a, j.journalID, "f", locals: []) }
        expectError(.accessUserDenied) { try env.service.journals.applySelection(journalID: j.journalID, entryID: "e", cancelled: true, localIdentifiers: [], ifMatch: nil, device: a) }
        // What resolves no photo keeps working.
        #expect(try env.service.journals.listJournals(device: a).count == 1)
        #expect(try env.service.journals.renameJournal(j.journalID, title: "t", ifMatch: nil, device: a).title == "t")
        try env.service.journals.deleteEntry(journalID: j.journalID, entryID: "e", ifMatch: nil, device: a)
    }
}

/// Results written by concurrent iterations, each to its own slot.
final class UnsafeResults: @unchecked Sendable {
    // @unchecked Sendable: every access holds `lock`.
    private let lock = NSLock()
    private var slots: [Result<String, any Error>?]
    init(count: Int) { self.slots = Array(repeating: nil, count: count) }
    func set(_ i: Int, _ r: Result<String, any Error>) { self.lock.withLock { self.slots[i] = r } }
    var values: [Result<String, any Error>?] { self.lock.withLock { self.slots } }
}

/// Text with U+0000 is refused with 400 on both engines (PostgreSQL cannot store it; SQLite would
/// have stored it whole), and nothing changes: a resend cannot bump a version.
@Suite struct NULInTextTests {
    @Test(arguments: TestEngine.available) func textWithNULIsRefusedAndNothingChanges(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        expectErrorNamed("badRequest") { try env.service.accounts.createDevice(accountID: env.account.accountID, name: "visible\u{0}hidden", platform: nil) }
        expectErrorNamed("badRequest") { try env.service.journals.createJournal(title: "visible\u{0}hidden", device: d) }
        let journal = try env.service.journals.createJournal(title: "trip", device: d)
        let entry = try env.service.journals.putEntry(journalID: journal.journalID, entryID: "e", text: "plain", photos: [], ifMatch: nil, device: d)
        for _ in 0..<2 {
            expectErrorNamed("badRequest") {
                try env.service.journals.putEntry(journalID: journal.journalID, entryID: "e", text: "visible\u{0}hidden", photos: [], ifMatch: nil, device: d)
            }
        }
        let after = try env.service.journals.journal(journal.journalID, device: d)
        #expect(after.entries.map(\.text) == ["plain"] && after.entries.map(\.version) == [entry.version])
        let album = LibraryObject.assetCollection("ALBUM/L0/040", fingerprint: fp(1), title: "a\u{0}b")
        expectErrorNamed("badRequest") { try env.service.library.applyChanges(LibraryChangeRequest(assetCollections: LibraryChangePart(upsert: [album])), device: d) }
    }
}
