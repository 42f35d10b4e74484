import Foundation
import Testing

@testable import ConcordApp

/// The built `concord` executable (`concordExecutable()`), nil when it is not built.
private let concordBinary: URL? = concordExecutable()

/// Runs `concord` with `arguments`; stdout and stderr go to files in `directory`.
private func launch(_ arguments: [String], in directory: URL, environment extra: [String: String] = [:]) throws -> (Process, stdout: URL, stderr: URL) {
    let process = Process()
    process.executableURL = concordBinary
    process.arguments = arguments
    process.currentDirectoryURL = directory
    var environment = ProcessInfo.processInfo.environment
    for key in environment.keys where key.hasPrefix("CONCORD_") { environment[key] = nil }
    process.environment = environment.merging(extra) { $1 }
    let out = directory.appendingPathComponent("stdout.log")
    let err = directory.appendingPathComponent("stderr.log")
    _ = FileManager.default.createFile(atPath: out.path, contents: nil)
    _ = FileManager.default.createFile(atPath: err.path, contents: nil)
    process.standardOutput = try FileHandle(forWritingTo: out)
    process.standardError = try FileHandle(forWritingTo: err)
    try process.run()
    return (process, out, err)
}

private let usageErrorCases: [(arguments: [String], message: String)] = [
    (["serve", "--bogus"], "concord: unknown option --bogus (see 'concord help')"),
    (["serve", "--port", "abc"], #"concord: invalid value "abc" for --port: expected an integer from 0 to 65535"#),
    (["serve", "--port", "70000"], #"concord: invalid value "70000" for --port: expected an integer from 0 to 65535"#),
    (["serve", "--log-level", "loud"], #"concord: invalid value "loud" for --log-level: expected one of trace, debug, info, notice, warning, error"#),
    (["serve", "--config", "/nonexistent.json"], "concord: cannot read config file /nonexistent.json: No such file or directory"),
    (["launch"], "concord: unknown command launch: expected serve, version or help (see 'concord help')"),
]

@Test(.enabled(if: concordBinary != nil, "the concord executable is not built (swift build)"), arguments: usageErrorCases.indices)
func binaryRejectsBadArgumentsWithExitCode2AndOneLine(_ index: Int) throws {
    let c = usageErrorCases[index]
    let directory = makeTemporaryDirectory()
    let (process, stdout, stderr) = try launch(c.arguments, in: directory)
    process.waitUntilExit()
    #expect(process.terminationStatus == 2, "\(c.arguments)")
    #expect(try String(contentsOf: stderr, encoding: .utf8) == c.message + "\n")
    #expect(try String(contentsOf: stdout, encoding: .utf8) == "")
}

@Test(.enabled(if: concordBinary != nil, "the concord executable is not built (swift build)"))
func binaryServesAndExitsZeroOnSIGTERM() throws {
    let directory = makeTemporaryDirectory()
    let (process, stdout, stderr) = try launch(["serve", "--host", "127.0.0.1", "--port", "0", "--database", "sqlite:db/c.sqlite"], in: directory)
    defer { if process.isRunning { process.terminate() } }

    // The listening line carries the real port; logs reach stdout within ~200 ms.
    var port: Int?
    for _ in 0..<250 where port == nil {
        let text = (try? String(contentsOf: stdout, encoding: .utf8)) ?? ""
        if let line = text.split(separator: "\n").first(where: { $0.contains(#""msg":"listening""#) }),
           let range = line.range(of: #""port":"#) {
            port = Int(line[range.upperBound...].prefix { $0.isNumber })
        }
        if port == nil { usleep(20_000) }
    }
    let listening = try #require(port, "no listening line: \(String(describing: try? String(contentsOf: stderr, encoding: .utf8)))")
    #expect(try rawRequest(port: listening, "GET", "/health").body == "ok")
    #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("db/admin-token").path))
    kill(process.processIdentifier, SIGTERM)
    process.waitUntilExit()
    #expect(process.terminationReason == .exit && process.terminationStatus == 0)
    let log = try String(contentsOf: stdout, encoding: .utf8)
    #expect(log.contains(#""msg":"shutting down","signal":"SIGTERM""#))
    #expect(log.hasSuffix("\"msg\":\"stopped\"}\n"))
}

@Test(.enabled(if: concordBinary != nil, "the concord executable is not built (swift build)"))
func binaryExitsOneWhenPortIsTaken() throws {
    let app = try startApp(testServerConfiguration(.sqlite(path: makeTemporaryDirectory().appendingPathComponent("a.sqlite").path), adminToken: nil,
                                                   quiet: false), sink: .init(flushInterval: 0, output: { _ in }))
    defer { app.shutdown() }
    let directory = makeTemporaryDirectory()
    let (process, _, stderr) = try launch(["serve", "--host", "127.0.0.1", "--port", String(app.port), "--database", "x.sqlite"], in: directory)
    process.waitUntilExit()
    #expect(process.terminationStatus == 1)
    let message = try String(contentsOf: stderr, encoding: .utf8)
    #expect(message.hasPrefix("concord: cannot start: ") && message.contains(String(app.port)))
    #expect(message.filter { $0 == "\n" }.count == 1)
}

/// Asked for huge pages, `concord serve` starts itself again (same process ID) with glibc's tunable
/// added, where this machine's kernel and glibc have them; not asked, it runs as started.
@Test(.enabled(if: concordBinary != nil, "the concord executable is not built (swift build)"), arguments: ["1", "0"])
func binaryStartsAgainWithHugePagesOnlyWhenAskedTo(_ setting: String) throws {
    let directory = makeTemporaryDirectory()
    let (process, stdout, _) = try launch(["serve", "--host", "127.0.0.1", "--port", "0", "--database", "sqlite:db/c.sqlite"], in: directory,
                                          environment: ["CONCORD_MALLOC_HUGE_PAGES": setting])
    defer { if process.isRunning { process.terminate() } }
    for _ in 0..<250 where !((try? String(contentsOf: stdout, encoding: .utf8)) ?? "").contains(#""msg":"listening""#) { usleep(20_000) }
    let environ = try String(decoding: Data(contentsOf: URL(fileURLWithPath: "/proc/\(process.processIdentifier)/environ")), as: UTF8.self)
    var asked = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("CONCORD_") }
    asked["CONCORD_MALLOC_HUGE_PAGES"] = setting
    let expected = HugePageMalloc.environmentToRestart(
        asked, thpMode: try? String(contentsOfFile: "/sys/kernel/mm/transparent_hugepage/enabled", encoding: .utf8),
        glibc: HugePageMalloc.glibcVersion())?["GLIBC_TUNABLES"]
    #expect(environ.split(separator: "\0").contains { $0 == "GLIBC_TUNABLES=\(expected ?? "")" } == (expected != nil), "\(environ)")
    kill(process.processIdentifier, SIGTERM)
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
}
