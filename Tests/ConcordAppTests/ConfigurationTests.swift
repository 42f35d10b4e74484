import ConcordJSON
import ConcordObservability
import ConcordTransport
import Foundation
import Testing

@testable import ConcordApp

/// The repository root, found from this file's path.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// A fresh temporary directory for one test.
func makeTemporaryDirectory() -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("concord-tests-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

private func writeConfig(_ json: String) -> String {
    let path = makeTemporaryDirectory().appendingPathComponent("config.json").path
    _ = FileManager.default.createFile(atPath: path, contents: Data(json.utf8))
    return path
}

/// The message loading fails with for these flags, environment and file (`--config`); nil, with an
/// issue naming `label` recorded, when it loads.
private func loadError(_ flags: [(name: String, value: String)], _ environment: [String: String], file: String?, label: String,
                       sourceLocation: SourceLocation = #_sourceLocation) -> String? {
    var flags = flags
    if let file { flags.append(("--config", writeConfig(file))) }
    do {
        _ = try ConfigurationLoader.load(flags: flags, environment: environment)
        Issue.record("\(label): loaded without error", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error.message
    }
}

@Test func defaultsAreTheDocumentedOnes() throws {
    let c = try ConfigurationLoader.load(flags: [], environment: [:])
    #expect(c == Configuration())
    #expect(c.server.host == "0.0.0.0" && c.server.port == 8080)
    #expect(c.database == .sqlite(path: "./data/concord.sqlite"))
    #expect(c.server.limits.maxBatch == 10_000 && c.history.maxChanges == 100_000 && c.history.maxAgeDays == 30)
    #expect(c.adminToken == nil && c.logLevel == .info)
}

@Test func precedenceIsDefaultsThenFileThenEnvironmentThenFlags() throws {
    let file = writeConfig(#"{"server":{"host":"10.0.0.1","port":1000,"limits":{"maxBatch":5}},"logLevel":"debug","workers":3}"#)
    let fromFile = try ConfigurationLoader.load(flags: [("--config", file)], environment: [:])
    #expect(fromFile.server.host == "10.0.0.1" && fromFile.server.port == 1000 && fromFile.server.limits.maxBatch == 5)
    #expect(fromFile.logLevel == .debug && fromFile.workers == 3)
    #expect(fromFile.server.limits.bodyBytes == Configuration().server.limits.bodyBytes)

    let environment = ["CONCORD_CONFIG": file, "CONCORD_PORT": "2000", "CONCORD_LIMITS_MAX_BATCH": "6", "CONCORD_LOG_LEVEL": "warning"]
    let fromEnvironment = try ConfigurationLoader.load(flags: [], environment: environment)
    #expect(fromEnvironment.server.host == "10.0.0.1")
    #expect(fromEnvironment.server.port == 2000 && fromEnvironment.server.limits.maxBatch == 6 && fromEnvironment.logLevel == .warning)

    let fromFlags = try ConfigurationLoader.load(flags: [("--port", "3000"), ("--log-level", "error"), ("--database", "/tmp/x.db")], environment: environment)
    #expect(fromFlags.server.port == 3000 && fromFlags.logLevel == .error && fromFlags.database == .sqlite(path: "/tmp/x.db"))
    #expect(fromFlags.server.limits.maxBatch == 6 && fromFlags.server.host == "10.0.0.1")

    // --config wins over CONCORD_CONFIG.
    let other = writeConfig(#"{"server":{"host":"10.0.0.2"}}"#)
    let flagConfig = try ConfigurationLoader.load(flags: [("--config", other)], environment: ["CONCORD_CONFIG": file])
    #expect(flagConfig.server.host == "10.0.0.2" && flagConfig.server.port == 8080)
}

@Test func sqliteSynchronousDefaultsToNormalAndAcceptsFull() throws {
    #expect(try ConfigurationLoader.load(flags: [], environment: [:]).sqliteSynchronous == .normal)
    #expect(try ConfigurationLoader.load(flags: [], environment: ["CONCORD_SQLITE_SYNCHRONOUS": "full"]).sqliteSynchronous == .full)
    let file = writeConfig(#"{"sqliteSynchronous":"full"}"#)
    #expect(try ConfigurationLoader.load(flags: [("--config", file)], environment: [:]).sqliteSynchronous == .full)
}

/// The loops and the compute pool run under the batch policy unless told otherwise.
@Test func threadSchedulingDefaultsToBatchAndAcceptsNormal() throws {
    let defaults = try ConfigurationLoader.load(flags: [], environment: [:])
    #expect(defaults.server.threadScheduling == .batch && ServerConfiguration(defaults.server).batchScheduling)
    let normal = try ConfigurationLoader.load(flags: [], environment: ["CONCORD_THREAD_SCHEDULING": "normal"])
    #expect(normal.server.threadScheduling == .normal && !ServerConfiguration(normal.server).batchScheduling)
    let file = writeConfig(#"{"server":{"threadScheduling":"normal"}}"#)
    #expect(try ConfigurationLoader.load(flags: [("--config", file)], environment: [:]).server.threadScheduling == .normal)
    #expect(throws: (any Error).self) { try ConfigurationLoader.load(flags: [], environment: ["CONCORD_THREAD_SCHEDULING": "fifo"]) }
}

@Test func databaseLocationsParse() {
    #expect(Configuration.Database(parsing: "sqlite:/var/db/c.sqlite") == .sqlite(path: "/var/db/c.sqlite"))
    #expect(Configuration.Database(parsing: "./c.sqlite") == .sqlite(path: "./c.sqlite"))
    #expect(Configuration.Database(parsing: "postgres://u:p@h:5432/db") == .postgres(url: "postgres://u:p@h:5432/db"))
    #expect(Configuration.Database(parsing: "postgres://u:p@h:5432/db")?.description == "postgres://u:***@h:5432/db")
    #expect(Configuration.Database(parsing: "sqlite:") == nil)
    #expect(Configuration.Database(parsing: "mysql://h/db") == nil)
    #expect(Configuration.Database(parsing: "") == nil)
}

/// Each invalid input, and a fragment the one-line message must contain (the key and what was expected).
private let errorCases: [(name: String, flags: [(String, String)], environment: [String: String], file: String?, message: String)] = [
    ("portNotANumber", [("--port", "abc")], [:], nil, #"invalid value "abc" for --port: expected an integer from 0 to 65535"#),
    ("portOutOfRange", [("--port", "70000")], [:], nil, #"invalid value "70000" for --port: expected an integer from 0 to 65535"#),
    ("negativePort", [("--port", "-1")], [:], nil, "for --port: expected an integer from 0 to 65535"),
    ("unknownFlag", [("--colour", "blue")], [:], nil, "unknown option --colour"),
    ("unknownLogLevel", [("--log-level", "loud")], [:], nil, #"invalid value "loud" for --log-level: expected one of trace, debug, info, notice, warning, error"#),
    ("badDatabase", [("--database", "mysql://x/y")], [:], nil, "for --database: expected sqlite:PATH"),
    ("emptyHost", [("--host", "")], [:], nil, "for --host: expected a non-empty string"),
    ("environmentPort", [], ["CONCORD_PORT": "eighty"], nil, #"invalid value "eighty" for CONCORD_PORT: expected an integer"#),
    ("environmentSection", [], ["CONCORD_LIMITS_MAX_BATCH": "0"], nil, "for CONCORD_LIMITS_MAX_BATCH: expected an integer of at least 1"),
    ("environmentTimeout", [], ["CONCORD_TIMEOUTS_IDLE": "soon"], nil, "for CONCORD_TIMEOUTS_IDLE: expected a number of seconds"),
    ("unknownSQLiteSynchronous", [], ["CONCORD_SQLITE_SYNCHRONOUS": "off"], nil, #"invalid value "off" for CONCORD_SQLITE_SYNCHRONOUS: expected one of normal, full"#),
    ("fileWrongType", [], [:], #"{"server":{"port":"8080"}}"#, #"invalid value "8080" for server.port in "#),
    ("fileFraction", [], [:], #"{"history":{"maxAgeDays":1.5}}"#, "invalid value 1.5 for history.maxAgeDays in "),
    ("fileUnknownKey", [], [:], #"{"server":{"prot":8080}}"#, "unknown key server.prot in "),
    ("fileUnknownTopKey", [], [:], #"{"verbose":true}"#, "unknown key verbose in "),
    ("fileSectionNotObject", [], [:], #"{"server":5}"#, "invalid value 5 for server in "),
    ("fileMalformed", [], [:], #"{"server":{"#, "malformed config file "),
    ("fileNotObject", [], [:], "[1]", "expected a JSON object at the top level"),
    ("fileLogLevel", [], [:], #"{"logLevel":"chatty"}"#, #"invalid value "chatty" for logLevel in "#),
    ("fileMissing", [("--config", "/nonexistent/concord.json")], [:], nil, "cannot read config file /nonexistent/concord.json: No such file or directory"),
    // Each value in range, together unworkable: a failure costing more than an address's bucket
    // could never be afforded (every token not seen valid would be 429 for ever).
    ("failedAuthCostOverTheBucket", [], ["CONCORD_RATE_LIMITS_PER_ADDRESS": "50", "CONCORD_RATE_LIMITS_FAILED_AUTH_COST": "300"], nil,
     "conflicting settings: rateLimits.failedAuthCost (300) is more than an address's bucket, rateLimits.perAddress × rateLimits.burstSeconds (100)"),
    ("failedAuthCostOverTheBucketInAFile", [], [:], #"{"rateLimits":{"perAddress":10,"burstSeconds":0.5,"failedAuthCost":6}}"#,
     "rateLimits.failedAuthCost (6) is more than an address's bucket, rateLimits.perAddress × rateLimits.burstSeconds (5)"),
]

@Test(arguments: errorCases.indices)
func configurationErrorsNameTheKeyAndExpectedValue(_ index: Int) {
    let c = errorCases[index]
    guard let message = loadError(c.flags.map { (name: $0.0, value: $0.1) }, c.environment, file: c.file, label: c.name) else { return }
    #expect(message.contains(c.message), "\(c.name): \(message)")
    #expect(!message.contains("\n"), "\(c.name): not one line")
}

private let commandCases: [(arguments: [String], expected: Command?, message: String?)] = [
    (["help"], .help, nil),
    (["--help"], .help, nil),
    (["serve", "--help"], .help, nil),
    (["version"], .version, nil),
    (["serve"], .serve(Configuration()), nil),
    (["serve", "--port=9000", "--host", "127.0.0.1"], .serve({ var c = Configuration(); c.server.port = 9000; c.server.host = "127.0.0.1"; return c }()), nil),
    ([], nil, "missing command"),
    (["start"], nil, "unknown command start"),
    (["serve", "--port"], nil, "missing value for --port"),
    (["serve", "8080"], nil, "unexpected argument 8080"),
    (["serve", "--verbose"], nil, "unknown option --verbose"),
    (["serve", "--verbose=1"], nil, "unknown option --verbose"),
]

@Test(arguments: commandCases.indices)
func commandLineParsesCommandsAndFlags(_ index: Int) {
    let c = commandCases[index]
    do {
        let command = try CommandLineInterface.parse(c.arguments, environment: [:])
        #expect(command == c.expected, "\(c.arguments)")
    } catch {
        #expect(c.message.map { error.message.contains($0) } == true, "\(c.arguments): \(error.message)")
    }
}

/// Config/concord.json is the defaults, docs/configuration.md documents every key of it,
/// and the loader accepts every key of it — and nothing else is documented.
@Test func shippedConfigFileIsTheDocumentedDefaults() throws {
    let jsonPath = repositoryRoot.appendingPathComponent("Config/concord.json").path
    let loaded = try ConfigurationLoader.load(flags: [("--config", jsonPath)], environment: [:])
    #expect(loaded == Configuration())

    let root = try JSONValue.parse(Array(try Data(contentsOf: URL(fileURLWithPath: jsonPath))))
    var fileKeys: [String] = []
    func flatten(_ value: JSONValue, _ prefix: String) {
        if case .object(let object) = value {
            for (key, inner) in object.members { flatten(inner, prefix.isEmpty ? key : prefix + "." + key) }
        } else {
            fileKeys.append(prefix)
        }
    }
    flatten(root, "")
    #expect(Set(fileKeys) == Set(ConfigurationLoader.keys))

    let docs = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
    var documented: [String: String] = [:]   // key → environment variable
    for line in docs.split(separator: "\n") where line.hasPrefix("| `") {
        let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard cells.count > 3 else { continue }
        documented[cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = cells[3].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
    }
    #expect(Set(documented.keys) == Set(fileKeys))
    for setting in ConfigurationLoader.settings {
        #expect(documented[setting.key] == setting.environmentName, "\(setting.key)")
    }
}

/// The settings, each by file, environment and flag (flags win), and their errors.
@Test func frontDoorSettingsLoadFromFileEnvironmentAndFlags() throws {
    let defaults = Configuration()
    #expect(defaults.server.limits.maxConnectionsPerAddress == 1_000 && defaults.server.trustedProxies.isEmpty)
    #expect(defaults.longPoll.maxWaitingPerAccount == 100 && defaults.metricsToken == nil)

    let file = writeConfig(#"""
        {"server":{"limits":{"maxConnectionsPerAddress":7},"trustedProxies":["10.0.0.0/8","2001:db8::/32"]},
         "longPoll":{"maxWaitingPerAccount":3},"metricsToken":"from-the-file"}
        """#)
    let fromFile = try ConfigurationLoader.load(flags: [("--config", file)], environment: [:])
    #expect(fromFile.server.limits.maxConnectionsPerAddress == 7)
    #expect(fromFile.server.trustedProxies.map(\.description) == ["10.0.0.0/8", "2001:db8::/32"])
    #expect(fromFile.longPoll.maxWaitingPerAccount == 3 && fromFile.metricsToken == "from-the-file")

    let environment = ["CONCORD_CONFIG": file, "CONCORD_LIMITS_MAX_CONNECTIONS_PER_ADDRESS": "8", "CONCORD_TRUSTED_PROXIES": "192.0.2.7, 127.0.0.1/32",
                       "CONCORD_LONG_POLL_MAX_WAITING_PER_ACCOUNT": "4", "CONCORD_METRICS_TOKEN": "from-the-environment"]
    let fromEnvironment = try ConfigurationLoader.load(flags: [], environment: environment)
    #expect(fromEnvironment.server.limits.maxConnectionsPerAddress == 8)
    #expect(fromEnvironment.server.trustedProxies.map(\.description) == ["192.0.2.7", "127.0.0.1/32"])
    #expect(fromEnvironment.longPoll.maxWaitingPerAccount == 4 && fromEnvironment.metricsToken == "from-the-environment")

    let fromFlags = try ConfigurationLoader.load(flags: [("--max-connections-per-address", "0"), ("--trusted-proxies", "::1"),
                                                         ("--max-waiting-per-account", "0"), ("--metrics-token", "from-a-flag")],
                                                 environment: environment)
    #expect(fromFlags.server.limits.maxConnectionsPerAddress == 0 && fromFlags.longPoll.maxWaitingPerAccount == 0)
    #expect(fromFlags.server.trustedProxies.map(\.description) == ["::1"] && fromFlags.metricsToken == "from-a-flag")

    // Through the command line too.
    let command = try CommandLineInterface.parse(["serve", "--trusted-proxies=10.1.0.0/16"], environment: [:])
    guard case .serve(let served) = command else { Issue.record("not serve"); return }
    #expect(served.server.trustedProxies == [IPAddressRange("10.1.0.0/16")!])

    let errors: [(flags: [(name: String, value: String)], environment: [String: String], file: String?, message: String)] = [
        ([("--trusted-proxies", "10.0.0.0/33")], [:], nil, #"invalid value "10.0.0.0/33" for --trusted-proxies: expected IP addresses or CIDR blocks"#),
        ([], ["CONCORD_TRUSTED_PROXIES": "proxy.example"], nil, "for CONCORD_TRUSTED_PROXIES: expected IP addresses or CIDR blocks"),
        ([], [:], #"{"server":{"trustedProxies":"10.0.0.0/8"}}"#, "for server.trustedProxies in "),
        ([], [:], #"{"server":{"trustedProxies":[8]}}"#, "for server.trustedProxies in "),
        ([("--max-connections-per-address", "-1")], [:], nil, "for --max-connections-per-address: expected an integer of at least 0"),
        ([], ["CONCORD_LONG_POLL_MAX_WAITING_PER_ACCOUNT": "many"], nil, "for CONCORD_LONG_POLL_MAX_WAITING_PER_ACCOUNT: expected an integer"),
        ([("--metrics-token", "")], [:], nil, "for --metrics-token: expected a non-empty string"),
    ]
    for e in errors {
        if let message = loadError(e.flags, e.environment, file: e.file, label: e.message) {
            #expect(message.contains(e.message), "\(message)")
        }
    }
}

/// The byte bounds: defaults, file, environment (the file's value overridden), range checks.
@Test func dataBoundsAreConfigurableAndChecked() throws {
    let defaults = try ConfigurationLoader.load(flags: [], environment: [:]).dataBounds
    #expect(defaults.idempotencyBytesPerAccount == 64 << 20 && defaults.historyBytesPerDevice == 128 << 20 && defaults.journalAnswerBytes == 8 << 20)
    #expect(StorageOptions(try ConfigurationLoader.load(flags: [], environment: ["CONCORD_QUOTAS_IDEMPOTENCY_BYTES_PER_ACCOUNT": "5000"]), workers: 4)
        .domain.dataBounds.idempotencyBytesPerAccount == 5000)
    let file = writeConfig(#"{"quotas":{"idempotencyBytesPerAccount":100000},"history":{"maxBytesPerDevice":2000},"server":{"limits":{"journalAnswerBytes":3}}}"#)
    let fromFile = try ConfigurationLoader.load(flags: [("--config", file)], environment: [:]).dataBounds
    #expect(fromFile.idempotencyBytesPerAccount == 100_000 && fromFile.historyBytesPerDevice == 2000 && fromFile.journalAnswerBytes == 3)
    let fromEnvironment = try ConfigurationLoader.load(flags: [("--config", file)], environment: [
        "CONCORD_QUOTAS_IDEMPOTENCY_BYTES_PER_ACCOUNT": "200000", "CONCORD_HISTORY_MAX_BYTES_PER_DEVICE": "3000",
        "CONCORD_LIMITS_JOURNAL_ANSWER_BYTES": "4"]).dataBounds
    #expect(fromEnvironment.idempotencyBytesPerAccount == 200_000 && fromEnvironment.historyBytesPerDevice == 3000 && fromEnvironment.journalAnswerBytes == 4)
    for (name, value) in [("CONCORD_QUOTAS_IDEMPOTENCY_BYTES_PER_ACCOUNT", "100"), ("CONCORD_HISTORY_MAX_BYTES_PER_DEVICE", "0"),
                          ("CONCORD_LIMITS_JOURNAL_ANSWER_BYTES", "0")] {
        #expect(throws: ConfigurationError.self, "\(name)") { _ = try ConfigurationLoader.load(flags: [], environment: [name: value]) }
    }
}

/// `mappingIndexMegabytes: auto` (the default) is a quarter of the process's memory, at least 64 MiB.
@Test(arguments: [(nil, 256), (128 << 20, 64), (1 << 30, 256), (24 << 30, 6144)] as [(Int?, Int)])
func theIndexBudgetIsAQuarterOfTheMemory(_ memory: Int?, _ megabytes: Int) throws {
    #expect(MemoryLimit.defaultIndexMegabytes(memoryBytes: memory) == megabytes)
}

@Test func theIndexBudgetIsAutoOrANumberEverywhere() throws {
    let auto = try ConfigurationLoader.load(flags: [], environment: ["CONCORD_MAPPING_INDEX_MEGABYTES": "auto"])
    #expect(auto.mappingIndexMegabytes == MemoryLimit.indexMegabytes && auto == Configuration())
    let set = try ConfigurationLoader.load(flags: [("--config", writeConfig(#"{"mappingIndexMegabytes": 512}"#))], environment: [:])
    #expect(set.mappingIndexMegabytes == 512)
    #expect(throws: (any Error).self) { try ConfigurationLoader.load(flags: [], environment: ["CONCORD_MAPPING_INDEX_MEGABYTES": "lots"]) }
}

/// A failure may cost up to the whole of an address's bucket; with the address limit off, or
/// failures costing nothing, any cost goes (the throttle is off then).
@Test(arguments: [(50.0, 2.0, 100.0), (0, 2, 300), (50, 2, 0), (20_000, 2, 50), (0.1, 1, 1)] as [(Double, Double, Double)])
func failedAuthCostWithinTheBucketLoads(_ perAddress: Double, _ burstSeconds: Double, _ failedAuthCost: Double) throws {
    let loaded = try ConfigurationLoader.load(flags: [], environment: [
        "CONCORD_RATE_LIMITS_PER_ADDRESS": String(perAddress), "CONCORD_RATE_LIMITS_BURST_SECONDS": String(burstSeconds),
        "CONCORD_RATE_LIMITS_FAILED_AUTH_COST": String(failedAuthCost)])
    #expect(loaded.rateLimits.failedAuthCost == failedAuthCost)
}
