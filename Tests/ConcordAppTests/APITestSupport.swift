import ConcordDomain
import ConcordJSON
import ConcordObservability
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordApp

/// The admin token every API test server is configured with.
let testAdminToken = "test-admin-token-of-at-least-32-characters"

/// A test server's configuration, the one place it is written: 127.0.0.1, port 0 (ephemeral),
/// `eventLoops` loops and `workers` workers, `shutdownGrace` seconds to drain, the admin token
/// given, logs below `error` dropped unless `quiet` is false.
func testServerConfiguration(_ database: Configuration.Database, eventLoops: Int = 2, workers: Int = 4, shutdownGrace: Double = 2,
                             adminToken: String? = testAdminToken, quiet: Bool = true) -> Configuration {
    var c = Configuration()
    c.server.host = "127.0.0.1"
    c.server.port = 0
    c.server.eventLoops = eventLoops
    c.workers = workers
    c.server.timeouts.shutdownGrace = shutdownGrace
    c.adminToken = adminToken
    if quiet { c.logLevel = .error }
    c.database = database
    return c
}

/// A real server on 127.0.0.1 port 0 over a fresh database of `engine` (SQLite file or
/// PostgreSQL schema), for the API tests.
final class APIServer: APITestClient, Sendable {
    let app: RunningApp
    let directory: URL
    /// The PostgreSQL schema, dropped after the server stops (nil for SQLite).
    let postgres: TestDatabase?
    var port: Int { self.app.port }

    /// - Parameter configure: adjusts the configuration (retention, maxBatch) before start.
    /// - Parameter scheduler: timed work's scheduler (nil: the server's own, on the system's clock).
    init(engine: TestEngine = .sqlite, scheduler: (any TimedWorkScheduler)? = nil, _ configure: (inout Configuration) -> Void = { _ in }) throws {
        self.directory = makeTemporaryDirectory()
        var c = testServerConfiguration(.sqlite(path: self.directory.appendingPathComponent("concord.sqlite").path))
        if engine == .postgres {
            let database = try TestDatabase(.postgres, poolSize: 1)
            self.postgres = database
            c.database = .postgres(url: database.url)
        } else {
            self.postgres = nil
        }
        configure(&c)
        self.app = try startApp(c, sink: LogSink(flushInterval: 0, output: { _ in }), scheduler: scheduler)
    }

    deinit {
        self.app.shutdown()
        try? FileManager.default.removeItem(at: self.directory)
    }
}

/// A server the API tests talk to over real connections: the request helpers every such server shares.
protocol APITestClient {
    var port: Int { get }
}

extension APITestClient {
    /// One request over a new connection; the body is JSON text (Content-Type set when present).
    func call(_ method: String, _ target: String, token: String?, body: String? = nil, headers extra: [String] = []) throws -> APIResponse {
        var headers = extra
        if let token { headers.append("Authorization: Bearer \(token)") }
        if body != nil { headers.append("Content-Type: application/json") }
        if body?.isEmpty == true { headers.append("Content-Length: 0") }
        return APIResponse(raw: try rawRequest(port: self.port, method, target, headers: headers, body: body ?? ""))
    }

    /// A new account: (accountID, accountToken).
    func account(_ name: String = "Person") throws -> (id: String, token: String) {
        let r = try self.call("POST", "/v1/accounts", token: testAdminToken, body: #"{"name":\#(json(name))}"#)
        try #require(r.status == 201, "create account: \(r.raw.body)")
        return (try #require(r["accountID"]?.stringValue), try #require(r["accountToken"]?.stringValue))
    }

    /// A new device of the account: (deviceID, deviceToken).
    func device(_ accountToken: String, _ name: String = "iPhone") throws -> (id: String, token: String) {
        let r = try self.call("POST", "/v1/devices", token: accountToken, body: #"{"name":\#(json(name)),"platform":"iOS"}"#)
        try #require(r.status == 201, "create device: \(r.raw.body)")
        return (try #require(r["deviceID"]?.stringValue), try #require(r["deviceToken"]?.stringValue))
    }

    /// A new account with two devices, "Phone" and "Tablet".
    func phoneAndTablet() throws -> (account: (id: String, token: String), phone: (id: String, token: String), tablet: (id: String, token: String)) {
        let account = try self.account()
        return (account, try self.device(account.token, "Phone"), try self.device(account.token, "Tablet"))
    }

    /// Upserts assets `(localIdentifier, fingerprint)`; requires 200 and answers the body.
    @discardableResult
    func upsert(_ deviceToken: String, assets: [(String, String)]) throws -> APIResponse {
        let items = assets.map { #"{"localIdentifier":\#(json($0.0)),"fingerprint":"\#($0.1)"}"# }.joined(separator: ",")
        let r = try self.call("POST", "/v1/library/changes", token: deviceToken, body: #"{"assets":{"upsert":[\#(items)]}}"#)
        try #require(r.status == 200, "upsert: \(r.raw.body)")
        return r
    }

    /// local → cloud for `ids`; the `mappings` array.
    func cloudIDs(_ deviceToken: String, _ ids: [String]) throws -> [JSONValue] {
        let r = try self.call("POST", "/v1/library/cloud-identifiers", token: deviceToken, body: #"{"localIdentifiers":\#(jsonArray(ids))}"#)
        try #require(r.status == 200, "cloud-identifiers: \(r.raw.body)")
        return try #require(r["mappings"]?.arrayValue)
    }

    /// cloud → local for `ids`; the `mappings` array.
    func localIDs(_ deviceToken: String, _ ids: [String]) throws -> [JSONValue] {
        let r = try self.call("POST", "/v1/library/local-identifiers", token: deviceToken, body: #"{"cloudIdentifiers":\#(jsonArray(ids))}"#)
        try #require(r.status == 200, "local-identifiers: \(r.raw.body)")
        return try #require(r["mappings"]?.arrayValue)
    }
}

/// A response with its body parsed as JSON when it is JSON.
struct APIResponse {
    let raw: RawResponse
    let json: JSONValue?
    init(raw: RawResponse) {
        self.raw = raw
        self.json = try? JSONValue.parse(Array(raw.body.utf8))
    }
    var status: Int { self.raw.status }
    subscript(key: String) -> JSONValue? { self.json?[key] }
    /// The error object's `name`.
    var errorName: String? { self.json?["error"]?["name"]?.stringValue }
    /// The error object's `field`.
    var errorField: String? { self.json?["error"]?["field"]?.stringValue }
}

extension JSONValue {
    /// Member `key` of an object, nil otherwise.
    subscript(key: String) -> JSONValue? { self.objectValue?[key] }
    /// Element `index` of an array, nil otherwise.
    subscript(index: Int) -> JSONValue? {
        guard let a = self.arrayValue, a.indices.contains(index) else { return nil }
        return a[index]
    }
}

/// `s` as a JSON string literal.
func json(_ s: String) -> String {
    var w = JSONWriter()
    w.string(s)
    return String(decoding: w.bytes, as: UTF8.self)
}

/// `values` as a JSON array of strings.
func jsonArray(_ values: [String]) -> String { "[" + values.map(json).joined(separator: ",") + "]" }

/// A canonical fingerprint (base64url, no padding, of 32 bytes) for content number `n`.
func fingerprint(_ n: Int) -> String { Base64URL.encode(fingerprintBytes(n)) }

/// A PhotoKit-like asset local identifier.
func assetID(_ n: Int, device: String = "9F983DBA-EC35-42B8-8773-B597CF782EDD") -> String { "\(device)-\(n)/L0/001" }

/// Percent-encodes everything but unreserved characters (for query values and %2F paths).
func percentEncoded(_ s: String) -> String {
    s.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")) ?? s
}
