import ConcordApp
import ConcordClient
import ConcordObservability
import ConcordTestSupport
import Foundation
import Testing

/// The admin token every test server is configured with.
let adminToken = "client-test-admin-token-of-32-characters-or-more"

/// A real Concord server on 127.0.0.1 port 0 over a fresh SQLite file.
final class TestServer: Sendable {
    let app: RunningApp
    let directory: URL

    /// - Parameter configure: adjusts the configuration (maxBatch, retention) before start.
    init(_ configure: (inout Configuration) -> Void = { _ in }) throws {
        self.directory = FileManager.default.temporaryDirectory.appendingPathComponent("concord-client-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        var c = Self.configuration(directory: self.directory, port: 0)
        configure(&c)
        self.app = try startApp(c, sink: LogSink(flushInterval: 0, output: { _ in }))
    }

    /// A test server's configuration: 127.0.0.1:`port`, one loop, the test admin token, quiet
    /// logs, SQLite in `directory`.
    static func configuration(directory: URL, port: Int) -> Configuration {
        var c = Configuration()
        c.server.host = "127.0.0.1"
        c.server.port = port
        c.server.eventLoops = 1
        c.workers = 4
        c.server.timeouts.shutdownGrace = 2
        c.adminToken = adminToken
        c.logLevel = .error
        c.database = .sqlite(path: directory.appendingPathComponent("concord.sqlite").path)
        return c
    }

    deinit {
        self.app.shutdown()
        try? FileManager.default.removeItem(at: self.directory)
    }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(self.app.port)")! }

    /// A client speaking with `token` (admin by default); retries fast so tests stay quick.
    func client(token: String? = adminToken, _ configure: (inout ConcordClient.Configuration) -> Void = { _ in }) -> ConcordClient {
        var configuration = ConcordClient.Configuration(retryPolicy: RetryPolicy(maxAttempts: 3, initialDelay: 0.01, maxDelay: 0.05))
        configure(&configuration)
        return ConcordClient(baseURL: self.baseURL, token: token, configuration: configuration)
    }

    /// A new account with `count` devices: the account client and one client per device.
    func account(devices names: [String], _ configure: (inout ConcordClient.Configuration) -> Void = { _ in }) async throws -> (account: ConcordClient, devices: [ConcordClient]) {
        let admin = self.client(configure)
        let credentials = try await admin.createAccount(name: "Person")
        let account = admin.withToken(credentials.accountToken)
        var devices: [ConcordClient] = []
        for name in names {
            devices.append(account.withToken(try await account.createDevice(name: name, platform: "iOS").deviceToken))
        }
        return (account, devices)
    }
}

/// A canonical fingerprint (base64url of 32 bytes) for content number `n`.
func fingerprint(_ n: Int) -> String { Fingerprint.base64URL(fingerprintBytes(n)) }

/// A PhotoKit-like asset local identifier (with slashes, as PhotoKit's have).
func assetID(_ n: Int, device: String = "9F983DBA-EC35-42B8-8773-B597CF782EDD") -> String { "\(device)-\(n)/L0/001" }

/// Assets for content numbers `numbers`, identified `prefix-n/L0/001`.
func assets(_ prefix: String, _ numbers: some Sequence<Int>) -> [Asset] {
    numbers.map { Asset(localIdentifier: assetID($0, device: prefix), fingerprint: fingerprint($0)) }
}

/// The error `body` throws, when it throws one of type `E`.
func thrown<E: Error>(_ type: E.Type, _ body: () async throws -> Void) async -> E? {
    do {
        try await body()
        return nil
    } catch let error as E {
        return error
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}
