import ConcordDomain
import ConcordHTTP
import ConcordJSON
import ConcordObservability
import ConcordTestSupport
import ConcordTransport
import Foundation
import Synchronization
import Testing

@testable import ConcordApp

/// Destinations as the tests want them, decided from the URL alone (no DNS): `http://127.0.0.1…`
/// and any `https` host are allowed, `10.0.0.1` is a forbidden address, `*.invalid` does not
/// resolve, another `http` host is an insecure scheme; a URL without a scheme or host, or with
/// user information or a fragment, is invalid.
struct TestWebhookDestinations: WebhookDestinationChecking {
    func check(url: String) -> WebhookDestinationVerdict {
        guard url.utf8.count <= 2048, let c = URLComponents(string: url), let scheme = c.scheme?.lowercased(), ["http", "https"].contains(scheme),
              let host = c.host, !host.isEmpty, c.user == nil, c.fragment == nil else {
            return .invalid(message: "must be an absolute https URL.")
        }
        let origin = WebhookService.origin(of: url)
        if host.hasSuffix(".invalid") { return .forbidden(reason: "unresolvable", origin: origin) }
        if host == "10.0.0.1" { return .forbidden(reason: "forbiddenAddress", origin: origin) }
        if scheme == "http", host != "127.0.0.1" { return .forbidden(reason: "insecureScheme", origin: origin) }
        return .allowed(origin: origin)
    }
}

/// Secrets XORed with a fixed key behind a one-byte key tag: enough to see that what is stored is
/// not the secret, and that it opens again.
struct TestWebhookSealing: WebhookSecretKeeping {
    static let key: [UInt8] = Array("concord-test-webhook-key-0123456789".utf8)
    var keyID: String { "test" }

    func newSecret() -> String {
        "whsec_" + Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
    }

    func seal(_ secret: String, webhookID: String, serial: Int64) -> [UInt8] {
        [0x01] + Array(secret.utf8).enumerated().map { $0.element ^ Self.key[$0.offset % Self.key.count] }
    }

    func open(_ sealed: [UInt8], webhookID: String, serial: Int64) -> String? {
        guard sealed.first == 0x01 else { return nil }
        return String(decoding: sealed.dropFirst().enumerated().map { $0.element ^ Self.key[$0.offset % Self.key.count] }, as: UTF8.self)
    }
}

/// A real server on 127.0.0.1 port 0 whose service serves webhooks (the test destinations and
/// sealing above; no delivery engine, so events stay pending), over a fresh database of `engine`.
/// Its log lines (level `notice` and above, audit lines included) are kept for the tests to read.
final class WebhookTestServer: APITestClient, Sendable {
    let port: Int
    let context: AppContext
    private let database: TestDatabase
    private let server: HTTPServer
    private let dispatcher: Dispatcher
    private let sink: LogSink
    private let lines: WebhookLogLines

    init(engine: TestEngine = .sqlite, settings: WebhookSettings = WebhookSettings()) throws {
        let database = try TestDatabase(engine, poolSize: 4)
        self.database = database
        let environment = WebhookEnvironment(destinations: TestWebhookDestinations(), secrets: TestWebhookSealing(), settings: settings)
        let service = try ConcordService(store: database.store, webhooks: environment)
        let configuration = testServerConfiguration(.sqlite(path: ":memory:"), quiet: false)
        let lines = WebhookLogLines()
        self.lines = lines
        self.sink = LogSink(flushInterval: 0, output: { bytes in lines.append(bytes) })
        let logger = Logger(level: .notice, sink: self.sink)
        let metrics = MetricsRegistry()
        self.context = AppContext(configuration: configuration, logger: logger, metrics: metrics, adminToken: testAdminToken,
                                  storage: StorageHook(store: database.store, service: service))
        self.dispatcher = Dispatcher(routes: allRoutes(self.context), logger: logger, metrics: metrics, workerCount: 4, rates: self.context.rates,
                                     bodyLimits: BodyLimits(configuration.server.limits), clock: self.context.clock)
        self.server = HTTPServer(configuration: ServerConfiguration(configuration.server), responder: self.dispatcher)
        self.port = try self.server.start()
    }

    deinit {
        self.server.shutdown(gracePeriod: 1)
        _ = self.dispatcher.shutdown(deadline: 1)
        self.sink.shutdown()
    }

    /// Creates a webhook under `prefix` with `token`; requires 201 and answers the body.
    @discardableResult
    func webhook(_ prefix: String, token: String, url: String = "https://relay.example/hook?key=relay-secret",
                 events: [String] = ["library.changed"], extra: String = "") throws -> APIResponse {
        let body = #"{"url":\#(json(url)),"events":\#(jsonArray(events))\#(extra)}"#
        let r = try self.call("POST", prefix, token: token, body: body)
        try #require(r.status == 201, "create webhook: \(r.raw.body)")
        return r
    }

    /// The audit lines logged so far, parsed.
    func auditLines() -> [JSONValue] {
        self.sink.flush()
        return self.lines.all().compactMap { line in
            guard let value = try? JSONValue.parse(Array(line.utf8)), value["audit"] == .bool(true) else { return nil }
            return value
        }
    }
}

/// Log lines a sink handed over, split at newlines.
final class WebhookLogLines: Sendable {
    private let text = Mutex<String>("")
    func append(_ bytes: [UInt8]) { self.text.withLock { $0 += String(decoding: bytes, as: UTF8.self) } }
    func all() -> [String] { self.text.withLock { $0.split(separator: "\n").map(String.init) } }
}
