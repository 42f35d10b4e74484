#if canImport(Glibc)
import Glibc
#endif
import ConcordJSON
import ConcordTestSupport
import Foundation
import Synchronization
import Testing

@testable import ConcordApp

@Test(arguments: TestEngine.available) func racingDevicesGetOneCloudIdentifierPerContent(_ engine: TestEngine) throws {
    let server = try APIServer(engine: engine) { $0.workers = 8 }
    let account = try server.account()
    let phone = try server.device(account.token, "Phone")
    let tablet = try server.device(account.token, "Tablet")
    let contents = 40
    // The same new content on both devices, under each device's own identifiers.
    try server.upsert(phone.token, assets: (0..<contents).map { ("phone-\($0)", fingerprint($0)) })
    try server.upsert(tablet.token, assets: (0..<contents).map { ("tablet-\($0)", fingerprint($0)) })

    // Many connections at once, each asking for a shuffled slice, before any identifier exists.
    let answers = Mutex<[Int: Set<String>]>([:])
    let failures = Mutex<[String]>([])
    let clients = 16
    DispatchQueue.concurrentPerform(iterations: clients) { client in
        let device = client % 2 == 0 ? ("phone", phone.token) : ("tablet", tablet.token)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<4 {
            let slice = Array((0..<contents).shuffled(using: &generator).prefix(12))
            do {
                let mappings = try server.cloudIDs(device.1, slice.map { "\(device.0)-\($0)" })
                for (n, mapping) in zip(slice, mappings) {
                    guard let cloud = mapping["cloudIdentifier"]?.stringValue else {
                        failures.withLock { $0.append("no identifier for \(device.0)-\(n): \(mapping)") }
                        continue
                    }
                    answers.withLock { _ = $0[n, default: []].insert(cloud) }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
    }
    #expect(failures.withLock { $0 } == [])

    // Afterwards both devices agree, content by content, with everything answered during the race.
    let phoneMap = try server.cloudIDs(phone.token, (0..<contents).map { "phone-\($0)" }).map { $0["cloudIdentifier"]?.stringValue }
    let tabletMap = try server.cloudIDs(tablet.token, (0..<contents).map { "tablet-\($0)" }).map { $0["cloudIdentifier"]?.stringValue }
    let seen = answers.withLock { $0 }
    for n in 0..<contents {
        #expect(phoneMap[n] != nil && phoneMap[n] == tabletMap[n], "content \(n)")
        #expect(seen[n, default: []].count <= 1 && (seen[n] == nil || seen[n] == [phoneMap[n]!]), "content \(n): \(seen[n] ?? [])")
    }
    #expect(Set(phoneMap.compactMap { $0 }).count == contents)
    // And each maps back to the device's own object.
    let back = try server.localIDs(tablet.token, phoneMap.compactMap { $0 }).map { $0["localIdentifier"]?.stringValue }
    #expect(back == (0..<contents).map { "tablet-\($0)" })
}

/// The built `concord` executable: next to the test bundle (`swift test` builds every
/// product into the same directory), else in `.build/debug`.
func concordExecutable() -> URL? {
    let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("concord")
    let candidates = [
        besideTests,
        besideTests.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("concord"),
        repositoryRoot.appendingPathComponent(".build/debug/concord"),
    ]
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
}

/// `concord serve` on port 0 over `database` (what `--database` takes); answers the process and its port.
/// `environment`: settings for this server (every other `CONCORD_` variable is cleared).
func launchServer(database: String, directory: URL, log: String, environment settings: [String: String] = [:]) throws -> (Process, Int) {
    let executable: URL = try #require(concordExecutable(), "the concord executable is not built")
    let process = Process()
    process.executableURL = executable
    process.arguments = ["serve", "--host", "127.0.0.1", "--port", "0", "--database", database, "--admin-token", testAdminToken, "--log-level", "notice"]
    var environment = ProcessInfo.processInfo.environment
    for key in environment.keys where key.hasPrefix("CONCORD_") { environment[key] = nil }
    environment.merge(settings) { $1 }
    process.environment = environment
    let out = directory.appendingPathComponent(log)
    _ = FileManager.default.createFile(atPath: out.path, contents: nil)
    process.standardOutput = try FileHandle(forWritingTo: out)
    process.standardError = try FileHandle(forWritingTo: out)
    try process.run()
    // The listening line carries the real port.
    for _ in 0..<500 {
        let text = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
        if let line = text.split(separator: "\n").first(where: { $0.contains(#""msg":"listening""#) }),
           let range = line.range(of: #""port":"#), let port = Int(line[range.upperBound...].prefix { $0.isNumber }) {
            return (process, port)
        }
        if !process.isRunning { break }
        usleep(10_000)
    }
    process.terminate()
    throw RawHTTPError.malformed("server did not start: \((try? String(contentsOf: out, encoding: .utf8)) ?? "")")
}

/// One request to `port` with an optional bearer token and JSON body.
func send(_ port: Int, _ method: String, _ target: String, token: String?, body: String = "") throws -> APIResponse {
    var headers: [String] = []
    if let token { headers.append("Authorization: Bearer \(token)") }
    return APIResponse(raw: try rawRequest(port: port, method, target, headers: headers, body: body))
}

/// Request `k` of the crash stream: five new assets and an album listing them, all or nothing.
private func crashChange(_ k: Int) -> String {
    let assets = (0..<5).map { #"{"localIdentifier":"k\#(k)-\#($0)/L0/001","fingerprint":"\#(fingerprint(k * 10 + $0))"}"# }
    let members = (0..<5).map { #""k\#(k)-\#($0)/L0/001""# }.joined(separator: ",")
    return #"{"assets":{"upsert":[\#(assets.joined(separator: ","))]},"assetCollections":{"upsert":[{"localIdentifier":"album-\#(k)/L0/040","fingerprint":"\#(fingerprint(100_000 + k))","assets":[\#(members)]}]}}"#
}

@Test func acknowledgedChangesSurviveSIGKILLAndNothingIsHalfApplied() throws {
    let directory = makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let database = directory.appendingPathComponent("crash.sqlite").path
    let (first, port1) = try launchServer(database: "sqlite:" + database, directory: directory, log: "first.log")
    defer { if first.isRunning { kill(first.processIdentifier, SIGKILL) } }

    let account = try send(port1, "POST", "/v1/accounts", token: testAdminToken, body: #"{"name":"Crash"}"#)
    let accountToken = try #require(account["accountToken"]?.stringValue)
    let device = try send(port1, "POST", "/v1/devices", token: accountToken, body: #"{"name":"Phone"}"#)
    let deviceToken = try #require(device["deviceToken"]?.stringValue)
    let start = try #require(try send(port1, "GET", "/v1/library/token", token: deviceToken)["changeToken"]?.stringValue)

    // Stream changes until the server dies; remember every acknowledged one.
    struct Stream { var acknowledged: [Int: String] = [:]; var inFlight: Int?; var error: String? }
    let stream = Mutex(Stream())
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        for k in 0..<100_000 {
            stream.withLock { $0.inFlight = k }
            do {
                let r = try send(port1, "POST", "/v1/library/changes", token: deviceToken, body: crashChange(k))
                guard r.status == 200, let token = r["changeToken"]?.stringValue else {
                    stream.withLock { $0.error = "status \(r.status): \(r.raw.body)" }
                    break
                }
                stream.withLock { $0.acknowledged[k] = token; $0.inFlight = nil }
            } catch {
                break   // the server died: request k may or may not have committed
            }
        }
        done.signal()
    }
    // Let some changes through, then kill the server in the middle of the stream (up to 60 s:
    // on a loaded CI machine, beside the rest of the suite, 40 changes can take a while).
    for _ in 0..<12_000 where stream.withLock({ $0.acknowledged.count }) < 40 { usleep(5_000) }
    kill(first.processIdentifier, SIGKILL)
    first.waitUntilExit()
    #expect(done.wait(timeout: .now() + 10) == .success)
    let result = stream.withLock { $0 }
    #expect(result.error == nil, "\(result.error ?? "")")
    #expect(result.acknowledged.count >= 40)

    // Restart on the same file: the device token and the history survived.
    let (second, port2) = try launchServer(database: "sqlite:" + database, directory: directory, log: "second.log")
    defer { kill(second.processIdentifier, SIGTERM); second.waitUntilExit() }
    let history = try send(port2, "GET", "/v1/library/changes?since=\(percentEncoded(start))&limit=10000", token: deviceToken)
    #expect(history.status == 200, "\(history.raw.body)")
    let changes = try #require(history["changes"]?.arrayValue)
    #expect(history["hasMore"]?.boolValue == false)

    var committed: [Int] = []
    for change in changes {
        // Each change is one whole request: its five assets and its album, nothing else.
        let inserted = change["assets"]?["inserted"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let k = Int(inserted.first?.dropFirst().prefix { $0.isNumber } ?? "") ?? -1
        committed.append(k)
        #expect(inserted == (0..<5).map { "k\(k)-\($0)/L0/001" }, "change \(change)")
        #expect(change["assetCollections"]?["inserted"]?.arrayValue == [.string("album-\(k)/L0/040")])
        if let token = result.acknowledged[k] { #expect(change["changeToken"]?.stringValue == token) }
    }
    let acknowledged = Set(result.acknowledged.keys)
    // Every acknowledged change is there, in order; the only other one allowed is the in-flight one.
    #expect(committed == committed.sorted())
    #expect(acknowledged.isSubset(of: Set(committed)))
    let extra = Set(committed).subtracting(acknowledged)
    #expect(extra.isEmpty || extra == [result.inFlight ?? -1], "unacknowledged changes \(extra), in flight \(String(describing: result.inFlight))")

    // The objects are exactly those of the committed changes.
    var objects: [String] = []
    var after: String?
    repeat {
        let page = try send(port2, "GET", "/v1/library/objects?limit=10000" + (after.map { "&after=" + percentEncoded($0) } ?? ""), token: deviceToken)
        objects += page["objects"]?.arrayValue?.compactMap { $0["localIdentifier"]?.stringValue } ?? []
        after = page["next"]?.stringValue
    } while after != nil
    let expected = committed.flatMap { k in (0..<5).map { "k\(k)-\($0)/L0/001" } + ["album-\(k)/L0/040"] }
    #expect(Set(objects) == Set(expected) && objects.count == expected.count)
    let devices = try send(port2, "GET", "/v1/devices", token: accountToken)
    #expect(devices["devices"]?[0]?["objectCount"]?.intValue == expected.count)
}
