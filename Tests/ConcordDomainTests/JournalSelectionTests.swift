import ConcordDomain
import ConcordTestSupport
import ConcordStorage
import Foundation
import Testing

extension TestEnv {
    func select(_ device: DeviceRef, _ journalID: String, _ entryID: String, _ picked: [String], cancelled: Bool = false, ifMatch: IfMatch? = nil) throws -> JournalEntryView {
        try self.service.journals.applySelection(journalID: journalID, entryID: entryID, cancelled: cancelled, localIdentifiers: picked, ifMatch: ifMatch, device: device)
    }
}

@Suite struct JournalSelectionTests {
    /// A's entry of a1 and a2; on B, a1's content is held twice (dup1, dup2) and a2's once (b2).
    static func ambiguousOnB(_ engine: TestEngine) throws -> (TestEnv, DeviceRef, JournalSummary, [String]) {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        try env.put(a, assets: [("a1", fp(1)), ("a2", fp(2))])
        try env.put(b, assets: [("dup1", fp(1)), ("dup2", fp(1)), ("b2", fp(2)), ("b3", fp(3))])
        let j = try env.journal(a)
        return (env, b, j, clouds(try env.entry(a, j.journalID, "e", locals: ["a1", "a2"])))
    }

    /// The talk's example: ID:1 and ID:2 preselected; the person deselects 2 and adds 3.
    @Test(arguments: TestEngine.available) func deselectingOneAndAddingAnotherKeepsTheFirstCloudIdentifier(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        try env.put(d, assets: [("ID:1", fp(1)), ("ID:2", fp(2)), ("ID:3", fp(3))])
        let j = try env.journal(d)
        let before = try env.entry(d, j.journalID, "e", locals: ["ID:1", "ID:2"])
        let after = try env.select(d, j.journalID, "e", ["ID:1", "ID:3"])
        #expect(clouds(after) == [clouds(before)[0], try env.cloudID(d, "ID:3")])
        #expect(after.photos.map(\.result) == [.found("ID:1"), .found("ID:3")])
        #expect(after.version != before.version)
        #expect(try env.service.journals.journal(j.journalID, device: d).entries == [after])
    }

    @Test(arguments: TestEngine.available) func pickedOrderIsTheNewOrder(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        try env.put(d, assets: [("p1", fp(1)), ("p2", fp(2)), ("p3", fp(3))])
        let j = try env.journal(d)
        let before = try env.entry(d, j.journalID, "e", locals: ["p1", "p2", "p3"])
        let after = try env.select(d, j.journalID, "e", ["p3", "p1", "p2"])
        #expect(clouds(after) == [clouds(before)[2], clouds(before)[0], clouds(before)[1]])
        // Picking the same again changes nothing: same version.
        #expect(try env.select(d, j.journalID, "e", ["p3", "p1", "p2"]).version == after.version)
    }

    @Test(arguments: TestEngine.available) func aPickedObjectKeepsTheEntrysCloudIdentifierEvenWhenAFreshMappingWouldGiveAnother(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        // B maps its copy first (record R1); A holds two copies, so its second copy gets record R2.
        try env.put(b, assets: [("b1", fp(1))])
        let r1 = try env.cloudID(b, "b1")
        try env.put(a, assets: [("a1", fp(1)), ("a1copy", fp(1))])
        #expect(try env.cloudID(a, "a1") == r1)
        let r2 = try env.cloudID(a, "a1copy")
        #expect(r2 != r1)
        let j = try env.journal(a)
        try env.entry(a, j.journalID, "e", locals: ["a1copy"])
        // On B, R2 resolves by content to b1 (linked to R1, so answered, not relinked).
        #expect(try env.service.journals.journal(j.journalID, device: b).entries[0].photos.map(\.result) == [.found("b1")])
        let after = try env.select(b, j.journalID, "e", ["b1"])
        #expect(clouds(after) == [r2])
        #expect(try env.link(b, "b1")?.cloudIdentifier == r1)
    }

    @Test(arguments: TestEngine.available) func photosThatDoNotResolveHereAreKeptAfterThePickedOnes(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        try env.put(a, assets: [("a1", fp(1)), ("a2", fp(2)), ("a3", fp(3)), ("a4", fp(4))])
        try env.put(b, assets: [("b2", fp(2)), ("b4", fp(4)), ("b5", fp(5))])
        let j = try env.journal(a)
        let written = try env.entry(a, j.journalID, "e", locals: ["a1", "a2", "a3", "a4"])
        let c = clouds(written)
        // B saw b2 and b4 preselected; the person keeps b4, drops b2, adds b5.
        let after = try env.select(b, j.journalID, "e", ["b5", "b4"])
        #expect(clouds(after) == [try env.cloudID(b, "b5"), c[3], c[0], c[2]])
        #expect(after.photos.map(\.result) == [.found("b5"), .found("b4"), .error(.identifierNotFound(limitedLibrary: false)), .error(.identifierNotFound(limitedLibrary: false))])
        // An empty pick drops every photo B could show, and still keeps what only A holds.
        #expect(clouds(try env.select(b, j.journalID, "e", [])) == [c[0], c[2]])
        // Back on A, the photos B could not see are still there.
        #expect(try env.service.journals.journal(j.journalID, device: a).entries[0].photos.map(\.result) == [.found("a1"), .found("a3")])
    }

    @Test(arguments: TestEngine.available) func anAmbiguousPhotoWhoseCandidateIsPickedKeepsItsCloudIdentifierThere(_ engine: TestEngine) throws {
        let (env, b, j, c) = try Self.ambiguousOnB(engine)
        #expect(try env.service.journals.journal(j.journalID, device: b).entries[0].photos[0].result == .error(.multipleIdentifiersFound(localIdentifiers: ["dup1", "dup2"])))
        // The person picks dup2 (one of the candidates) and b3: the ambiguous photo keeps its identifier,
        // no second identifier for dup2 enters, b2 (preselected, not picked) is dropped.
        let after = try env.select(b, j.journalID, "e", ["dup2", "b3"])
        #expect(clouds(after) == [c[0], try env.cloudID(b, "b3")])
        // The choice is remembered: the record now links to dup2 on B, so it resolves there.
        #expect(after.photos[0].result == .found("dup2"))
        #expect(try env.link(b, "dup2")?.cloudIdentifier == c[0])
        #expect(try env.link(b, "dup1") == nil)
    }

    @Test(arguments: TestEngine.available) func noSecondCloudIdentifierForAPickedObjectEntersTheEntry(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        // B maps b1 first (record R1). A holds two copies: a1 links to R1, a1copy gets R2.
        try env.put(b, assets: [("b1", fp(1)), ("b1copy", fp(1))])
        let r1 = try env.cloudID(b, "b1")
        try env.put(a, assets: [("a1", fp(1)), ("a1copy", fp(1))])
        #expect(try env.cloudID(a, "a1") == r1)
        let r2 = try env.cloudID(a, "a1copy")
        let j = try env.journal(a)
        try env.entry(a, j.journalID, "e", locals: ["a1", "a1copy"])
        // On B: R1 resolves to b1; R2 is ambiguous between b1 and b1copy.
        #expect(try env.service.journals.journal(j.journalID, device: b).entries[0].photos.map(\.result) == [
            .found("b1"), .error(.multipleIdentifiersFound(localIdentifiers: ["b1", "b1copy"])),
        ])
        // Picking b1 alone: R1 stands for it; R2, resolved to b1 too, does not stay as a second identifier.
        #expect(clouds(try env.select(b, j.journalID, "e", ["b1"])) == [r1])
        // Picking both: R2 takes the other candidate, and that choice becomes its link on B.
        try env.entry(a, j.journalID, "e", locals: ["a1", "a1copy"])
        let both = try env.select(b, j.journalID, "e", ["b1", "b1copy"])
        #expect(clouds(both) == [r1, r2])
        #expect(both.photos.map(\.result) == [.found("b1"), .found("b1copy")])
    }

    @Test(arguments: TestEngine.available) func anAmbiguousPhotoNoneOfWhoseCandidatesIsPickedIsKeptLikeAnUnresolvedOne(_ engine: TestEngine) throws {
        let (env, b, j, c) = try Self.ambiguousOnB(engine)
        let after = try env.select(b, j.journalID, "e", ["b3", "b2"])
        #expect(clouds(after) == [try env.cloudID(b, "b3"), c[1], c[0]])
        #expect(after.photos[2].result == .error(.multipleIdentifiersFound(localIdentifiers: ["dup1", "dup2"])))
    }

    @Test(arguments: TestEngine.available) func cancelledChangesNothing(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        try env.put(d, assets: [("p1", fp(1)), ("p2", fp(2))])
        let j = try env.journal(d)
        let before = try env.entry(d, j.journalID, "e", text: "t", locals: ["p1"])
        let token = try env.service.journals.currentJournalChangeToken(device: d)
        let after = try env.select(d, j.journalID, "e", ["p2"], cancelled: true)
        #expect(after == before)
        #expect(try env.service.journals.currentJournalChangeToken(device: d) == token)
        #expect(try env.link(d, "p2") == nil)
    }

    @Test(arguments: TestEngine.available) func selectionErrors(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        try env.put(d, assets: [("p1", fp(1)), ("p2", fp(2))])
        let j = try env.journal(d)
        let before = try env.entry(d, j.journalID, "e", locals: ["p1"])
        // Not in the library: 422 naming it, nothing changes (p2's new record rolled back).
        do {
            _ = try env.select(d, j.journalID, "e", ["p2", "ghost"])
            Issue.record("expected 422")
        } catch let error as DomainError {
            guard case .unprocessable(_, let details) = error else { Issue.record("got \(error)"); return }
            #expect(details == [DetailField("localIdentifiers", .array([.object([
                DetailField("index", .int(1)), DetailField("localIdentifier", .string("ghost")),
                DetailField("error", ItemError.identifierNotFound(limitedLibrary: false).detailValue)])]))])
        }
        #expect(try env.service.journals.journal(j.journalID, device: d).entries == [before])
        #expect(try env.link(d, "p2") == nil)
        // A selection edits an entry: it never creates one.
        expectError(.notFound(message: "No such entry.")) { try env.select(d, j.journalID, "nope", ["p1"]) }
        expectError(.notFound(message: "No such journal.")) { try env.select(d, "nope", "e", ["p1"]) }
        expectErrorNamed("badRequest") { try env.select(d, j.journalID, "e", ["p1", "p1"]) }
        expectErrorNamed("badRequest") { try env.select(d, j.journalID, "e", [""]) }
        // If-Match checks the entry's version.
        expectError(.versionMismatch(currentVersion: before.version)) { try env.select(d, j.journalID, "e", ["p2"], ifMatch: .versions(["0"])) }
        #expect(clouds(try env.select(d, j.journalID, "e", ["p2"], ifMatch: .versions([before.version]))) == [try env.cloudID(d, "p2")])
    }
}

@Suite struct JournalChangeFeedTests {
    @Test(arguments: TestEngine.available) func everyJournalWriteIsOneChangeInOrder(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        try env.put(d, assets: [("p1", fp(1))])
        let t0 = try env.service.journals.currentJournalChangeToken(device: d)
        #expect(try env.service.journals.journalChanges(since: t0, limit: nil, device: d) == JournalChangePage(changes: [], changeToken: t0, hasMore: false))
        let j = try env.journal(d)
        let jid = j.journalID
        _ = try env.service.journals.renameJournal(jid, title: "Renamed", ifMatch: nil, device: d)
        _ = try env.service.journals.renameJournal(jid, title: "Renamed", ifMatch: nil, device: d)   // unchanged: no change
        try env.entry(d, jid, "e1", locals: ["p1"])
        try env.entry(d, jid, "e1", locals: ["p1"])   // unchanged
        try env.entry(d, jid, "e1", text: "edited", locals: ["p1"])
        try env.entry(d, jid, "e2", locals: [])
        _ = try env.select(d, jid, "e2", ["p1"])
        try env.service.journals.deleteEntry(journalID: jid, entryID: "e2", ifMatch: nil, device: d)
        let other = try env.journal(d, "Other")
        try env.entry(d, other.journalID, "x/y", locals: [])
        try env.service.journals.deleteJournal(other.journalID, ifMatch: nil, device: d)

        let page = try env.service.journals.journalChanges(since: t0, limit: nil, device: d)
        typealias L = JournalChangeLists
        #expect(page.changes.map(\.details) == [
            JournalChangeDetails(journals: L(inserted: [jid])),
            JournalChangeDetails(journals: L(updated: [jid])),
            JournalChangeDetails(journals: L(updated: [jid]), entries: L(inserted: [jid + "/e1"])),
            JournalChangeDetails(journals: L(updated: [jid]), entries: L(updated: [jid + "/e1"])),
            JournalChangeDetails(journals: L(updated: [jid]), entries: L(inserted: [jid + "/e2"])),
            JournalChangeDetails(journals: L(updated: [jid]), entries: L(updated: [jid + "/e2"])),
            JournalChangeDetails(journals: L(updated: [jid]), entries: L(deleted: [jid + "/e2"])),
            JournalChangeDetails(journals: L(inserted: [other.journalID])),
            JournalChangeDetails(journals: L(updated: [other.journalID]), entries: L(inserted: [other.journalID + "/x/y"])),
            // Deleting a journal deletes its entries: both are listed.
            JournalChangeDetails(journals: L(deleted: [other.journalID]), entries: L(deleted: [other.journalID + "/x/y"])),
        ])
        #expect(page.changeToken == page.changes.last?.changeToken && !page.hasMore)
        #expect(try env.service.journals.currentJournalChangeToken(device: d) == page.changeToken)
        #expect(Set(page.changes.map(\.changeToken)).count == page.changes.count)

        // Paging: strictly after since, at most limit, hasMore.
        var since = t0
        var seen: [JournalChange] = []
        while true {
            let p = try env.service.journals.journalChanges(since: since, limit: 3, device: d)
            seen += p.changes
            since = p.changeToken
            if !p.hasMore { break }
            #expect(p.changes.count == 3)
        }
        #expect(seen == page.changes)
        expectErrorNamed("badRequest") { try env.service.journals.journalChanges(since: t0, limit: 0, device: d) }
        expectErrorNamed("badRequest") { try env.service.journals.journalChanges(since: t0, limit: 10_001, device: d) }
    }

    @Test(arguments: TestEngine.available) func journalTokensAreTheAccountsAndNoOtherScopes(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        _ = try env.journal(a)
        let ta = try env.service.journals.currentJournalChangeToken(device: a)
        // Every device of the account shares the account's feed.
        #expect(try env.service.journals.currentJournalChangeToken(device: b) == ta)
        let other = try env.service.accounts.createAccount(name: "Other")
        let o = try env.device("o", accountID: other.accountID)
        let libraryToken = try env.service.history.currentChangeToken(device: a)
        for bad in ["", "garbage", String(ta.dropLast()) + (ta.hasSuffix("A") ? "B" : "A"), try env.service.journals.currentJournalChangeToken(device: o), libraryToken] {
            expectError(.invalidChangeToken) { try env.service.journals.journalChanges(since: bad, limit: nil, device: a) }
        }
        expectError(.invalidChangeToken) { try env.service.journals.journalChanges(since: ta, limit: nil, device: o) }
        // And a journal token is no library token.
        expectError(.invalidChangeToken) { try env.service.history.changes(since: ta, limit: nil, device: a) }
    }

    @Test(arguments: TestEngine.available) func journalTokensExpireByCountAndAge(_ engine: TestEngine) throws {
        var config = DomainConfiguration()
        config.historyMaxChanges = 3
        config.historyMaxAge = 100
        let env = try TestEnv(engine, configuration: config)
        let d = try env.device()
        let t0 = try env.service.journals.currentJournalChangeToken(device: d)
        var tokens: [String] = []
        for i in 0..<5 {
            _ = try env.journal(d, "j\(i)")
            tokens.append(try env.service.journals.currentJournalChangeToken(device: d))
        }
        expectError(.persistentChangeTokenExpired) { try env.service.journals.journalChanges(since: t0, limit: nil, device: d) }
        expectError(.persistentChangeTokenExpired) { try env.service.journals.journalChanges(since: tokens[0], limit: nil, device: d) }
        #expect(try env.service.journals.journalChanges(since: tokens[1], limit: nil, device: d).changes.count == 3)
        // By age: everything is older than 100 s now, so only the newest token stays valid.
        env.clock.advance(101)
        expectError(.persistentChangeTokenExpired) { try env.service.journals.journalChanges(since: tokens[3], limit: nil, device: d) }
        #expect(try env.service.journals.journalChanges(since: tokens[4], limit: nil, device: d).changes.isEmpty)
    }
}
