import ConcordObservability
import ConcordStorage
import Foundation
import Testing

@testable import ConcordApp

private let targetCases: [(url: String, target: (host: String, port: Int, path: String)?)] = [
    ("http://127.0.0.1:8080/health", ("127.0.0.1", 8080, "/health")),
    ("http://localhost/health", ("localhost", 80, "/health")),
    ("http://example.com:9000", ("example.com", 9000, "/")),
    ("http://[::1]:8080/ready", ("::1", 8080, "/ready")),
    ("http://[::1]/", ("::1", 80, "/")),
    ("https://127.0.0.1/health", nil),           // no TLS in a health check
    ("127.0.0.1:8080/health", nil),
    ("http://:8080/health", nil),
    ("http://127.0.0.1:0/health", nil),
    ("http://127.0.0.1:65536/health", nil),
    ("http://127.0.0.1:80a/health", nil),
    ("http://user@127.0.0.1/health", nil),
    ("http://[::1/health", nil),
    ("http://127.0.0.1/a b", nil),               // would break the request line
    ("http://127.0.0.1/a\r\nX: y", nil),         // header injection
]

@Test(arguments: targetCases.indices)
func healthcheckURLParsing(_ index: Int) {
    let c = targetCases[index]
    let parsed = Healthcheck.Target(url: c.url)
    #expect(parsed.map { [$0.host, String($0.port), $0.path] } == c.target.map { [$0.host, String($0.port), $0.path] }, "\(c.url)")
}

private let statusLineCases: [(line: String, status: Int?)] = [
    ("HTTP/1.1 200 OK\r\n", 200),
    ("HTTP/1.0 503 Service Unavailable\r\n", 503),
    ("HTTP/1.1 204\r\n", 204),                  // reason phrase may be missing
    ("HTTP/1.1 200 OK", 200),                   // first line before its end arrived
    ("HTTP/2 200\r\n", nil),
    ("HTTP/1.1 20 OK\r\n", nil),
    ("HTTP/1.1 2000 OK\r\n", nil),
    ("HTTP/1.1 2x0 OK\r\n", nil),
    ("SSH-2.0-OpenSSH\r\n", nil),
    ("", nil),
]

@Test(arguments: statusLineCases.indices)
func healthcheckStatusLineParsing(_ index: Int) {
    let c = statusLineCases[index]
    #expect(Healthcheck.parseStatus(Array(c.line.utf8)) == c.status, "\(c.line)")
}

private func serverConfiguration(_ directory: URL) -> Configuration {
    testServerConfiguration(.sqlite(path: directory.appendingPathComponent("data/concord.sqlite").path), eventLoops: 1, workers: 2,
                            shutdownGrace: 1, adminToken: nil, quiet: false)
}

@Test func healthcheckExitsZeroForAServingProcessAndOneOtherwise() throws {
    let app = try startApp(serverConfiguration(makeTemporaryDirectory()), sink: LogSink(flushInterval: 0, output: { _ in }))
    let port = app.port
    #expect(Healthcheck.run(["--url", "http://127.0.0.1:\(port)/health"], environment: [:]) == 0)
    // The default URL follows CONCORD_PORT, as in the container.
    #expect(Healthcheck.run([], environment: ["CONCORD_PORT": String(port)]) == 0)
    #expect(CommandLineInterface.run(arguments: ["healthcheck", "--url=http://127.0.0.1:\(port)/health"], environment: [:]) == 0)
    // Any answer but 200 is unhealthy.
    #expect(Healthcheck.status(of: try #require(Healthcheck.Target(url: "http://127.0.0.1:\(port)/missing"))) == .success(404))
    #expect(Healthcheck.run(["--url", "http://127.0.0.1:\(port)/missing"], environment: [:]) == 1)
    app.shutdown()
    // Nothing listens any more.
    #expect(Healthcheck.run(["--url", "http://127.0.0.1:\(port)/health"], environment: [:]) == 1)
}

@Test func healthcheckUsageErrorsExitTwo() {
    #expect(Healthcheck.run(["--bogus"], environment: [:]) == 2)
    #expect(Healthcheck.run(["--url"], environment: [:]) == 2)
    #expect(Healthcheck.run(["http://127.0.0.1/health"], environment: [:]) == 2)
    #expect(Healthcheck.run(["--url", "ftp://x/health"], environment: [:]) == 2)
    #expect(Healthcheck.run([], environment: ["CONCORD_PORT": "abc"]) == 2)
}

@Test func backupCommandCopiesAndRefusesWhatItMustNotDo() throws {
    let directory = makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let database = directory.appendingPathComponent("db.sqlite").path
    let store = try SQLiteStore(path: database)
    try store.writeServer { tx in try tx.insertAccount(accountID: "A", name: "n", tokenHash: [1], createdAt: Date()) }
    let copy = directory.appendingPathComponent("copy.sqlite").path

    #expect(CommandLineInterface.run(arguments: ["backup", "--to", copy, "--database", "sqlite:" + database], environment: [:]) == 0)
    #expect(try SQLiteStore(path: copy).read(account: "A") { tx in try tx.accountExists() })
    // The database may come from the environment, as for serve.
    let second = directory.appendingPathComponent("second.sqlite").path
    #expect(BackupCommand.run(["--to=" + second], environment: ["CONCORD_DATABASE": database]) == 0)
    #expect(FileManager.default.fileExists(atPath: second))

    // Refusals: existing destination, PostgreSQL, missing --to, unknown flag; all exit 2.
    #expect(BackupCommand.run(["--to", copy, "--database", database], environment: [:]) == 2)
    #expect(BackupCommand.run(["--to", directory.appendingPathComponent("pg").path, "--database", "postgres://u:p@h:5432/d"], environment: [:]) == 2)
    #expect(BackupCommand.run(["--database", database], environment: [:]) == 2)
    #expect(BackupCommand.run(["--to", "x", "--port", "1"], environment: [:]) == 2)
    #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("pg").path))
    // A database that cannot be read: exit 1.
    #expect(BackupCommand.run(["--to", directory.appendingPathComponent("x").path, "--database", directory.appendingPathComponent("missing/db.sqlite").path], environment: [:]) == 1)
}
