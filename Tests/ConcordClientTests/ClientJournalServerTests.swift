import ConcordClient
import Foundation
import Testing

@Test func journalsAcrossDevicesThroughTheClient() async throws {
    let server = try TestServer()
    let (account, devices) = try await server.account(devices: ["Phone", "Tablet"])
    let phone = devices[0], tablet = devices[1]
    try await phone.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("P", 1...3))))
    try await tablet.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("T", 1...2))))
    let p = (1...3).map { assetID($0, device: "P") }, t = (1...2).map { assetID($0, device: "T") }
    let start = try await tablet.currentJournalChangeToken()

    // The phone writes an entry by local identifier; the tablet reads it with its own objects.
    let journal = try await phone.createJournal(title: "Trip")
    #expect(journal.title == "Trip" && journal.entries.isEmpty)
    let entry = try await phone.putEntry(journalID: journal.journalID, entryID: "day-1", text: "Beach", photos: [.local(p[0]), .local(p[2])])
    #expect(entry.photos.map(\.localIdentifier) == [p[0], p[2]])
    let c = entry.photos.map(\.cloudIdentifier)
    #expect(try await phone.cloudIdentifierMappings(forLocalIdentifiers: [p[0]])[p[0]]?.cloudIdentifier == c[0])

    #expect(try await tablet.listJournals().map(\.journalID) == [journal.journalID])
    let onTablet = try await tablet.journal(journal.journalID)
    let photos = try #require(onTablet.entries.first?.photos)
    #expect(photos.map(\.cloudIdentifier) == c)
    #expect(photos[0].localIdentifier == t[0] && photos[1].error?.code == .identifierNotFound)

    // A local identifier that cannot be mapped: 422, nothing stored.
    let unmappable = await thrown(ConcordError.self) {
        try await tablet.putEntry(journalID: journal.journalID, entryID: "day-2", text: "x", photos: [.local("absent")])
    }
    #expect(unmappable?.status == 422 && unmappable?.name == "unprocessable")
    #expect(try await tablet.journal(journal.journalID).entries.map(\.entryID) == ["day-1"])

    // If-Match: a stale version is 412 with the current one, which then works.
    let current = try await tablet.journal(journal.journalID).version
    let stale = await thrown(ConcordError.self) { try await tablet.renameJournal(journal.journalID, title: "Summer", ifMatch: "stale") }
    #expect(stale?.status == 412 && stale?.name == "versionMismatch" && stale?.version == current)
    let renamed = try await tablet.renameJournal(journal.journalID, title: "Summer", ifMatch: current)
    #expect(renamed.title == "Summer" && renamed.version != current)

    // The tablet's picker: picks content 2 then 1; content 3 (phone only) is kept after them.
    let picked = try await tablet.applySelection(journalID: journal.journalID, entryID: "day-1", localIdentifiers: [t[1], t[0]])
    #expect(picked.photos.map(\.localIdentifier) == [t[1], t[0], nil])
    #expect(picked.photos[1].cloudIdentifier == c[0] && picked.photos[2].cloudIdentifier == c[1])
    let cancelled = try await tablet.applySelection(journalID: journal.journalID, entryID: "day-1", localIdentifiers: [], cancelled: true)
    #expect(cancelled.photos == picked.photos)

    // The change feed saw the journal and its entry.
    let changes = try await tablet.fetchJournalChanges(since: start, pageSize: 1)
    #expect(changes.changes.count >= 3)
    #expect(changes.changes.contains { $0.journals?.inserted == [journal.journalID] })
    #expect(changes.changes.contains { $0.entries?.inserted == [journal.journalID + "/day-1"] })
    #expect(changes.changeToken == (try await tablet.currentJournalChangeToken()))

    // Account tokens do not reach journals; deletes.
    let wrongKind = await thrown(ConcordError.self) { _ = try await account.listJournals() }
    #expect(wrongKind?.status == 403)
    try await phone.deleteEntry(journalID: journal.journalID, entryID: "day-1", ifMatch: picked.version)
    try await phone.deleteJournal(journal.journalID)
    #expect(try await tablet.listJournals().isEmpty)
}

/// A journal larger than one answer holds comes in pages; `journal(_:)`
/// follows them and returns the whole journal.
@Test func theClientPutsAPagedJournalTogether() async throws {
    let server = try TestServer { $0.dataBounds.journalAnswerBytes = 1000 }
    let (_, devices) = try await server.account(devices: ["Phone"])
    let phone = devices[0]
    try await phone.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("P", 1...7))))
    let p = (1...7).map { assetID($0, device: "P") }
    let journal = try await phone.createJournal(title: "Long")
    for (entryID, photos) in [("a", p[0..<2]), ("b", p[2..<4]), ("c", p[4..<7])] {
        try await phone.putEntry(journalID: journal.journalID, entryID: entryID, text: entryID, photos: photos.map { .local($0) })
    }
    let whole = try await phone.journal(journal.journalID)
    #expect(whole.entries.map(\.entryID) == ["a", "b", "c"])
    #expect(whole.entries.flatMap(\.photos).map(\.localIdentifier) == p)
    #expect(whole.entryCount == 3)
}
