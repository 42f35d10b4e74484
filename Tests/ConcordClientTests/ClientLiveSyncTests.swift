import ConcordApp
import ConcordObservability
import Foundation
import Synchronization
import Testing

@testable import ConcordClient

/// A server over one SQLite file that can be stopped and started again on the same port.
final class RestartableServer: Sendable {
    let directory: URL
    private let running = Mutex<RunningApp?>(nil)
    private let boundPort = Mutex(0)

    init() throws {
        self.directory = FileManager.default.temporaryDirectory.appendingPathComponent("concord-client-live-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        try self.start()
    }

    deinit {
        self.stop()
        try? FileManager.default.removeItem(at: self.directory)
    }

    func start() throws {
        let c = TestServer.configuration(directory: self.directory, port: self.boundPort.withLock { $0 })
        let app = try startApp(c, sink: LogSink(flushInterval: 0, output: { _ in }))
        self.boundPort.withLock { $0 = app.port }
        self.running.withLock { $0 = app }
    }

    func stop() {
        self.running.withLock { $0.take() }?.shutdown()
    }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(self.boundPort.withLock { $0 })")! }

    func client(token: String?) -> ConcordClient {
        ConcordClient(baseURL: self.baseURL, token: token,
                      configuration: ConcordClient.Configuration(retryPolicy: RetryPolicy(maxAttempts: 2, initialDelay: 0.01, maxDelay: 0.05), timeout: 5))
    }

    /// An account with a phone and a tablet: their clients.
    func phoneAndTablet() async throws -> (phone: ConcordClient, tablet: ConcordClient) {
        let admin = self.client(token: adminToken)
        let account = admin.withToken(try await admin.createAccount(name: "Live").accountToken)
        return (account.withToken(try await account.createDevice(name: "Phone").deviceToken),
                account.withToken(try await account.createDevice(name: "Tablet").deviceToken))
    }
}

/// What a stream yielded, collected on its own task.
final class Collected<Element: Sendable>: Sendable {
    private final class Box: Sendable {
        let items = Mutex<[Element]>([])
        let failure = Mutex<(any Error)?>(nil)
    }
    private let box = Box()
    let task: Task<Void, Never>

    init(_ stream: AsyncThrowingStream<Element, any Error>) {
        let box = self.box
        self.task = Task {
            do {
                for try await item in stream { box.items.withLock { $0.append(item) } }
            } catch {
                box.failure.withLock { $0 = error }
            }
        }
    }

    var count: Int { self.box.items.withLock { $0.count } }
    var all: [Element] { self.box.items.withLock { $0 } }

    /// Waits (up to `seconds`) until `count` items arrived; throws what ended the stream early.
    func wait(for count: Int, seconds: Double = 10) async throws -> [Element] {
        let deadline = Date().addingTimeInterval(seconds)
        while self.count < count, Date() < deadline {
            if let error = self.box.failure.withLock({ $0 }) { throw error }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        return self.all
    }
}

@Suite(.serialized) struct ClientLiveSyncTests {
    static let fast = ConcordClient.LiveSyncOptions(wait: 2, initialDelay: 0.05, maxDelay: 0.2)

    @Test func theJournalStreamSeesEveryChangeExactlyOnceAcrossAServerRestart() async throws {
        let server = try RestartableServer()
        let (phone, tablet) = try await server.phoneAndTablet()
        let stream = Collected(phone.journalChanges(since: try await phone.currentJournalChangeToken(), options: Self.fast))
        defer { stream.task.cancel() }
        var created: [String] = []
        for n in 0..<3 { created.append(try await tablet.createJournal(title: "Before \(n)").journalID) }
        _ = try await stream.wait(for: 3)
        server.stop()
        try await Task.sleep(nanoseconds: 300_000_000)   // the stream is reconnecting meanwhile
        try server.start()
        for n in 0..<3 { created.append(try await tablet.createJournal(title: "After \(n)").journalID) }
        let changes = try await stream.wait(for: 6)
        try await Task.sleep(nanoseconds: 300_000_000)    // nothing more may come
        #expect(stream.count == 6)
        #expect(changes.flatMap { $0.journals?.inserted ?? [] } == created)
        #expect(Set(changes.map(\.changeToken)).count == 6)
    }

    @Test func theLibraryStreamYieldsTheDevicesChangesAsTheyHappen() async throws {
        let server = try RestartableServer()
        let (phone, _) = try await server.phoneAndTablet()
        let stream = Collected(phone.changes(since: try await phone.currentChangeToken(), options: Self.fast))
        defer { stream.task.cancel() }
        for n in 0..<3 {
            try await phone.applyChanges(LibraryChanges(assets: .init(upsert: assets("live-\(n)", 0..<2))))
        }
        let changes = try await stream.wait(for: 3)
        #expect(changes.count == 3)
        #expect(try changes.map { try $0.changeDetails(for: .asset).insertedLocalIdentifiers.count } == [2, 2, 2])
    }

    @Test func anExpiredOrInvalidTokenEndsTheStreamWithItsError() async throws {
        let server = try RestartableServer()
        let (phone, _) = try await server.phoneAndTablet()
        let stream = Collected(phone.journalChanges(since: ChangeToken(rawValue: "not-a-token"), options: Self.fast))
        await stream.task.value
        await #expect(throws: ConcordError.self) { _ = try await stream.wait(for: 1, seconds: 1) }
    }

    @Test func aPostSentTwiceWithOneIdempotencyKeyIsAppliedOnce() async throws {
        let server = try RestartableServer()
        let (phone, _) = try await server.phoneAndTablet()
        let first = try await ConcordClient.$idempotencyKey.withValue("same") { try await phone.createJournal(title: "Once") }
        let again = try await ConcordClient.$idempotencyKey.withValue("same") { try await phone.createJournal(title: "Once") }
        #expect(again.journalID == first.journalID)
        #expect(try await phone.listJournals().count == 1)
        // Without a key of its own, each call gets a fresh one.
        _ = try await phone.createJournal(title: "Twice")
        _ = try await phone.createJournal(title: "Twice")
        #expect(try await phone.listJournals().count == 3)
    }

    @Test func theOutboxKeepsOfflineWritesSendsThemInOrderAndReportsConflicts() async throws {
        let server = try RestartableServer()
        let (phone, _) = try await server.phoneAndTablet()
        let journal = try await phone.createJournal(title: "Trip")
        let stateFile = server.directory.appendingPathComponent("outbox.json")
        let rejections = Mutex<[ConcordSyncEngine.Rejection]>([])

        server.stop()
        let offline = try ConcordSyncEngine(client: phone, stateFile: stateFile)
        try await offline.enqueue(.putEntry(journalID: journal.journalID, entryID: "day-1", text: "Hello", photos: [], ifMatch: nil))
        // Stale once the entry above lands: a conflict to report.
        try await offline.enqueue(.renameJournal(journalID: journal.journalID, title: "Renamed", ifMatch: journal.version))
        try await offline.enqueue(.createJournal(title: "Second"))
        let whileDown = try await offline.flush()
        #expect(whileDown == ConcordSyncEngine.FlushResult(sent: 0, rejected: 0, remaining: 3))

        // Another launch of the app reads the same queue back.
        let relaunched = try ConcordSyncEngine(client: phone, stateFile: stateFile) { rejection in
            rejections.withLock { $0.append(rejection) }
        }
        #expect(await relaunched.pending.map(\.id) == offline.pending.map(\.id))

        try server.start()
        let result = try await relaunched.flush()
        #expect(result == ConcordSyncEngine.FlushResult(sent: 2, rejected: 1, remaining: 0))
        let now = try await phone.journal(journal.journalID)
        #expect(now.title == "Trip")
        #expect(now.entries.map(\.entryID) == ["day-1"])
        let conflict = try #require(rejections.withLock { $0.first })
        #expect(conflict.isConflict)
        #expect(conflict.currentVersion == now.version)
        #expect(try await phone.listJournals().map(\.title).sorted() == ["Second", "Trip"])
        // The queue is empty on disk too.
        #expect(try await ConcordSyncEngine(client: phone, stateFile: stateFile).pending.isEmpty)
    }
}
