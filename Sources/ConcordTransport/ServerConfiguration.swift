import CConcordSystem
import ConcordHTTP
import Glibc

/// Everything the transport needs to know to listen and to protect itself.
public struct ServerConfiguration: Sendable {
    /// Address to listen on: an IPv4 or IPv6 literal (`0.0.0.0`, `127.0.0.1`, `::`) or a name (`localhost`).
    public var host: String = "0.0.0.0"
    /// TCP port; 0 asks the kernel for an ephemeral port (`start()` returns it).
    public var port: Int = 8080
    /// Parser limits: request line (414), header section (431), body (413).
    public var limits: HTTPLimits = HTTPLimits()
    /// Connections served at once; beyond it a new connection gets `503 tooManyConnections`
    /// with `Retry-After: 1` and is closed.
    public var maxConnections: Int = 10_000
    /// Connections served at once from one client address (0: no cap of its own), so one
    /// address cannot take every place; beyond it the same `503 tooManyConnections` with
    /// `Retry-After: 1`. Addresses in `trustedProxies` are not capped (every client behind a
    /// reverse proxy shares its address).
    public var maxConnectionsPerAddress: Int = 1_000
    /// Reverse proxies (their own addresses): not capped by `maxConnectionsPerAddress`. The
    /// application also believes their `Forwarded` / `X-Forwarded-For` headers.
    public var trustedProxies: [IPAddressRange] = []
    /// Seconds from accept (or from the first byte of a later request) until the request
    /// head must be complete; then `408 requestTimeout` and close. Dribbling does not extend it.
    public var headerReadTimeout: Double = 10
    /// Seconds without progress while reading a body; then `408 requestTimeout` and close.
    public var bodyReadTimeout: Double = 60
    /// Slowest average body rate in bytes per second (0: no floor), judged once a body has taken
    /// `bodyRateGrace` seconds; slower is `408` (a trickle of bytes cannot hold a connection).
    public var minBodyRate: Double = 1024
    public var bodyRateGrace: Double = 5
    /// Seconds a kept-alive connection may sit idle between requests; then it is closed quietly.
    public var idleTimeout: Double = 75
    /// Event loops (threads), each with its own epoll instance. Defaults to the number of cores.
    public var eventLoopCount: Int = ServerConfiguration.coreCount
    /// Loop threads run under the batch scheduling policy (Linux `SCHED_BATCH`): a loop woken by a
    /// worker's answer does not preempt that worker. With the workers under it too (the app's
    /// compute pool), on a core they share each runs through what is queued before the other takes
    /// over, instead of a context switch per request each way. A system that refuses the policy
    /// leaves the default one: only preemption differs, so the loop runs on either way.
    public var batchScheduling = true
    /// Pending output per connection above which the transport stops reading from it
    /// (and stops dispatching its pipelined requests) until the client has drained it.
    public var maxPendingOutputBytes: Int = 1 << 20
    /// Request body bytes the server holds at once, across connections (declared lengths of
    /// bodies being read or with the responder). A body that would go over it is refused from
    /// its head with `503 unavailable` and `Retry-After`, unread.
    public var maxBodyBytesInFlight: Int = 256 << 20
    /// A body still to come when its head is complete and larger than this is admitted by the
    /// responder from the head (the token, the route's limit) and counted in
    /// `maxBodyBytesInFlight` before it is read. 0: every such body, however small, so that a
    /// client without a valid token cannot hold even a small body open.
    public var admitBodiesOver: Int = 0
    /// Seconds a connection may have output pending without the client taking any of it;
    /// then it is closed (a client that never reads cannot pin memory and a slot forever).
    public var writeTimeout: Double = 60
    /// Seconds a closing connection keeps reading and discarding after an error answer,
    /// so the client reads the answer instead of a reset.
    public var lingerTimeout: Double = 1.5

    /// Defaults everywhere; set fields afterwards.
    public init() {}

    /// Defaults with a host and port.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// The cores this process can use, at least 1: online processors, fewer when the affinity
    /// mask (`taskset`, a cpuset) or a cgroup v2 CPU quota (`docker run --cpus`) allows fewer —
    /// threads beyond that only take turns on the same cores.
    public static var coreCount: Int {
        var count = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        let allowed = Int(concord_affinity_cpu_count())
        if allowed > 0 { count = count > 0 ? min(count, allowed) : allowed }
        if let quota = cgroupCPUQuota() { count = count > 0 ? min(count, quota) : quota }
        return count > 0 ? count : 1
    }

    /// `cpu.max` of the process's cgroup (v2) as whole cores, rounded up; nil without a quota.
    static func cgroupCPUQuota(_ cpuMax: String? = readSmallFile("/sys/fs/cgroup/cpu.max")) -> Int? {
        guard let fields = cpuMax?.split(whereSeparator: { $0 == " " || $0 == "\n" }), fields.count >= 2,
              let quota = Double(fields[0]), let period = Double(fields[1]), quota > 0, period > 0 else { return nil }
        return max(1, Int((quota / period).rounded(.up)))
    }
}

/// Things the transport wants the application to know about (for logs and metrics).
public enum TransportEvent: Sendable {
    /// The listener is bound; `port` is the real one (useful with port 0).
    case listening(host: String, port: Int)
    /// A connection failed in a way worth logging (not ordinary resets).
    case connectionError(String)
    /// `accept` failed (e.g. EMFILE); the listener pauses ~100 ms and retries.
    case acceptError(errno: Int32)
    /// A request was refused by the transport itself (parse error, limit, timeout, 503).
    case protocolError(status: Int, name: String)
}

/// The first bytes of a small system file (a cgroup setting), nil when it cannot be read.
func readSmallFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 128)
    let count = read(fd, &buffer, buffer.count)
    return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
}
