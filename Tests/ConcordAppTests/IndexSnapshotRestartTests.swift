import ConcordJSON
import ConcordObservability
import Foundation
import Testing

@testable import ConcordApp

/// The mapping index's snapshots through the real server (issue 24): a clean shutdown saves the
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
        func call(_ app: RunningApp, _ method: String, _ target: String, _ token: String, _ body: String) throws -> APIResponse {
            APIResponse(raw: try rawRequest(port: app.port, method, target, headers: ["Authorization: Bearer \(token)", "Content-Type: application/json"], body: body))
        }
        func metric(_ app: RunningApp, _ name: String) throws -> String? {
            let text = try rawRequest(port: app.port, "GET", "/metrics").body
            return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.map { String($0.dropFirst(name.count + 1)) }
        }
        let ids = (0..<30).map { assetID($0) }
        let phoneIDs = (0..<30).map { assetID($0, device: "0C1F6B3E-7D52-4C8A-9E01-5A3B2C1D0E9F") }

        var app = try serve()
        let account = try call(app, "POST", "/v1/accounts", testAdminToken, #"{"name":"Person"}"#)
        let accountID = try #require(account["accountID"]?.stringValue), accountToken = try #require(account["accountToken"]?.stringValue)
        let tablet = try #require(try call(app, "POST", "/v1/devices", accountToken, #"{"name":"Tablet"}"#)["deviceToken"]?.stringValue)
        let phone = try #require(try call(app, "POST", "/v1/devices", accountToken, #"{"name":"Phone"}"#)["deviceToken"]?.stringValue)
        func upsert(_ token: String, _ ids: [String]) throws {
            let items = ids.enumerated().map { #"{"localIdentifier":\#(json($0.element)),"fingerprint":"\#(fingerprint($0.offset))"}"# }
            let r = try call(app, "POST", "/v1/library/changes", token, #"{"assets":{"upsert":[\#(items.joined(separator: ","))]}}"#)
            try #require(r.status == 200, "\(r.raw.body)")
        }
        try upsert(tablet, ids)
        try upsert(phone, phoneIDs)
        let clouds = try call(app, "POST", "/v1/library/cloud-identifiers", tablet, #"{"localIdentifiers":\#(jsonArray(ids))}"#)
        let cloudIDs = try #require(clouds["mappings"]?.arrayValue).compactMap { $0["cloudIdentifier"]?.stringValue }
        #expect(cloudIDs.count == 30)
        func answers(_ app: RunningApp) throws -> String {
            try call(app, "POST", "/v1/library/local-identifiers", phone, #"{"cloudIdentifiers":\#(jsonArray(cloudIDs))}"#).raw.body
                + (try call(app, "POST", "/v1/library/cloud-identifiers", tablet, #"{"localIdentifiers":\#(jsonArray(ids))}"#).raw.body)
        }
        let before = try answers(app)
        #expect(before.contains(phoneIDs[29]))
        app.shutdown()
        #expect(FileManager.default.fileExists(atPath: path + "-index/\(accountID).index"))

        app = try serve()
        #expect(try answers(app) == before)
        #expect(try metric(app, "concord_mapping_index_snapshot_loads_total") == "1")
        // A change after the load, then a restart: the snapshot saved at this shutdown is of the
        // new state, and is used again.
        try upsert(tablet, [assetID(99)])
        let after = try answers(app)
        app.shutdown()
        app = try serve()
        #expect(try answers(app) == after)
        #expect(try metric(app, "concord_mapping_index_snapshot_loads_total") == "1")
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
    /// an account changed after that save loads from its tables, with the change.
    @Test func aSettledAccountIsSavedWhileServingAndLoadsFromItsSnapshotAfterACrash() throws {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = "sqlite:" + directory.appendingPathComponent("concord.sqlite").path
        func launch(_ log: String, seconds: Int) throws -> (Process, Int) {
            try launchServer(database: database, directory: directory, log: log, environment: ["CONCORD_MAPPING_INDEX_SNAPSHOT_SECONDS": "\(seconds)"])
        }
        func metric(_ port: Int, _ name: String) throws -> Int? {
            let text = try rawRequest(port: port, "GET", "/metrics").body
            return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.dropFirst(name.count + 1)) }
        }
        let ids = (0..<20).map { assetID($0) }
        let phoneIDs = (0..<20).map { assetID($0, device: "0C1F6B3E-7D52-4C8A-9E01-5A3B2C1D0E9F") }
        func upsert(_ port: Int, _ token: String, _ ids: [String]) throws {
            let items = ids.enumerated().map { #"{"localIdentifier":\#(json($0.element)),"fingerprint":"\#(fingerprint($0.offset))"}"# }
            let r = try send(port, "POST", "/v1/library/changes", token: token, body: #"{"assets":{"upsert":[\#(items.joined(separator: ","))]}}"#)
            try #require(r.status == 200, "\(r.raw.body)")
        }

        var (server, port) = try launch("first.log", seconds: 1)
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        let account = try send(port, "POST", "/v1/accounts", token: testAdminToken, body: #"{"name":"Person"}"#)
        let accountToken = try #require(account["accountToken"]?.stringValue)
        let tablet = try #require(try send(port, "POST", "/v1/devices", token: accountToken, body: #"{"name":"Tablet"}"#)["deviceToken"]?.stringValue)
        let phone = try #require(try send(port, "POST", "/v1/devices", token: accountToken, body: #"{"name":"Phone"}"#)["deviceToken"]?.stringValue)
        try upsert(port, tablet, ids)
        try upsert(port, phone, phoneIDs)
        let clouds = try send(port, "POST", "/v1/library/cloud-identifiers", token: tablet, body: #"{"localIdentifiers":\#(jsonArray(ids))}"#)
        let cloudIDs = try #require(clouds["mappings"]?.arrayValue).compactMap { $0["cloudIdentifier"]?.stringValue }
        #expect(cloudIDs.count == 20)
        func answers(_ port: Int) throws -> String {
            try send(port, "POST", "/v1/library/local-identifiers", token: phone, body: #"{"cloudIdentifiers":\#(jsonArray(cloudIDs))}"#).raw.body
                + (try send(port, "POST", "/v1/library/cloud-identifiers", token: tablet, body: #"{"localIdentifiers":\#(jsonArray(ids))}"#).raw.body)
        }
        let before = try answers(port)
        #expect(before.contains(phoneIDs[19]))
        // Saved once the account has not changed for a pass (1 s here); up to 30 s on a busy machine.
        for _ in 0..<300 where try metric(port, "concord_mapping_index_snapshots_saved_total") == 0 { usleep(100_000) }
        #expect(try metric(port, "concord_mapping_index_snapshots_saved_total") == 1)
        kill(server.processIdentifier, SIGKILL)
        server.waitUntilExit()

        (server, port) = try launch("second.log", seconds: 60)
        #expect(try answers(port) == before)
        #expect(try metric(port, "concord_mapping_index_snapshot_loads_total") == 1)
        // A change, then a crash before any save: the next start loads the tables, change and all.
        try upsert(port, phone, [assetID(99, device: "0C1F6B3E-7D52-4C8A-9E01-5A3B2C1D0E9F")])
        let after = try answers(port)
        kill(server.processIdentifier, SIGKILL)
        server.waitUntilExit()

        (server, port) = try launch("third.log", seconds: 60)
        #expect(try answers(port) == after)
        #expect(try metric(port, "concord_mapping_index_snapshot_loads_total") == 0)
        #expect(try metric(port, "concord_mapping_index_snapshots_rejected_total") == 1)
        kill(server.processIdentifier, SIGTERM)
        server.waitUntilExit()
    }
}

/// Log lines a test server wrote.
private final class LogLines: @unchecked Sendable {
    // @unchecked Sendable: `lines` is only touched while holding `lock`.
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { self.lock.withLock { self.lines.append(line) } }
    var all: [String] { self.lock.withLock { self.lines } }
}
