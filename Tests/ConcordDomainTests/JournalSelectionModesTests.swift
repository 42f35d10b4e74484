@testable import ConcordDomain
import ConcordTestSupport
import ConcordStorage
import Foundation
import Testing

extension TestEnv {
    /// A selection in `mode`, optionally a step of a picker session.
    func select(_ device: DeviceRef, _ journalID: String, _ entryID: String, _ given: [String], mode: SelectionMode,
                session: (String, Int64)? = nil, cancelled: Bool = false, ifMatch: IfMatch? = nil) throws -> SelectionOutcome {
        let step = try session.map { try PickerSessionStep(session: $0.0, sequence: $0.1) }
        return try self.service.journals.applySelection(journalID: journalID, entryID: entryID, cancelled: cancelled, localIdentifiers: given,
                                                        mode: mode, session: step, ifMatch: ifMatch, device: device)
    }

    /// The sequence stored for a picker session, forgotten or not (nil when its row is gone).
    func storedSequence(_ journalID: String, _ entryID: String, _ session: String) throws -> Int64? {
        try self.store.read(account: self.account.accountID) { tx in
            try tx.pickerSessionSequence(journalID: journalID, entryID: entryID, session: session, usedAfter: -Double.greatestFiniteMagnitude)
        }
    }
}

/// One selection on device B of an entry written on device A. B sees the entry's photos as:
/// `c1` ambiguous (B holds its content twice, `dup1` and `dup2`), `c2` resolved (to `b2`), `c3`
/// unresolved (only A holds it). `b4` and `b5` are B's objects not in the entry; `ghost` is in no library.
struct SelectionCase: Sendable, CustomTestStringConvertible {
    let name: String
    let mode: SelectionMode
    let given: [String]
    /// The entry's photos afterwards: `c1`…`c3` (the entry's), or a local identifier of B (its cloud
    /// identifier on B); nil when the selection fails.
    let expected: [String]?
    /// The error's name when it fails (nothing changes then).
    var error: String? = nil
    /// B's objects the selection links to the ambiguous photo's record `c1`.
    var linkedToC1: [String] = []

    var testDescription: String { "\(self.mode.rawValue): \(self.name)" }

    static let all: [SelectionCase] = [
        // replace: picked first in picked order, then what B cannot show (c1 none of whose candidates is picked, c3).
        SelectionCase(name: "resolved kept, new mapped", mode: .replace, given: ["b4", "b2"], expected: ["b4", "c2", "c1", "c3"]),
        SelectionCase(name: "resolved dropped, unresolved kept", mode: .replace, given: [], expected: ["c1", "c3"]),
        SelectionCase(name: "unresolved kept after the picked", mode: .replace, given: ["b5"], expected: ["b5", "c1", "c3"]),
        SelectionCase(name: "ambiguous candidate picked", mode: .replace, given: ["dup2", "b2"], expected: ["c1", "c2", "c3"], linkedToC1: ["dup2"]),
        SelectionCase(name: "duplicate refused", mode: .replace, given: ["b2", "b2"], expected: nil, error: "badRequest"),
        SelectionCase(name: "unmappable refused", mode: .replace, given: ["b4", "ghost"], expected: nil, error: "unprocessable"),
        // add: nothing dropped or reordered; what does not stand yet appended in the given order.
        SelectionCase(name: "resolved stands", mode: .add, given: ["b2"], expected: ["c1", "c2", "c3"]),
        SelectionCase(name: "new appended in given order", mode: .add, given: ["b5", "b2", "b4"], expected: ["c1", "c2", "c3", "b5", "b4"]),
        SelectionCase(name: "unresolved untouched", mode: .add, given: ["b4"], expected: ["c1", "c2", "c3", "b4"]),
        SelectionCase(name: "ambiguous candidate stands", mode: .add, given: ["dup1"], expected: ["c1", "c2", "c3"], linkedToC1: ["dup1"]),
        SelectionCase(name: "duplicate taken once", mode: .add, given: ["b4", "b2", "b4"], expected: ["c1", "c2", "c3", "b4"]),
        SelectionCase(name: "empty changes nothing", mode: .add, given: [], expected: ["c1", "c2", "c3"]),
        SelectionCase(name: "unmappable refused", mode: .add, given: ["b4", "ghost", "ghost"], expected: nil, error: "unprocessable"),
    ]
}

@Suite struct JournalSelectionModesTests {
    /// The entry of `SelectionCase`: written on A, selected on B.
    static func fixture(_ engine: TestEngine) throws -> (env: TestEnv, a: DeviceRef, b: DeviceRef, journalID: String, entry: JournalEntryView) {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        try env.put(a, assets: [("a1", fp(1)), ("a2", fp(2)), ("a3", fp(3))])
        try env.put(b, assets: [("dup1", fp(1)), ("dup2", fp(1)), ("b2", fp(2)), ("b4", fp(4)), ("b5", fp(5))])
        let j = try env.journal(a)
        let entry = try env.entry(a, j.journalID, "e", text: "day", locals: ["a1", "a2", "a3"])
        return (env, a, b, j.journalID, entry)
    }

    @Test(arguments: TestEngine.available, SelectionCase.all)
    func selectionRules(_ engine: TestEngine, _ c: SelectionCase) throws {
        let (env, _, b, jid, before) = try Self.fixture(engine)
        let entryClouds = Dictionary(uniqueKeysWithValues: zip(["c1", "c2", "c3"], clouds(before)))
        #expect(try env.service.journals.entry(journalID: jid, entryID: "e", device: b).photos.map(\.result) == [
            .error(.multipleIdentifiersFound(localIdentifiers: ["dup1", "dup2"])), .found("b2"), .error(.identifierNotFound(limitedLibrary: false)),
        ])
        let token = try env.service.journals.currentJournalChangeToken(device: b)
        let after: JournalEntryView
        do {
            after = try env.select(b, jid, "e", c.given, mode: c.mode).entry
        } catch let error as DomainError {
            #expect(error.name == c.error, "\(error)")
            // Nothing changed: the entry, the feed, and no record or link made for the objects given.
            #expect(clouds(try env.service.journals.entry(journalID: jid, entryID: "e", device: b)) == clouds(before))
            #expect(try env.service.journals.currentJournalChangeToken(device: b) == token)
            for local in c.given where local != "b2" { #expect(try env.link(b, local) == nil) }   // b2 was linked by the read above
            return
        }
        let expected = try #require(c.expected, "expected \(c.error ?? "") and got \(clouds(after))")
        #expect(clouds(after) == (try expected.map { try entryClouds[$0] ?? env.cloudID(b, $0) }))
        #expect(try env.service.journals.entry(journalID: jid, entryID: "e", device: b) == after)
        for local in c.linkedToC1 { #expect(try env.link(b, local)?.cloudIdentifier == entryClouds["c1"]) }
        // A selection that changes the photos is one journal change; one that does not, none.
        let changes = try env.service.journals.journalChanges(since: token, limit: nil, device: b).changes
        if clouds(after) == clouds(before) {
            #expect(after.version == before.version)
            #expect(changes.isEmpty)
        } else {
            #expect(after.version != before.version)
            #expect(changes.map(\.details) == [JournalChangeDetails(journals: JournalChangeLists(updated: [jid]), entries: JournalChangeLists(updated: [jid + "/e"]))])
        }
    }

    @Test(arguments: TestEngine.available) func theAnswerHasAppliedOnlyForASessionsSelection(_ engine: TestEngine) throws {
        let (env, _, b, jid, _) = try Self.fixture(engine)
        #expect(try env.select(b, jid, "e", ["b2"], mode: .replace).applied == nil)
        #expect(try env.select(b, jid, "e", ["b2"], mode: .add).applied == nil)
        #expect(try env.select(b, jid, "e", ["b2"], mode: .add, session: ("s", 0)).applied == true)
        #expect(try env.select(b, jid, "e", ["b2"], mode: .replace, session: ("s", 1)).applied == true)
        #expect(try env.select(b, jid, "e", [], mode: .replace, session: ("s", 2), cancelled: true).applied == false)
    }

    @Test(arguments: TestEngine.available) func aStepNotAboveTheSessionsHighestChangesNothing(_ engine: TestEngine) throws {
        let (env, _, b, jid, _) = try Self.fixture(engine)
        let five = try env.select(b, jid, "e", ["b4", "b2"], mode: .replace, session: ("picker-1", 5))
        #expect(five.applied == true)
        let token = try env.service.journals.currentJournalChangeToken(device: b)
        // Overtaken steps (lower, and the same again): the entry as it stands, nothing written.
        for sequence: Int64 in [3, 5, 0] {
            let stale = try env.select(b, jid, "e", ["b5"], mode: .replace, session: ("picker-1", sequence))
            #expect(stale == SelectionOutcome(entry: five.entry, applied: false))
            let staleAdd = try env.select(b, jid, "e", ["b5"], mode: .add, session: ("picker-1", sequence))
            #expect(staleAdd == SelectionOutcome(entry: five.entry, applied: false))
        }
        #expect(try env.service.journals.currentJournalChangeToken(device: b) == token)
        #expect(try env.link(b, "b5") == nil)
        #expect(try env.storedSequence(jid, "e", "picker-1") == 5)
        // Another session, or the same session on another entry, has its own sequence.
        #expect(try env.select(b, jid, "e", ["b5"], mode: .add, session: ("picker-2", 1)).applied == true)
        try env.entry(b, jid, "other", locals: [])
        #expect(try env.select(b, jid, "other", ["b5"], mode: .add, session: ("picker-1", 1)).applied == true)
        // A later step applies.
        let six = try env.select(b, jid, "e", ["b2"], mode: .replace, session: ("picker-1", 6))
        #expect(six.applied == true)
        #expect(clouds(six.entry).count == 3)   // b2's photo, then c1 and c3, which B cannot show
        #expect(try env.storedSequence(jid, "e", "picker-1") == 6)
    }

    @Test(arguments: TestEngine.available) func cancelledAndRefusedStepsDoNotMoveTheSessionsSequence(_ engine: TestEngine) throws {
        let (env, _, b, jid, before) = try Self.fixture(engine)
        #expect(try env.select(b, jid, "e", ["b2"], mode: .replace, session: ("s", 1)).applied == true)
        let cancelled = try env.select(b, jid, "e", [], mode: .replace, session: ("s", 10), cancelled: true)
        #expect(cancelled.applied == false)
        expectErrorNamed("unprocessable") { try env.select(b, jid, "e", ["ghost"], mode: .add, session: ("s", 11)) }
        #expect(try env.storedSequence(jid, "e", "s") == 1)
        // A session's first step refused: no session kept at all.
        expectErrorNamed("unprocessable") { try env.select(b, jid, "e", ["ghost"], mode: .replace, session: ("fresh", 4)) }
        #expect(try env.storedSequence(jid, "e", "fresh") == nil)
        #expect(try env.select(b, jid, "e", ["b4"], mode: .add, session: ("s", 2)).applied == true)
        // b2's photo and the two B cannot show (from step 1), then b4 (step 2).
        #expect(clouds(try env.service.journals.entry(journalID: jid, entryID: "e", device: b)) == [before.photos[1].cloudIdentifier, before.photos[0].cloudIdentifier,
                                                                                                  before.photos[2].cloudIdentifier, try env.cloudID(b, "b4")])
    }

    @Test(arguments: TestEngine.available) func ifMatchIsCheckedBeforeAStaleStepIsAnswered(_ engine: TestEngine) throws {
        let (env, _, b, jid, _) = try Self.fixture(engine)
        let applied = try env.select(b, jid, "e", ["b2"], mode: .replace, session: ("s", 7))
        expectError(.versionMismatch(currentVersion: applied.entry.version)) {
            try env.select(b, jid, "e", ["b2"], mode: .replace, session: ("s", 3), ifMatch: .versions(["1"]))
        }
        expectError(.versionMismatch(currentVersion: applied.entry.version)) {
            try env.select(b, jid, "e", ["b4"], mode: .add, session: ("s", 8), ifMatch: .versions(["1"]))
        }
        #expect(try env.select(b, jid, "e", ["b2"], mode: .replace, session: ("s", 3), ifMatch: .versions([applied.entry.version])).applied == false)
        let added = try env.select(b, jid, "e", ["b4"], mode: .add, session: ("s", 8), ifMatch: .versions([applied.entry.version]))
        #expect(added.applied == true && added.entry.version != applied.entry.version)
        // A selection edits an entry: a missing one is 404, If-Match or not.
        expectErrorNamed("notFound") { try env.select(b, jid, "nope", [], mode: .add, session: ("s", 9), ifMatch: .versions(["1"])) }
    }

    @Test(arguments: TestEngine.available) func aSessionIsForgottenADayAfterItsLastAppliedStep(_ engine: TestEngine) throws {
        let (env, _, b, jid, _) = try Self.fixture(engine)
        #expect(try env.select(b, jid, "e", ["b2"], mode: .replace, session: ("s", 5)).applied == true)
        env.clock.advance(PickerSessionStep.lifetime - 1)
        #expect(try env.select(b, jid, "e", ["b2"], mode: .replace, session: ("s", 4)).applied == false)
        // A stale step does not keep the session: a day after the last applied one, it is forgotten.
        env.clock.advance(1)
        #expect(try env.select(b, jid, "e", ["b2"], mode: .replace, session: ("s", 4)).applied == true)
        #expect(try env.storedSequence(jid, "e", "s") == 4)
        // Forgotten sessions of the account are deleted by the next applied step of any session.
        try env.entry(b, jid, "other", locals: [])
        #expect(try env.select(b, jid, "other", [], mode: .add, session: ("t", 1)).applied == true)
        env.clock.advance(PickerSessionStep.lifetime)
        #expect(try env.storedSequence(jid, "e", "s") == 4)
        #expect(try env.select(b, jid, "other", [], mode: .add, session: ("t", 2)).applied == true)
        #expect(try env.storedSequence(jid, "e", "s") == nil)
        #expect(try env.storedSequence(jid, "other", "t") == 2)
    }

    @Test(arguments: TestEngine.available) func aSessionGoesWithItsEntryAndJournal(_ engine: TestEngine) throws {
        let (env, a, b, jid, _) = try Self.fixture(engine)
        #expect(try env.select(b, jid, "e", ["b2"], mode: .replace, session: ("s", 5)).applied == true)
        try env.service.journals.deleteEntry(journalID: jid, entryID: "e", ifMatch: nil, device: b)
        #expect(try env.storedSequence(jid, "e", "s") == nil)
        // The entry written again under the same ID starts with no session.
        try env.entry(a, jid, "e", locals: ["a2"])
        #expect(try env.select(b, jid, "e", ["b2"], mode: .replace, session: ("s", 1)).applied == true)
        #expect(try env.storedSequence(jid, "e", "s") == 1)
        try env.service.journals.deleteJournal(jid, ifMatch: nil, device: a)
        #expect(try env.storedSequence(jid, "e", "s") == nil)
    }

    struct StepCase: Sendable, CustomTestStringConvertible {
        let session: String?
        let sequence: Int64?
        /// The field a `badRequest` names; nil when valid.
        let field: String?
        var testDescription: String { "session \(self.session ?? "nil"), sequence \(self.sequence.map(String.init) ?? "nil")" }
    }

    @Test(arguments: [
        StepCase(session: nil, sequence: nil, field: nil),
        StepCase(session: "a", sequence: 0, field: nil),
        StepCase(session: "AZaz09-_", sequence: (1 << 53) - 1, field: nil),
        StepCase(session: String(repeating: "x", count: 64), sequence: 1, field: nil),
        StepCase(session: nil, sequence: 1, field: "session"),
        StepCase(session: "s", sequence: nil, field: "sequence"),
        StepCase(session: "", sequence: 1, field: "session"),
        StepCase(session: String(repeating: "x", count: 65), sequence: 1, field: "session"),
        StepCase(session: "a b", sequence: 1, field: "session"),
        StepCase(session: "a.b", sequence: 1, field: "session"),
        StepCase(session: "é", sequence: 1, field: "session"),
        StepCase(session: "s", sequence: -1, field: "sequence"),
        StepCase(session: "s", sequence: 1 << 53, field: "sequence"),
        StepCase(session: "s", sequence: .max, field: "sequence"),
    ])
    func pickerSessionStepBounds(_ c: StepCase) {
        do {
            let step = try PickerSessionStep.from(session: c.session, sequence: c.sequence)
            #expect(c.field == nil)
            #expect(step?.session == c.session && step?.sequence == c.sequence)
        } catch {
            guard case .badRequest(_, let field) = error else { Issue.record("got \(error)"); return }
            #expect(field == c.field)
        }
    }
}
