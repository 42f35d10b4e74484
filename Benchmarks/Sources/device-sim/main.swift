// device-sim: simulates the devices of one account against a running Concord and measures the
// mapping routes, the change feed and journals, side by side with the
// Hummingbird peer's echo of the same batches. Prints Markdown on stdout, progress on stderr.
//
//   device-sim soak --ports P[,P2] --pids ... (see Soak.swift)
//   device-sim mapping|journal|livesync --port P --admin-token T [--pid PID]
//              [--peer-port Q --peer-pid QPID] [--assets 100000] [--devices 5] [--clients 16]
//              [--batch 1000] [--seconds 5] [--rounds 2] [--waiters 10000] [--keyed | --keyed-hashed]
//
// Run by `Benchmarks/run mapping` / `Benchmarks/run journal` (see docs/benchmarks.md).
import ConcordJSON
import Foundation

func log(_ message: String) {
    FileHandle.standardError.write(Data("[device-sim] \(message)\n".utf8))
}

func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

func intOption(_ name: String, _ fallback: Int) -> Int { option(name).flatMap { Int($0) } ?? fallback }

struct Settings {
    var scenario: String
    var port: Int
    var adminToken: String
    var server: ServerProcess?
    var peerPort: Int?
    var peer: ServerProcess?
    var assets: Int
    var devices: Int
    var clients: Int
    var batch: Int
    var seconds: Double
    var rounds: Int
    /// livesync: long-polls to hold.
    var waiters: Int
    /// mapping: devices send PhotoKit keys and no fingerprints.
    var keyed: Bool
    /// mapping: devices send PhotoKit keys and fingerprints.
    var keyedHashed: Bool
}

let arguments = CommandLine.arguments
// The soak takes its own options (several instances): Soak.swift.
if arguments.count > 1 && arguments[1] == "soak" {
    do { try soakScenario() } catch { log("soak failed: \(error)"); exit(1) }
    exit(0)
}
guard arguments.count > 1, ["mapping", "journal", "livesync"].contains(arguments[1]),
      let port = option("--port").flatMap({ Int($0) }), let adminToken = option("--admin-token") else {
    log("usage: device-sim mapping|journal|livesync --port P --admin-token T [--pid PID] [--peer-port Q --peer-pid QPID] [--assets N] [--devices N] [--clients N] [--batch N] [--seconds S] [--rounds R] [--waiters N]")
    exit(2)
}
let settings = Settings(
    scenario: arguments[1], port: port, adminToken: adminToken,
    server: option("--pid").flatMap { Int32($0) }.map { ServerProcess(pid: $0) },
    peerPort: option("--peer-port").flatMap { Int($0) },
    peer: option("--peer-pid").flatMap { Int32($0) }.map { ServerProcess(pid: $0) },
    assets: max(1000, intOption("--assets", 100_000)),
    devices: max(2, intOption("--devices", 5)),
    clients: max(1, intOption("--clients", 16)),
    batch: max(1, intOption("--batch", 1000)),
    seconds: Double(option("--seconds") ?? "5") ?? 5,
    rounds: max(1, intOption("--rounds", 2)),
    waiters: intOption("--waiters", 10_000),
    keyed: CommandLine.arguments.contains("--keyed"),
    keyedHashed: CommandLine.arguments.contains("--keyed-hashed")
)

do {
    if settings.scenario == "mapping" {
        try mappingScenario(settings)
    } else if settings.scenario == "livesync" {
        try liveSyncScenario(settings)
    } else {
        try journalScenario(settings)
    }
} catch {
    log("failed: \(error)")
    exit(1)
}
