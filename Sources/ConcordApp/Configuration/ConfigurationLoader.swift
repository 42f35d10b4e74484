#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ConcordJSON
import ConcordObservability
import ConcordTransport

/// One setting: its key in the config file, its environment variable, its flag (if
/// any), and how to read a value into `Configuration`. The same table drives the file,
/// the environment, the flags and the documentation test.
struct Setting: Sendable {
    enum Kind: Sendable {
        case int(ClosedRange<Int>)
        case double(ClosedRange<Double>)
        case string
        /// A string, or `null` in the file for "not set".
        case optionalString
        case logLevel
        case database
        /// One of a fixed set of words.
        case choice([String])
        /// IP addresses or CIDR blocks: a JSON array of strings in the file, comma-separated elsewhere.
        case addressRanges
        /// An integer, or `auto` for the value `auto` gives (a size derived from the machine's memory).
        case intOrAuto(ClosedRange<Int>, auto: @Sendable () -> Int)
        /// Host names, IP addresses and CIDR blocks: a JSON array of strings in the file, comma-separated elsewhere.
        case hostList
        /// `count` integers, each in `each`: a JSON array in the file, comma-separated elsewhere.
        case intList(count: ClosedRange<Int>, each: ClosedRange<Int>)
        /// `length` hexadecimal digits, or `null` in the file for "not set".
        case optionalHex(length: Int)
    }

    /// Dotted path in the JSON file, e.g. `server.limits.bodyBytes`.
    let key: String
    let kind: Kind
    let flag: String?
    let apply: @Sendable (inout Configuration, Value) -> Void

    /// A validated value.
    enum Value {
        case int(Int), double(Double), string(String?), logLevel(LogLevel), database(Configuration.Database), ranges([IPAddressRange])
        case strings([String]), ints([Int])
        var strings: [String] { if case .strings(let v) = self { v } else { [] } }
        var ints: [Int] { if case .ints(let v) = self { v } else { [] } }
        var int: Int { if case .int(let v) = self { v } else { 0 } }
        var double: Double { if case .double(let v) = self { v } else { 0 } }
        var string: String? { if case .string(let v) = self { v } else { nil } }
        var ranges: [IPAddressRange] { if case .ranges(let v) = self { v } else { [] } }
    }

    /// `CONCORD_` + the key without a leading `server.`, camelCase split into words:
    /// `server.port` → `CONCORD_PORT`, `server.limits.bodyBytes` → `CONCORD_LIMITS_BODY_BYTES`.
    var environmentName: String {
        let path = self.key.hasPrefix("server.") ? String(self.key.dropFirst("server.".count)) : self.key
        var out = "CONCORD_"
        for ch in path {
            if ch == "." { out += "_" } else if ch.isUppercase { out += "_" + ch.uppercased() } else { out += ch.uppercased() }
        }
        return out
    }

    /// What a valid value looks like, for error messages.
    var expected: String {
        switch self.kind {
        case .int(let range):
            range.upperBound == Int(Int32.max) ? "an integer of at least \(range.lowerBound)" : "an integer from \(range.lowerBound) to \(range.upperBound)"
        case .double(let range): "a number of seconds from \(Self.format(range.lowerBound)) to \(Self.format(range.upperBound))"
        case .string: "a non-empty string"
        case .optionalString: "a non-empty string"
        case .logLevel: "one of " + LogLevel.allCases.map(\.name).joined(separator: ", ")
        case .database: "sqlite:PATH, a file path, or postgres://user:password@host:port/dbname"
        case .choice(let words): "one of " + words.joined(separator: ", ")
        case .addressRanges: "IP addresses or CIDR blocks (10.0.0.0/8, 2001:db8::/32), comma-separated"
        case .intOrAuto(let range, _): "auto, or an integer from \(range.lowerBound) to \(range.upperBound)"
        case .hostList: "host names, IP addresses or CIDR blocks (relay.internal, 10.0.0.5, 10.0.0.0/8), comma-separated"
        case .intList(let count, let each):
            "\(count.lowerBound) to \(count.upperBound) integers from \(each.lowerBound) to \(each.upperBound), comma-separated"
        case .optionalHex(let length): "\(length) hexadecimal characters"
        }
    }

    private static func format(_ d: Double) -> String { d == d.rounded() ? String(Int(d)) : String(d) }

    /// Validates text from the environment or a flag.
    func parse(text: String) -> Value? {
        switch self.kind {
        case .int(let range):
            guard let v = Int(text.trimmingASCIISpaces()), range.contains(v) else { return nil }
            return .int(v)
        case .intOrAuto(let range, let auto):
            let trimmed = text.trimmingASCIISpaces()
            if trimmed == "auto" { return .int(auto()) }
            guard let v = Int(trimmed), range.contains(v) else { return nil }
            return .int(v)
        case .double(let range):
            guard let v = Double(text.trimmingASCIISpaces()), v.isFinite, range.contains(v) else { return nil }
            return .double(v)
        case .string, .optionalString:
            return text.isEmpty ? nil : .string(text)
        case .logLevel:
            return LogLevel(name: text).map { .logLevel($0) }
        case .database:
            return Configuration.Database(parsing: text).map { .database($0) }
        case .choice(let words):
            return words.contains(text) ? .string(text) : nil
        case .addressRanges:
            var ranges: [IPAddressRange] = []
            for item in text.split(separator: ",") {
                let trimmed = String(item).trimmingASCIISpaces()
                guard !trimmed.isEmpty else { continue }
                guard let range = IPAddressRange(trimmed) else { return nil }
                ranges.append(range)
            }
            return .ranges(ranges)
        case .hostList:
            return Self.hosts(text.split(separator: ",").map { String($0).trimmingASCIISpaces() }.filter { !$0.isEmpty }.map(String.init))
        case .intList(let count, let each):
            var values: [Int] = []
            for item in text.split(separator: ",", omittingEmptySubsequences: false) {
                guard let v = Int(String(item).trimmingASCIISpaces()), each.contains(v) else { return nil }
                values.append(v)
            }
            return count.contains(values.count) ? .ints(values) : nil
        case .optionalHex(let length):
            return text.utf8.count == length && text.utf8.allSatisfy({ $0 < 128 && Character(Unicode.Scalar($0)).isHexDigit }) ? .string(text) : nil
        }
    }

    /// Each entry an IP address, a CIDR block or a host name (letters, digits, `-`, `.`).
    static func hosts(_ items: [String]) -> Value? {
        for item in items {
            if IPAddressRange(item) != nil { continue }
            let labels = item.lowercased().split(separator: ".", omittingEmptySubsequences: false)
            let valid = !item.isEmpty && item.utf8.count <= 253 && labels.allSatisfy { label in
                !label.isEmpty && label.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                    && label.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 45 }
            }
            // A name of digits only would be a number, not a host name.
            guard valid, !(labels.last?.allSatisfy(\.isNumber) ?? true) else { return nil }
        }
        return .strings(items)
    }

    /// Validates a value from the JSON file (types are checked, not coerced).
    func parse(json: JSONValue) -> Value? {
        switch (self.kind, json) {
        case (.int(let range), .number(let d)), (.intOrAuto(let range, _), .number(let d)):
            guard let v = Int(exactly: d), range.contains(v) else { return nil }
            return .int(v)
        case (.double(let range), .number(let d)):
            return range.contains(d) ? .double(d) : nil
        case (.optionalString, .null), (.optionalHex, .null):
            return .string(nil)
        case (.hostList, .array(let items)):
            var hosts: [String] = []
            for item in items {
                guard case .string(let text) = item else { return nil }
                hosts.append(text)
            }
            return Self.hosts(hosts)
        case (.intList(let count, let each), .array(let items)):
            var values: [Int] = []
            for item in items {
                guard case .number(let d) = item, let v = Int(exactly: d), each.contains(v) else { return nil }
                values.append(v)
            }
            return count.contains(values.count) ? .ints(values) : nil
        case (.addressRanges, .array(let items)):
            var ranges: [IPAddressRange] = []
            for item in items {
                guard case .string(let text) = item, let range = IPAddressRange(text) else { return nil }
                ranges.append(range)
            }
            return .ranges(ranges)
        case (_, .string(let s)):
            switch self.kind {
            case .int, .double, .addressRanges, .hostList, .intList: return nil
            default: return self.parse(text: s)
            }
        default:
            return nil
        }
    }
}

extension String {
    fileprivate func trimmingASCIISpaces() -> Substring {
        var s = self[...]
        while s.first == " " { s.removeFirst() }
        while s.last == " " { s.removeLast() }
        return s
    }
}

/// Builds a `Configuration` from, lowest to highest precedence: the defaults, a JSON
/// config file (`--config FILE` or `CONCORD_CONFIG`), `CONCORD_*` environment
/// variables, and command-line flags.
public enum ConfigurationLoader {
    private static let maxInt = Int(Int32.max)

    /// Every setting, in the order of the documentation.
    static let settings: [Setting] = [
        Setting(key: "server.host", kind: .string, flag: "--host") { $0.server.host = $1.string ?? $0.server.host },
        Setting(key: "server.port", kind: .int(0...65535), flag: "--port") { $0.server.port = $1.int },
        Setting(key: "server.eventLoops", kind: .int(0...256), flag: nil) { $0.server.eventLoops = $1.int },
        Setting(key: "server.threadScheduling", kind: .choice(["batch", "normal"]), flag: nil) {
            $0.server.threadScheduling = $1.string.flatMap(Configuration.ThreadScheduling.init(rawValue:)) ?? .batch
        },
        Setting(key: "server.limits.requestLineBytes", kind: .int(64...maxInt), flag: nil) { $0.server.limits.requestLineBytes = $1.int },
        Setting(key: "server.limits.headerBytes", kind: .int(256...maxInt), flag: nil) { $0.server.limits.headerBytes = $1.int },
        Setting(key: "server.limits.headerCount", kind: .int(1...maxInt), flag: nil) { $0.server.limits.headerCount = $1.int },
        Setting(key: "server.limits.bodyBytes", kind: .int(0...maxInt), flag: nil) { $0.server.limits.bodyBytes = $1.int },
        Setting(key: "server.limits.smallBodyBytes", kind: .int(1024...maxInt), flag: nil) { $0.server.limits.smallBodyBytes = $1.int },
        Setting(key: "server.limits.jsonElements", kind: .int(1...maxInt), flag: nil) { $0.server.limits.jsonElements = $1.int },
        Setting(key: "server.limits.libraryItems", kind: .int(1...maxInt), flag: nil) { $0.server.limits.libraryItems = $1.int },
        Setting(key: "server.limits.bodyBytesInFlight", kind: .int(0...maxInt), flag: nil) { $0.server.limits.bodyBytesInFlight = $1.int },
        Setting(key: "server.limits.maxBatch", kind: .int(1...maxInt), flag: nil) { $0.server.limits.maxBatch = $1.int },
        Setting(key: "server.limits.maxConnections", kind: .int(1...maxInt), flag: nil) { $0.server.limits.maxConnections = $1.int },
        Setting(key: "server.timeouts.headerRead", kind: .double(0.001...86_400), flag: nil) { $0.server.timeouts.headerRead = $1.double },
        Setting(key: "server.timeouts.bodyRead", kind: .double(0.001...86_400), flag: nil) { $0.server.timeouts.bodyRead = $1.double },
        Setting(key: "server.timeouts.minBodyRate", kind: .double(0...1e12), flag: nil) { $0.server.timeouts.minBodyRate = $1.double },
        Setting(key: "server.timeouts.bodyRateGrace", kind: .double(0.001...86_400), flag: nil) { $0.server.timeouts.bodyRateGrace = $1.double },
        Setting(key: "server.timeouts.idle", kind: .double(0.001...86_400), flag: nil) { $0.server.timeouts.idle = $1.double },
        Setting(key: "server.timeouts.write", kind: .double(0.001...86_400), flag: nil) { $0.server.timeouts.write = $1.double },
        Setting(key: "server.timeouts.shutdownGrace", kind: .double(0...3_600), flag: nil) { $0.server.timeouts.shutdownGrace = $1.double },
        Setting(key: "database", kind: .database, flag: "--database") {
            if case .database(let d) = $1 { $0.database = d }
        },
        Setting(key: "databasePoolSize", kind: .int(0...10_000), flag: nil) { $0.databasePoolSize = $1.int },
        Setting(key: "adminToken", kind: .optionalString, flag: "--admin-token") { $0.adminToken = $1.string },
        Setting(key: "logLevel", kind: .logLevel, flag: "--log-level") {
            if case .logLevel(let l) = $1 { $0.logLevel = l }
        },
        Setting(key: "history.maxChanges", kind: .int(1...maxInt), flag: nil) { $0.history.maxChanges = $1.int },
        Setting(key: "history.maxAgeDays", kind: .int(1...36_500), flag: nil) { $0.history.maxAgeDays = $1.int },
        Setting(key: "workers", kind: .int(0...1024), flag: nil) { $0.workers = $1.int },
        Setting(key: "quotas.devicesPerAccount", kind: .int(1...maxInt), flag: nil) { $0.quotas.devicesPerAccount = $1.int },
        Setting(key: "quotas.journalsPerAccount", kind: .int(1...maxInt), flag: nil) { $0.quotas.journalsPerAccount = $1.int },
        Setting(key: "quotas.entriesPerJournal", kind: .int(1...maxInt), flag: nil) { $0.quotas.entriesPerJournal = $1.int },
        Setting(key: "quotas.objectsPerDevice", kind: .int(1...maxInt), flag: nil) { $0.quotas.objectsPerDevice = $1.int },
        Setting(key: "quotas.recordsPerAccount", kind: .int(1...maxInt), flag: nil) { $0.quotas.recordsPerAccount = $1.int },
        // Byte bounds (DataBounds).
        Setting(key: "quotas.idempotencyBytesPerAccount", kind: .int(4096...maxInt), flag: nil) { $0.dataBounds.idempotencyBytesPerAccount = $1.int },
        Setting(key: "quotas.webhooksPerAccount", kind: .int(0...10_000), flag: nil) { $0.webhooks.settings.webhooksPerAccount = $1.int },
        Setting(key: "webhooks.allowedHosts", kind: .hostList, flag: nil) { $0.webhooks.allowedHosts = $1.strings },
        Setting(key: "webhooks.secretKey", kind: .optionalHex(length: 64), flag: nil) { $0.webhooks.secretKey = $1.string },
        Setting(key: "webhooks.timeoutSeconds", kind: .int(1...30), flag: nil) { $0.webhooks.settings.timeoutSeconds = $1.int },
        Setting(key: "webhooks.retrySchedule", kind: .intList(count: 1...20, each: 1...86_400), flag: nil) { $0.webhooks.settings.retrySchedule = $1.ints },
        Setting(key: "webhooks.disableAfterFailures", kind: .int(1...10_000), flag: nil) { $0.webhooks.settings.disableAfterFailures = $1.int },
        Setting(key: "webhooks.disableAfterSeconds", kind: .int(0...2_592_000), flag: nil) { $0.webhooks.settings.disableAfterSeconds = $1.int },
        Setting(key: "webhooks.leaseSeconds", kind: .int(11...86_400), flag: nil) { $0.webhooks.settings.leaseSeconds = $1.int },
        Setting(key: "webhooks.maxInFlight", kind: .int(1...10_000), flag: nil) { $0.webhooks.settings.maxInFlight = $1.int },
        Setting(key: "webhooks.logDays", kind: .int(1...365), flag: nil) { $0.webhooks.settings.logDays = $1.int },
        Setting(key: "webhooks.maxServerWebhooks", kind: .int(0...10_000), flag: nil) { $0.webhooks.settings.maxServerWebhooks = $1.int },
        Setting(key: "history.maxBytesPerDevice", kind: .int(1...maxInt), flag: nil) { $0.dataBounds.historyBytesPerDevice = $1.int },
        Setting(key: "server.limits.journalAnswerBytes", kind: .int(1...maxInt), flag: nil) { $0.dataBounds.journalAnswerBytes = $1.int },
        Setting(key: "rateLimits.perAddress", kind: .double(0...1e9), flag: nil) { $0.rateLimits.perAddress = $1.double },
        Setting(key: "rateLimits.perCaller", kind: .double(0...1e9), flag: nil) { $0.rateLimits.perCaller = $1.double },
        Setting(key: "rateLimits.burstSeconds", kind: .double(0.001...3600), flag: nil) { $0.rateLimits.burstSeconds = $1.double },
        Setting(key: "rateLimits.failedAuthCost", kind: .double(0...1e9), flag: nil) { $0.rateLimits.failedAuthCost = $1.double },
        Setting(key: "longPoll.maxWaitSeconds", kind: .double(0...3600), flag: nil) { $0.longPoll.maxWaitSeconds = $1.double },
        Setting(key: "longPoll.maxWaiting", kind: .int(0...maxInt), flag: nil) { $0.longPoll.maxWaiting = $1.int },
        Setting(key: "sqliteSynchronous", kind: .choice(["normal", "full"]), flag: nil) {
            $0.sqliteSynchronous = $1.string == "full" ? .full : .normal
        },
        Setting(key: "sqliteCacheMegabytes", kind: .int(1...65_536), flag: nil) { $0.sqliteCacheMegabytes = $1.int },
        Setting(key: "sqliteMmapMegabytes", kind: .int(0...1_048_576), flag: nil) { $0.sqliteMmapMegabytes = $1.int },
        Setting(key: "mappingIndexMegabytes", kind: .intOrAuto(0...1_048_576, auto: { MemoryLimit.indexMegabytes }), flag: nil) { $0.mappingIndexMegabytes = $1.int },
        Setting(key: "mappingIndexSnapshots", kind: .string, flag: nil) { $0.mappingIndexSnapshots = $1.string ?? "auto" },
        Setting(key: "mappingIndexSnapshotSeconds", kind: .int(0...86_400), flag: nil) { $0.mappingIndexSnapshotSeconds = $1.int },
        Setting(key: "mappingIndexInlineLoadObjects", kind: .int(0...1_000_000_000), flag: nil) { $0.mappingIndexInlineLoadObjects = $1.int },
        // The front door's hardening.
        Setting(key: "server.limits.maxConnectionsPerAddress", kind: .int(0...maxInt), flag: "--max-connections-per-address") {
            $0.server.limits.maxConnectionsPerAddress = $1.int
        },
        Setting(key: "server.trustedProxies", kind: .addressRanges, flag: "--trusted-proxies") { $0.server.trustedProxies = $1.ranges },
        Setting(key: "longPoll.maxWaitingPerAccount", kind: .int(0...maxInt), flag: "--max-waiting-per-account") {
            $0.longPoll.maxWaitingPerAccount = $1.int
        },
        Setting(key: "metricsToken", kind: .optionalString, flag: "--metrics-token") { $0.metricsToken = $1.string },
    ]

    /// Flags `serve` accepts: the settings' flags plus `--config`.
    static var flagNames: [String] { settings.compactMap(\.flag) + ["--config"] }

    /// Every key a config file may contain (dotted paths).
    public static var keys: [String] { settings.map(\.key) }

    /// Loads the configuration.
    /// - Parameters:
    ///   - flags: `(name, value)` pairs from the command line, e.g. `("--port", "8080")`, in order.
    ///   - environment: the process environment.
    public static func load(flags: [(name: String, value: String)], environment: [String: String]) throws(ConfigurationError) -> Configuration {
        var configuration = Configuration()

        let configPath = flags.last(where: { $0.name == "--config" })?.value ?? environment["CONCORD_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
        if let configPath {
            try self.apply(file: configPath, to: &configuration)
        }

        for setting in settings {
            let name = setting.environmentName
            guard let text = environment[name], !text.isEmpty else { continue }
            guard let value = setting.parse(text: text) else {
                throw ConfigurationError("invalid value \(quoted(text)) for \(name): expected \(setting.expected)")
            }
            setting.apply(&configuration, value)
        }

        for (name, text) in flags where name != "--config" {
            guard let setting = settings.first(where: { $0.flag == name }) else {
                throw ConfigurationError("unknown option \(name) (see 'concord help')")
            }
            guard let value = setting.parse(text: text) else {
                throw ConfigurationError("invalid value \(quoted(text)) for \(name): expected \(setting.expected)")
            }
            setting.apply(&configuration, value)
        }
        try self.checkTogether(configuration)
        return configuration
    }

    /// Settings each in range that cannot work together, each with the keys it names: refused at
    /// start like an out-of-range value, rather than served in a state that refuses requests.
    static let together: [(keys: [String], problem: @Sendable (Configuration) -> String?)] = [
        // An address's failures bucket holds `perAddress × burstSeconds` (at least 1); a failure
        // costing more could never be afforded, so every token not seen valid would be 429 for ever.
        (["rateLimits.failedAuthCost", "rateLimits.perAddress", "rateLimits.burstSeconds"], { c in
            let limits = c.rateLimits
            let bucket = max(1, limits.perAddress * limits.burstSeconds)
            guard limits.perAddress > 0, limits.failedAuthCost > bucket else { return nil }
            return "rateLimits.failedAuthCost (\(format(limits.failedAuthCost))) is more than an address's bucket, "
                + "rateLimits.perAddress × rateLimits.burstSeconds (\(format(bucket))): every token not seen valid would be refused 429 for ever; "
                + "expected a failedAuthCost of at most \(format(bucket)), or 0"
        }),
        // A claim must outlast the attempt it covers, or another instance would take the event over mid-attempt.
        (["webhooks.leaseSeconds", "webhooks.timeoutSeconds"], { c in
            let w = c.webhooks.settings
            guard w.leaseSeconds < w.timeoutSeconds + 10 else { return nil }
            return "webhooks.leaseSeconds (\(w.leaseSeconds)) must be at least webhooks.timeoutSeconds (\(w.timeoutSeconds)) + 10"
        }),
    ]

    /// The first of `together`'s problems in `configuration`, as the error.
    static func checkTogether(_ configuration: Configuration) throws(ConfigurationError) {
        for check in self.together {
            if let problem = check.problem(configuration) { throw ConfigurationError("conflicting settings: " + problem) }
        }
    }

    private static func format(_ d: Double) -> String { d == d.rounded() && abs(d) < 1e15 ? String(Int(d)) : String(d) }

    /// Reads a JSON config file over `configuration`. Unknown keys are errors: a typo
    /// must not silently leave a default in place.
    static func apply(file path: String, to configuration: inout Configuration) throws(ConfigurationError) {
        let bytes: [UInt8]
        switch readFile(path) {
        case .success(let b): bytes = b
        case .failure(let reason): throw ConfigurationError("cannot read config file \(path): \(reason)")
        }
        let root: JSONValue
        do {
            root = try JSONValue.parse(bytes)
        } catch {
            throw ConfigurationError("malformed config file \(path): \(error.message) at byte \(error.offset)")
        }
        guard case .object(let object) = root else {
            throw ConfigurationError("malformed config file \(path): expected a JSON object at the top level")
        }
        try self.apply(object: object, prefix: "", file: path, to: &configuration)
    }

    private static func apply(object: JSONObject, prefix: String, file: String, to configuration: inout Configuration) throws(ConfigurationError) {
        for (key, value) in object.members {
            let path = prefix.isEmpty ? key : prefix + "." + key
            if let setting = settings.first(where: { $0.key == path }) {
                guard let parsed = setting.parse(json: value) else {
                    throw ConfigurationError("invalid value \(describe(value)) for \(path) in \(file): expected \(setting.expected)")
                }
                setting.apply(&configuration, parsed)
            } else if settings.contains(where: { $0.key.hasPrefix(path + ".") }) {
                guard case .object(let inner) = value else {
                    throw ConfigurationError("invalid value \(describe(value)) for \(path) in \(file): expected an object")
                }
                try self.apply(object: inner, prefix: path, file: file, to: &configuration)
            } else {
                throw ConfigurationError("unknown key \(path) in \(file)")
            }
        }
    }

    private static func quoted(_ text: String) -> String {
        var writer = JSONWriter(capacity: text.utf8.count + 2)
        writer.string(text)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// A JSON value as written, shortened, for messages.
    private static func describe(_ value: JSONValue) -> String {
        var writer = JSONWriter(capacity: 64)
        writer.value(value)
        let text = String(decoding: writer.bytes, as: UTF8.self)
        return text.count > 60 ? String(text.prefix(57)) + "..." : text
    }

    /// The file's bytes, or the OS's reason it cannot be read.
    static func readFile(_ path: String) -> Result<[UInt8], ConfigurationError> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(ConfigurationError(String(cString: strerror(errno)))) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                bytes.append(contentsOf: chunk[0..<n])
                // A config file is small; refuse something absurd rather than eat memory.
                if bytes.count > 1 << 20 { return .failure(ConfigurationError("larger than 1 MiB")) }
            } else if n == 0 {
                return .success(bytes)
            } else if errno != EINTR {
                return .failure(ConfigurationError(String(cString: strerror(errno))))
            }
        }
    }
}
