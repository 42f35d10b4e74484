import ConcordJSON
import ConcordObservability
import Foundation
import Testing

@testable import ConcordApp

/// The mapping index's snapshots through the real server: a clean shutdown saves the
/// loaded account beside the SQLite database (`mappingIndexSnapshots: auto`), the next start on
/// the same database answers its first mapping from it, alike; a start after the account changed
/// loads it from its tables instead.
@Suite struct IndexSnapshotRestartTests {
    @Test func aCleanShutdownSavesTheIndexAndTheNextStartLoadsIt() throws {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("concord.sqlite").path
        let configuration = testServerConfiguration(.sqlite(path: path))
        func serve() throws -> RunningApp { try startApp(configuration, sink: LogSink(flushInterval: 0, output: { _ in })) }
        var app = try serve()
        let world = try MappedPair(port: app.port, count: 30)
        let before = try world.answers(app.port)
        #expect(before.contains(world.phoneIDs[29]))
        app.shutdown()
        #expect(FileManager.default.fileExists(atPath: path + "-index/\(world.accountID).index"))

        app = try serve()
        #expect(try world.answers(app.port) == before)
        #expect(try indexMetric(app.port, "concord_mapping_index_snapshot_loads_total") == 1)
        // A change after the load, then a restart: the snapshot saved at this shutdown is of the
        // new state, and is used again.
        try MappedPair.upsert(app.port, world.tablet, [assetID(99)])
        let after = try world.answers(app.port)
        app.shutdown()
        app = try serve()
        #expect(try world.answers(app.port) == after)
        #expect(try indexMetric(app.port, "concord_mapping_index_snapshot_loads_total") == 1)
        app.shutdown()
    }

    /// `auto` is a cache beside the database: when its directory cannot be made, the server starts
    /// without snapshots and says so; a directory named explicitly must work, or the start fails.
    @Test func aSnapshotDirectoryThatCannotBeMadeIsAWarningUnlessNamed() throws {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("concord.sqlite").path
        #expect(FileManager.default.createFile(atPath: path + "-index", contents: Data("in the way".utf8)))
        var configuration = testServerConfiguration(.sqlite(path: path), quiet: false)
        let lines = LogLines()
        let app = try startApp(configuration, sink: LogSink(flushInterval: 0, output: { lines.append(String(decoding: $0, as: UTF8.self)) }))
        #expect(try rawRequest(port: app.port, "GET", "/health").body == "ok")
        app.shutdown()
        #expect(lines.all.contains { $0.contains("mapping index snapshots off") && $0.contains("\"level\":\"warning\"") }, "\(lines.all)")

        configuration.mappingIndexSnapshots = path + "-index"
        #expect(throws: StartupError.self) { try startApp(configuration, sink: LogSink(flushInterval: 0, output: { _ in })) }
    }

    /// `mappingIndexSnapshotSeconds`: an account that has settled is saved while the server runs,
    /// so a start after a crash (`kill -9`: nothing saved at the end) loads it from its snapshot;
    /// an account changed after that save loads from its tables, with the change — off the request
    /// path when it counts as large (`mappingIndexInlineLoadObjects`, 0 in the third start), storage
    /// answering meanwhile.
    @Test func aSettledAccountIsSavedWhileServingAndLoadsFromItsSnapshotAfterACrash() throws {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = "sqlite:" + directory.appendingPathComponent("concord.sqlite").path
        func launch(_ log: String, seconds: Int, inlineLoadObjects: Int = 200_000) throws -> (Process, Int) {
            try launchServer(database: database, directory: directory, log: log, environment: [
                "CONCORD_MAPPING_INDEX_SNAPSHOT_SECONDS": "\(seconds)", "CONCORD_MAPPING_INDEX_INLINE_LOAD_OBJECTS": "\(inlineLoadObjects)",
            ])
        }
        var (server, port) = try launch("first.log", seconds: 1)
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        let world = try MappedPair(port: port, count: 20)
        let before = try world.answers(port)
        #expect(before.contains(world.phoneIDs[19]))
        // Saved once the account has not changed for a pass (1 s here); up to 30 s on a busy machine.
        for _ in 0..<300 where try indexMetric(port, "concord_mapping_index_snapshots_saved_total") == 0 { usleep(100_000) }
        #expect(try indexMetric(port, "concord_mapping_index_snapshots_saved_total") == 1)
        kill(server.processIdentifier, SIGKILL)
        server.waitUntilExit()

        (server, port) = try launch("second.log", seconds: 60)
        #expect(try world.answers(port) == before)
        #expect(try indexMetric(port, "concord_mapping_index_snapshot_loads_total") == 1)
        // A change, then a crash before any save: the next start loads the tables, change and all.
        try MappedPair.upsert(port, world.phone, [assetID(99, device: MappedPair.phoneDevice)])
        let after = try world.answers(port)
        kill(server.processIdentifier, SIGKILL)
        server.waitUntilExit()

        (server, port) = try launch("third.log", seconds: 60, inlineLoadObjects: 0)
        #expect(try world.answers(port) == after)
        for _ in 0..<300 where try indexMetric(port, "concord_mapping_index_background_loads_fitted_total") == 0 { usleep(100_000) }
        #expect(try world.answers(port) == after)
        #expect(try indexMetric(port, "concord_mapping_index_deferred_loads_total") == 1)
        #expect(try indexMetric(port, "concord_mapping_index_reads_while_loading_total") ?? 0 >= 1)
        #expect(try indexMetric(port, "concord_mapping_index_loads_total") == 0)
        #expect(try indexMetric(port, "concord_mapping_index_hits_total") ?? 0 >= 1)
        #expect(try indexMetric(port, "concord_mapping_index_snapshot_loads_total") == 0)
        #expect(try indexMetric(port, "concord_mapping_index_snapshots_rejected_total") == 1)
        kill(server.processIdentifier, SIGTERM)
        server.waitUntilExit()
    }
}

/// An account with a tablet and a phone, `count` assets each with the same contents, mapped
/// tablet → cloud: what the restart tests stop and start servers under.
private struct MappedPair {
    static let phoneDevice = "0C1F6B3E-7D52-4C8A-9E01-5A3B2C1D0E9F"
    let accountID: String, tablet: String, phone: String
    let ids: [String], phoneIDs: [String], cloudIDs: [String]

    init(port: Int, count: Int) throws {
        let account = try send(port, "POST", "/v1/accounts", token: testAdminToken, body: #"{"name":"Person"}"#)
        self.accountID = try #require(account["accountID"]?.stringValue)
        let accountToken = try #require(account["accountToken"]?.stringValue)
        self.tablet = try #require(try send(port, "POST", "/v1/devices", token: accountToken, body: #"{"name":"Tablet"}"#)["deviceToken"]?.stringValue)
        self.phone = try #require(try send(port, "POST", "/v1/devices", token: accountToken, body: #"{"name":"Phone"}"#)["deviceToken"]?.stringValue)
        self.ids = (0..<count).map { assetID($0) }
        self.phoneIDs = (0..<count).map { assetID($0, device: Self.phoneDevice) }
        try Self.upsert(port, self.tablet, self.ids)
        try Self.upsert(port, self.phone, self.phoneIDs)
        let clouds = try send(port, "POST", "/v1/library/cloud-identifiers", token: self.tablet, body: #"{"localIdentifiers":\#(jsonArray(self.ids))}"#)
        self.cloudIDs = try #require(clouds["mappings"]?.arrayValue).compactMap { $0["cloudIdentifier"]?.stringValue }
        #expect(self.cloudIDs.count == count)
    }

    /// Assets `ids`, the n-th with content n; requires 200.
    static func upsert(_ port: Int, _ token: String, _ ids: [String]) throws {
        let items = ids.enumerated().map { #"{"localIdentifier":\#(json($0.element)),"fingerprint":"\#(fingerprint($0.offset))"}"# }
        let r = try send(port, "POST", "/v1/library/changes", token: token, body: #"{"assets":{"upsert":[\#(items.joined(separator: ","))]}}"#)
        try #require(r.status == 200, "\(r.raw.body)")
    }

    /// Cloud → local on the phone and local → cloud on the tablet, as text.
    func answers(_ port: Int) throws -> String {
        try send(port, "POST", "/v1/library/local-identifiers", token: self.phone, body: #"{"cloudIdentifiers":\#(jsonArray(self.cloudIDs))}"#).raw.body
            + (try send(port, "POST", "/v1/library/cloud-identifiers", token: self.tablet, body: #"{"localIdentifiers":\#(jsonArray(self.ids))}"#).raw.body)
    }
}

/// A counter of `/metrics`, nil when absent.
private func indexMetric(_ port: Int, _ name: String) throws -> Int? {
    let text = try rawRequest(port: port, "GET", "/metrics").body
    return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.dropFirst(name.count + 1)) }
}

/// Log lines a test server wrote.
private final class LogLines: @unchecked Sendable {
    // @unchecked Sendable: `lines` is only touched while holding `lock`.
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { self.lock.withLock { self.lines.append(line) } }
    var all: [String] { self.lock.withLock { self.lines } }
}
