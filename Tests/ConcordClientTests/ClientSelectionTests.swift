import ConcordClient
import ConcordHTTP
import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The picker's modes through the client: `addToEntry` (the limited-library picker's result) and a
/// continuous picker's `SelectionSession`.

private let quick = ConcordClient.LiveSyncOptions(initialDelay: 0.01, maxDelay: 0.05)

/// Counts the selection requests a client sends (each retry again).
private final class SelectionRequests: Sendable {
    let count = Mutex(0)
    func observe(_ request: URLRequest) {
        if request.httpMethod == "POST", request.url?.path.hasSuffix("/selection") == true { self.count.withLock { $0 += 1 } }
    }
}

private func body(_ request: HTTPRequest) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
}

@Test func addToEntryAndSessionSelectionsFollowTheContract() async throws {
    let entry = #"{"entryID":"e1","text":"","version":"2","photos":[]}"#
    let applied = #"{"entryID":"e1","text":"","version":"3","photos":[],"applied":true}"#
    let server = try ScriptedServer([
        reply(200, entry),
        unavailable(retryAfter: nil),   // the session's first send: retried with its number
        reply(200, applied),
    ])
    let client = server.client(.never)

    let added = try await client.addToEntry(journalID: "j1", entryID: "e1", localIdentifiers: ["L3", "L1"], ifMatch: "1")
    #expect(added.version == "2")

    let session = client.selectionSession(journalID: "j1", entryID: "e1", retry: quick)
    session.update(["L1", "L2"])
    let last = try await session.finish()
    #expect(last?.version == "3" && session.entry == last && session.lastError == nil && session.requestsSent == 2)

    let r = server.responder.requests
    try #require(r.count == 3)
    #expect(r.allSatisfy { $0.method == "POST" && $0.target == "/v1/journals/j1/entries/e1/selection" })
    let add = try body(r[0])
    #expect(add["mode"] as? String == "add" && add["cancelled"] as? Bool == false && add["localIdentifiers"] as? [String] == ["L3", "L1"])
    #expect(add["session"] == nil && add["sequence"] == nil && r[0].headers[first: "If-Match"] == "\"1\"")
    let (first, retried) = (try body(r[1]), try body(r[2]))
    #expect(first["session"] as? String == session.sessionID && retried["session"] as? String == session.sessionID)
    #expect(first["sequence"] as? Int == 0 && retried["sequence"] as? Int == 0)
    #expect(first["mode"] as? String == "replace" && retried["localIdentifiers"] as? [String] == ["L1", "L2"])
    #expect(r[1].headers[first: "If-Match"] == nil)
}

@Test func twoHundredContinuousUpdatesLeaveTheLastSelectionWithFewerRequests() async throws {
    let server = try TestServer()
    let requests = SelectionRequests()
    let phone = try await server.account(devices: ["Phone"]) { $0.onRequest = { requests.observe($0) } }.devices[0]
    let (p, journal) = try await assetsAndJournal(phone, 20, title: "Picks")
    try await phone.putEntry(journalID: journal.journalID, entryID: "day-1", text: "", photos: [])

    // The picker's whole selection at change i: up to 7 photos, in a changing order.
    func selection(_ i: Int) -> [String] { (0...(i % 7)).map { p[(i + $0) % 20] } }
    let told = Mutex<[JournalEntry]>([])
    let session = phone.selectionSession(journalID: journal.journalID, entryID: "day-1", retry: quick) { entry in told.withLock { $0.append(entry) } }
    // As a picker reports them: in bursts, with a pause now and then that lets a request go out
    // while the next updates arrive.
    for i in 0..<200 {
        session.update(selection(i))
        if i % 20 == 19 { try await Task.sleep(for: .milliseconds(5)) }
    }
    let entry = try #require(try await session.finish())

    #expect(entry.photos.map(\.localIdentifier) == selection(199))
    #expect(try await phone.journal(journal.journalID).entries.first?.photos.map(\.localIdentifier) == selection(199))
    #expect(told.withLock { $0.last } == entry)
    let sent = requests.count.withLock { $0 }
    #expect(sent < 200 && sent >= 1 && sent == session.requestsSent)
    print("200 continuous updates: \(sent) selection requests sent")
}

@Test func theLatestSelectionIsKeptAndSentOnceTheServerIsBack() async throws {
    let server = try RestartableServer()
    let (phone, _) = try await server.phoneAndTablet()
    let (p, journal) = try await assetsAndJournal(phone, 3, title: "Offline")
    try await phone.putEntry(journalID: journal.journalID, entryID: "e", text: "", photos: [])

    let session = phone.selectionSession(journalID: journal.journalID, entryID: "e", retry: quick)
    server.stop()
    session.update([p[0]])
    session.update([p[2], p[1]])
    // Wait until a send has failed and been tried again (no bound on how long that takes).
    while session.requestsSent < 2 { try await Task.sleep(nanoseconds: 10_000_000) }
    try server.start()
    let entry = try #require(try await session.finish())
    #expect(entry.photos.map(\.localIdentifier) == [p[2], p[1]])
    #expect(try await phone.journal(journal.journalID).entries.first?.photos.map(\.localIdentifier) == [p[2], p[1]])
}

@Test func refusedSelectionsAreReportedAndANewerOneStillLands() async throws {
    let server = try TestServer()
    let phone = try await server.account(devices: ["Phone"]).devices[0]
    let (p, journal) = try await assetsAndJournal(phone, 2, title: "T")
    try await phone.putEntry(journalID: journal.journalID, entryID: "e", text: "", photos: [])

    let session = phone.selectionSession(journalID: journal.journalID, entryID: "e", retry: quick)
    session.update(["not-in-the-library"])
    let refused = await thrown(ConcordError.self) { _ = try await session.finish() }
    #expect(refused?.status == 422)
    session.update([p[1]])
    #expect(try await session.finish()?.photos.map(\.localIdentifier) == [p[1]])
    #expect(session.lastError == nil)
}

/// `"mode": "add"` on a real server: appended after the entry's photos, nothing dropped or
/// reordered, one given twice taken once, an empty list changes nothing.
@Test func addToEntryAppendsWhatIsNotThereYet() async throws {
    let server = try TestServer()
    let phone = try await server.account(devices: ["Phone"]).devices[0]
    let (p, journal) = try await assetsAndJournal(phone, 4, title: "Limited")
    try await phone.putEntry(journalID: journal.journalID, entryID: "e", text: "", photos: [.local(p[1]), .local(p[0])])

    let added = try await phone.addToEntry(journalID: journal.journalID, entryID: "e", localIdentifiers: [p[3], p[0], p[3], p[2]])
    #expect(added.photos.map(\.localIdentifier) == [p[1], p[0], p[3], p[2]])
    let unchanged = try await phone.addToEntry(journalID: journal.journalID, entryID: "e", localIdentifiers: [])
    #expect(unchanged.photos == added.photos)
}

/// Gives `phone` the assets `P-0 ..< P-count` and a new journal titled `title`: the assets' local
/// identifiers, and the journal.
private func assetsAndJournal(_ phone: ConcordClient, _ count: Int, title: String) async throws -> (p: [String], journal: Journal) {
    try await phone.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("P", 0..<count))))
    return ((0..<count).map { assetID($0, device: "P") }, try await phone.createJournal(title: title))
}
