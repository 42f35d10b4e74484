import CSQLite
import ConcordHTTP
import ConcordJSON
import ConcordObservability
import Foundation
import Synchronization
import Testing

@testable import ConcordApp

/// A configuration for one test: 127.0.0.1, port 0, a fresh SQLite file, no admin token.
private func testConfiguration(directory: URL = makeTemporaryDirectory()) -> Configuration {
    testServerConfiguration(.sqlite(path: directory.appendingPathComponent("data/concord.sqlite").path), eventLoops: 1, workers: 2,
                            adminToken: nil, quiet: false)
}

/// Collects log lines in memory.
private final class LogCapture: Sendable {
    let text = Mutex("")
    var sink: LogSink { LogSink(flushInterval: 0, output: { bytes in self.text.withLock { $0 += String(decoding: bytes, as: UTF8.self) } }) }
}

@Test func serviceEndpointsAnswerOverARealSocket() throws {
    let logs = LogCapture()
    let sink = logs.sink
    let app = try startApp(testConfiguration(), sink: sink)
    defer { app.shutdown() }

    let health = try rawRequest(port: app.port, "GET", "/health")
    #expect(health.status == 200 && health.body == "ok")
    #expect(health.header("Content-Type")?.hasPrefix("text/plain") == true)

    let head = try rawRequest(port: app.port, "HEAD", "/health")
    #expect(head.status == 200 && head.body == "" && head.header("Content-Length") == "2")

    let ready = try rawRequest(port: app.port, "GET", "/ready")
    #expect(ready.status == 200 && ready.body == "ready")

    let notFound = try rawRequest(port: app.port, "GET", "/v1/nothing-here")
    #expect(notFound.status == 404)
    #expect(notFound.header("Content-Type") == "application/json")
    let error = try JSONValue.parse(Array(notFound.body.utf8))
    #expect(error == .object(JSONObject([("error", .object(JSONObject([("name", .string("notFound")), ("message", .string("Not found."))])))])))

    let wrongMethod = try rawRequest(port: app.port, "DELETE", "/health")
    #expect(wrongMethod.status == 405 && wrongMethod.header("Allow") == "GET, HEAD, OPTIONS")
    #expect(wrongMethod.body.contains(#""name":"methodNotAllowed""#))

    let badPath = try rawRequest(port: app.port, "GET", "/health%zz")
    #expect(badPath.status == 400 && badPath.body.contains(#""name":"badRequest""#))

    let metrics = try rawRequest(port: app.port, "GET", "/metrics")
    #expect(metrics.status == 200)
    #expect(metrics.header("Content-Type") == MetricsRegistry.contentType)
    // GET and HEAD /health above: both counted under the route pattern.
    #expect(metrics.body.contains(#"concord_http_requests_total{route="/health",status="200"} 2"#))
    #expect(metrics.body.contains(#"concord_http_requests_total{route="unmatched",status="404"} 1"#))
    #expect(metrics.body.contains(#"concord_http_request_duration_seconds_count{route="/ready"} 1"#))
    #expect(metrics.body.contains("# TYPE concord_http_open_connections gauge\nconcord_http_open_connections 1\n"))

    sink.flush()
    let lines = logs.text.withLock { $0 }.split(separator: "\n")
    #expect(lines.contains { $0.contains(#""msg":"listening""#) && $0.contains(#""port":\#(app.port)"#) })
    #expect(lines.contains { $0.contains(#""msg":"request""#) && $0.contains(#""route":"/health""#) && $0.contains(#""status":200"#) && $0.contains(#""durationMicros":"#) })
    for line in lines { #expect((try? JSONValue.parse(Array(line.utf8))) != nil, "not JSON: \(line)") }
}

@Test func shutdownStopsAcceptingAndClosesStorage() throws {
    let app = try startApp(testConfiguration(), sink: LogSink(flushInterval: 0, output: { _ in }))
    #expect(try rawRequest(port: app.port, "GET", "/health").status == 200)
    app.shutdown()
    #expect(throws: RawHTTPError.self) { try rawRequest(port: app.port, "GET", "/health") }
    #expect(app.context.storage.store.ping() == false)
    app.shutdown()  // a second call is harmless
}

@Test func readyAnswers503WhenStorageDoesNot() async throws {
    let directory = makeTemporaryDirectory()
    let storage = try StorageHook.open(.sqlite(path: directory.appendingPathComponent("r.sqlite").path))
    #expect(storage.store.ping())
    storage.close()
    let logger = Logger(level: .error, sink: LogSink(flushInterval: 0, output: { _ in }))
    let context = AppContext(configuration: Configuration(), logger: logger, metrics: MetricsRegistry(), adminToken: "t", storage: storage)
    let dispatcher = Dispatcher(routes: allRoutes(context), logger: logger, metrics: context.metrics, workerCount: 1)
    defer { dispatcher.shutdown(deadline: 1) }
    let response = await withCheckedContinuation { continuation in
        dispatcher.handle(HTTPRequest(method: "GET", target: "/ready")) { continuation.resume(returning: $0) }
    }
    #expect(response.status == 503)
    #expect(response.headers[first: "Retry-After"] == "1")
    #expect(String(decoding: response.body, as: UTF8.self).contains(#""name":"unavailable""#))
}

@Test func generatedAdminTokenIsStoredPrivatelyAndReused() throws {
    let directory = makeTemporaryDirectory()
    let logs = LogCapture()
    let first = try startApp(testConfiguration(directory: directory), sink: logs.sink)
    let token = first.context.adminToken
    first.shutdown()
    #expect(token.count == 64 && token.allSatisfy(\.isHexDigit))

    let file = directory.appendingPathComponent("data/admin-token").path
    let attributes = try FileManager.default.attributesOfItem(atPath: file)
    #expect((attributes[.posixPermissions] as? Int) == 0o600)
    // The log names the file; the token itself is never logged.
    #expect(!logs.text.withLock { $0 }.contains(token))
    #expect(logs.text.withLock { $0 }.contains(#""msg":"generated admin token""#) && logs.text.withLock { $0 }.contains(file))

    let second = try startApp(testConfiguration(directory: directory), sink: LogSink(flushInterval: 0, output: { _ in }))
    #expect(second.context.adminToken == token)
    #expect(second.context.isAdminToken(token) && !second.context.isAdminToken(token + "0") && !second.context.isAdminToken(nil))
    second.shutdown()

    var configured = testConfiguration(directory: directory)
    configured.adminToken = "configured-token-of-32-characters-at-least"
    let third = try startApp(configured, sink: LogSink(flushInterval: 0, output: { _ in }))
    #expect(third.context.adminToken == "configured-token-of-32-characters-at-least")
    third.shutdown()

    // A configured token under 32 characters refuses the start, naming the setting.
    configured.adminToken = "configured-token"
    do {
        let short = try startApp(configured, sink: LogSink(flushInterval: 0, output: { _ in }))
        short.shutdown()
        Issue.record("a 16-character admin token started the server")
    } catch {
        #expect("\(error)".contains("adminToken") && "\(error)".contains("at least 32"), "\(error)")
    }
}

@Test func startupFailuresAreOneLineReasons() throws {
    let quiet = LogSink(flushInterval: 0, output: { _ in })
    let app = try startApp(testConfiguration(), sink: quiet)
    defer { app.shutdown() }

    let takenDirectory = makeTemporaryDirectory()
    var taken = testConfiguration(directory: takenDirectory)
    taken.server.port = app.port
    #expect { _ = try startApp(taken, sink: quiet) } throws: { error in
        (error as? StartupError)?.message.contains("\(app.port)") == true
    }
    // The admin token generated for a start that then failed is not left behind to be reused.
    #expect(!FileManager.default.fileExists(atPath: takenDirectory.appendingPathComponent("data/admin-token").path))
    #expect(FileManager.default.fileExists(atPath: takenDirectory.appendingPathComponent("data/concord.sqlite").path))

    var postgres = testConfiguration()
    // Nothing listens on port 1: unreachable at start is one line naming the server, password masked.
    postgres.database = .postgres(url: "postgres://u:secret@127.0.0.1:1/db")
    #expect { _ = try startApp(postgres, sink: quiet) } throws: { error in
        guard let message = (error as? StartupError)?.message else { return false }
        return message.contains("cannot connect to postgres 127.0.0.1:1/db") && !message.contains("secret") && !message.contains("\n")
    }

    // A database path whose directory cannot be created (its parent is a file).
    let directory = makeTemporaryDirectory()
    let blocker = directory.appendingPathComponent("file")
    _ = FileManager.default.createFile(atPath: blocker.path, contents: Data("x".utf8))
    var unusable = testConfiguration()
    unusable.database = .sqlite(path: blocker.appendingPathComponent("db.sqlite").path)
    #expect { _ = try startApp(unusable, sink: quiet) } throws: { error in
        guard let message = (error as? StartupError)?.message else { return false }
        return message.contains("cannot create data directory") && !message.contains("\n")
    }
}

@Test func shutdownLetsRequestsInFlightFinish() throws {
    // The handler tells when it runs, then takes 3 s: shutdown begins while it surely still runs.
    let reached = DispatchSemaphore(value: 0)
    let slow = Route("GET", "/test/slow", caller: .anyone) { _ throws(APIError) in
        reached.signal()
        usleep(3_000_000)
        return .text("done")
    }
    var configuration = testConfiguration()
    configuration.server.timeouts.shutdownGrace = 30   // 10× the handler's time: it finishes within
    let app = try startApp(configuration, sink: LogSink(flushInterval: 0, output: { _ in }), extraRoutes: [slow])
    let result = Mutex<Result<RawResponse, any Error>?>(nil)
    let finished = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        let response = Result { try rawRequest(port: app.port, "GET", "/test/slow") }
        result.withLock { $0 = response }
        finished.signal()
    }
    // Once the request has reached the worker, shut down while it sleeps.
    #expect(reached.wait(timeout: .now() + 30) == .success)
    let start = Date()
    app.shutdown()
    #expect(Date().timeIntervalSince(start) >= 0.1)
    #expect(finished.wait(timeout: .now() + 30) == .success)
    let response = try #require(try result.withLock { $0 }?.get())
    #expect(response.status == 200 && response.body == "done")
}

@Test func shutdownStaysBoundedWhenAWriteOutlastsTheGrace() throws {
    let directory = makeTemporaryDirectory()
    var configuration = testConfiguration(directory: directory)
    configuration.server.timeouts.shutdownGrace = 0.3
    let admin = String(repeating: "a", count: 32)
    configuration.adminToken = admin
    let app = try startApp(configuration, sink: LogSink(flushInterval: 0, output: { _ in }))
    // Another process's connection holds SQLite's write lock: the request's write waits for it
    // (busy timeout 5 s) while holding the store's writer.
    var blocker: OpaquePointer?
    try #require(sqlite3_open(directory.appendingPathComponent("data/concord.sqlite").path, &blocker) == SQLITE_OK)
    defer { sqlite3_close(blocker) }
    try #require(sqlite3_exec(blocker, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK)
    let finished = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        _ = try? rawRequest(port: app.port, "POST", "/v1/accounts", headers: ["Authorization: Bearer \(admin)", "Content-Type: application/json"], body: #"{"name":"late"}"#)
        finished.signal()
    }
    usleep(200_000)
    let start = Date()
    app.shutdown()
    // Grace (0.3 s) plus the workers' last 0.1 s, not the 5 s the stuck write could still take:
    // within 10× the grace, still short of the 5 s.
    #expect(Date().timeIntervalSince(start) < 4)
    _ = sqlite3_exec(blocker, "ROLLBACK", nil, nil, nil)
    #expect(finished.wait(timeout: .now() + 10) == .success)
}

@Test func unusableDatabaseFileIsAStartupError() throws {
    let directory = makeTemporaryDirectory()
    let path = directory.appendingPathComponent("not-a-database.sqlite").path
    _ = FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x41, count: 4096))
    var configuration = testConfiguration(directory: directory)
    configuration.database = .sqlite(path: path)
    #expect { _ = try startApp(configuration, sink: LogSink(flushInterval: 0, output: { _ in })) } throws: { error in
        guard let message = (error as? StartupError)?.message else { return false }
        return message.hasPrefix("cannot use database \(path): ") && !message.contains("\n")
    }
}
