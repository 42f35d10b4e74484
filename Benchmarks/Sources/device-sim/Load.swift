// Concurrent load: N threads, each with its own keep-alive connection, sending pre-built
// requests; latencies and the server's CPU time (from /proc) around the measured phase.
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// Monotonic time in seconds.
func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// A server process seen through /proc: CPU time (utime + stime) and memory high-water mark.
struct ServerProcess: Sendable {
    var pid: Int32

    /// utime + stime in seconds. Fields 14 and 15 of /proc/<pid>/stat, counted after the
    /// command name's closing parenthesis (the name may contain spaces).
    func cpuSeconds() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(self.pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After ")": state is field 3, so utime (14) and stime (15) are at 11 and 12.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// A `Vm…:` line of /proc/<pid>/status in MiB (VmHWM: peak resident set; VmRSS: current).
    func memoryMiB(_ field: String) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(self.pid)/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            let kib = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Double($0) } ?? 0
            return kib / 1024
        }
        return 0
    }
}

/// What one load phase measured.
struct LoadResult {
    var requests = 0
    var seconds = 0.0
    var latenciesMS: [Double] = []
    var errors = 0
    var firstError: String?
    var serverCPU = 0.0
    /// Answers by request index (only when asked for, and only for a single pass).
    var bodies: [[UInt8]] = []

    var requestsPerSecond: Double { self.seconds > 0 ? Double(self.requests) / self.seconds : 0 }
    func percentile(_ p: Double) -> Double {
        guard !self.latenciesMS.isEmpty else { return 0 }
        let sorted = self.latenciesMS.sorted()
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }
    /// Server CPU per request, milliseconds.
    var cpuPerRequestMS: Double { self.requests > 0 ? self.serverCPU / Double(self.requests) * 1000 : 0 }

    mutating func merge(_ other: LoadResult) {
        self.requests += other.requests
        self.seconds += other.seconds
        self.latenciesMS += other.latenciesMS
        self.errors += other.errors
        self.firstError = self.firstError ?? other.firstError
        self.serverCPU += other.serverCPU
    }
}

/// Hands a connection to the one thread that will use it.
/// Safe: each box is created on the main thread and then used by exactly one worker thread.
final class ConnectionBox: @unchecked Sendable {
    let connection: HTTPConnection
    init(_ connection: HTTPConnection) { self.connection = connection }
}

/// State shared by the load threads.
final class LoadShared: Sendable {
    let next = Atomic<Int>(0)
    let results = Mutex<[(index: Int, latency: Double, status: Int, body: [UInt8]?, error: String?)]>([])
}

/// Sends `requests` from `clients` concurrent connections: each request once (`duration` nil),
/// or round-robin until `duration` seconds have passed. A request answered with a status other
/// than `expect` counts as an error.
func runLoad(
    port: Int, clients: Int, requests: [RawRequest], duration: Double? = nil,
    server: ServerProcess?, keepBodies: Bool = false, expect: Int = 200
) throws -> LoadResult {
    precondition(!requests.isEmpty, "runLoad needs requests")   // a programming error, not input
    let boxes = try (0..<clients).map { _ in ConnectionBox(try HTTPConnection(port: port)) }
    let shared = LoadShared()
    let total = requests.count
    let done = DispatchGroup()
    let cpuBefore = server?.cpuSeconds() ?? 0
    let started = now()
    let deadline = duration.map { started + $0 }
    for box in boxes {
        done.enter()
        let thread = Thread {
            var local: [(index: Int, latency: Double, status: Int, body: [UInt8]?, error: String?)] = []
            while true {
                let n = shared.next.wrappingAdd(1, ordering: .relaxed).oldValue
                if let deadline {
                    if now() >= deadline { break }
                } else if n >= total { break }
                let index = n % total
                let t0 = now()
                do {
                    let answer = try box.connection.send(requests[index])
                    let latency = (now() - t0) * 1000
                    local.append((index, latency, answer.status,
                                  keepBodies || answer.status != expect ? answer.body : nil,
                                  answer.status == expect ? nil : "status \(answer.status): \(String(decoding: answer.body.prefix(300), as: UTF8.self))"))
                } catch {
                    local.append((index, (now() - t0) * 1000, 0, nil, "\(error)"))
                    break
                }
            }
            shared.results.withLock { $0 += local }
            done.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    done.wait()
    let elapsed = now() - started
    let cpuAfter = server?.cpuSeconds() ?? 0
    var result = LoadResult()
    result.seconds = elapsed
    result.serverCPU = cpuAfter - cpuBefore
    let all = shared.results.withLock { $0 }
    result.requests = all.count
    result.latenciesMS = all.map(\.latency)
    if keepBodies && duration == nil {
        result.bodies = Array(repeating: [], count: total)
    }
    for item in all {
        if let error = item.error {
            result.errors += 1
            if result.firstError == nil { result.firstError = error }
        }
        if keepBodies && duration == nil, let body = item.body { result.bodies[item.index] = body }
    }
    return result
}

/// One request on a fresh connection, status checked: for the set-up steps.
func call(_ port: Int, _ request: RawRequest, expect: Int = 200) throws -> [UInt8] {
    let connection = try HTTPConnection(port: port)
    let answer = try connection.send(request)
    guard answer.status == expect else {
        throw ClientError(description: "expected \(expect), got \(answer.status): \(String(decoding: answer.body.prefix(400), as: UTF8.self))")
    }
    return answer.body
}
