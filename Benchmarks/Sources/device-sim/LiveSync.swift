// Idle long-polls. Opens `--waiters` connections, each holding
// `GET /v1/journals/changes?since=T&wait=60` for its account's journal feed, and measures
//   - the server's resident memory added per held poll (target ≤ 4 KiB), against the peer's
//     memory per idle keep-alive connection (the cheapest thing a connection can be);
//   - wake-up latency: a journal created through one of an account's devices wakes that
//     account's held polls; the time from sending the write to each answer (p50/p99, target
//     p99 ≤ 50 ms). Every woken connection polls again, so the server keeps holding them all.
#if canImport(Glibc)
import Glibc
#endif
import ConcordJSON
import Foundation

/// A blocking connection used without a thread: requests are written whole, answers read when
/// poll(2) says the socket is readable.
final class HeldConnection {
    let fd: Int32
    private var received: [UInt8] = []

    init(port: Int) throws {
        self.fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard self.fd >= 0 else { throw ClientError(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(self.fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(self.fd)
            throw ClientError(description: "connect: errno \(errno)")
        }
    }

    deinit { close(self.fd) }

    func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(self.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw ClientError(description: "send: errno \(errno)") }
            sent += n
        }
    }

    /// Reads what is there; returns a whole answer (status, body) once one has arrived.
    func readAnswer() throws -> (status: Int, body: [UInt8])? {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let n = chunk.withUnsafeMutableBytes { recv(self.fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { throw ClientError(description: "connection closed while waiting") }
        self.received += chunk[0..<n]
        guard let headEnd = self.received.indices.dropLast(3).first(where: {
            self.received[$0] == 13 && self.received[$0 + 1] == 10 && self.received[$0 + 2] == 13 && self.received[$0 + 3] == 10
        }) else { return nil }
        let head = String(decoding: self.received[..<headEnd], as: UTF8.self)
        let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        guard self.received.count >= headEnd + 4 + length else { return nil }
        let status = Int(head.split(separator: " ")[1]) ?? 0
        let body = Array(self.received[(headEnd + 4)..<(headEnd + 4 + length)])
        self.received.removeFirst(headEnd + 4 + length)
        return (status, body)
    }
}

/// Waits until every connection in `waiting` has a whole answer (or `timeout` passes); returns
/// each answer with when it arrived.
func collectAnswers(_ waiting: [HeldConnection], timeout: Double) throws -> [(index: Int, status: Int, body: [UInt8], at: Double)] {
    var pending = Set(waiting.indices)
    var answers: [(index: Int, status: Int, body: [UInt8], at: Double)] = []
    let deadline = now() + timeout
    while !pending.isEmpty {
        let order = Array(pending)
        var fds = order.map { pollfd(fd: waiting[$0].fd, events: Int16(POLLIN), revents: 0) }
        let left = deadline - now()
        guard left > 0 else { throw ClientError(description: "\(pending.count) polls not answered within \(timeout) s") }
        let ready = poll(&fds, nfds_t(fds.count), Int32(min(left, 1) * 1000))
        if ready <= 0 { continue }
        let at = now()
        for (slot, index) in order.enumerated() where fds[slot].revents != 0 {
            if let (status, body) = try waiting[index].readAnswer() {
                answers.append((index, status, body, at))
                pending.remove(index)
            }
        }
    }
    return answers
}

func liveSyncScenario(_ s: Settings) throws {
    let waiters = max(1, s.waiters)
    let accounts = max(1, waiters / 100)
    let devicesPerAccount = 10
    let pollsPerDevice = max(1, waiters / (accounts * devicesPerAccount))
    let total = accounts * devicesPerAccount * pollsPerDevice
    log("live sync: \(accounts) accounts × \(devicesPerAccount) devices × \(pollsPerDevice) polls = \(total) held polls")

    // Accounts and devices; each account's journal token.
    var devices: [(account: Int, token: String)] = []
    var tokens: [String] = []
    for a in 0..<accounts {
        let account = try parseObject(try call(s.port, RawRequest("POST", "/v1/accounts", token: s.adminToken, body: Array(#"{"name":"Live \#(a)"}"#.utf8)), expect: 201))
        let accountToken = try stringField(account, "accountToken")
        for d in 0..<devicesPerAccount {
            let device = try parseObject(try call(s.port, RawRequest("POST", "/v1/devices", token: accountToken, body: Array(#"{"name":"D\#(d)"}"#.utf8)), expect: 201))
            devices.append((a, try stringField(device, "deviceToken")))
        }
        let token = try parseObject(try call(s.port, RawRequest("GET", "/v1/journals/token", token: devices.last!.token)))
        tokens.append(try stringField(token, "changeToken"))
    }
    func pollRequest(_ device: (account: Int, token: String), since: String) -> [UInt8] {
        let encoded = since.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? since
        return RawRequest("GET", "/v1/journals/changes?since=\(encoded)&wait=60", token: device.token).bytes
    }

    // Memory before and after the polls are held (settled: a second apart, the smaller reading).
    func settledRSS(_ process: ServerProcess) -> Double {
        usleep(1_000_000)
        let first = process.memoryMiB("VmRSS")
        usleep(1_000_000)
        return min(first, process.memoryMiB("VmRSS"))
    }
    guard let server = s.server else { throw ClientError(description: "live sync needs --pid") }
    let before = settledRSS(server)
    var connections: [HeldConnection] = []
    var owners: [Int] = []   // connection → device index
    connections.reserveCapacity(total)
    for (index, device) in devices.enumerated() {
        for _ in 0..<pollsPerDevice {
            let connection = try HeldConnection(port: s.port)
            try connection.write(pollRequest(device, since: tokens[device.account]))
            connections.append(connection)
            owners.append(index)
        }
    }
    // All held? The server's gauge says.
    let deadline = now() + 60
    var held = 0
    while now() < deadline {
        let metrics = String(decoding: try call(s.port, RawRequest("GET", "/metrics")), as: UTF8.self)
        held = metrics.split(separator: "\n").first { $0.hasPrefix("concord_long_poll_waiting ") }
            .flatMap { Double($0.split(separator: " ")[1]) }.map(Int.init) ?? 0
        if held >= total { break }
        usleep(200_000)
    }
    guard held >= total else { throw ClientError(description: "the server holds \(held) of \(total) polls") }
    let after = settledRSS(server)
    let perPollBytes = (after - before) * 1024 * 1024 / Double(total)
    log("held \(held) polls: RSS \(f(before, 1)) → \(f(after, 1)) MiB")

    // Wake-ups: a journal created in one account after another; its polls answer and poll again.
    var latencies: [Double] = []
    let rounds = max(1, s.rounds) * 10
    let cpuBefore = server.cpuSeconds()
    for round in 0..<rounds {
        let account = round % accounts
        let members = connections.indices.filter { devices[owners[$0]].account == account }
        let writer = devices.first { $0.account == account }!
        let sentAt = now()
        let created = try call(s.port, RawRequest("POST", "/v1/journals", token: writer.token, body: Array(#"{"title":"Round \#(round)"}"#.utf8)), expect: 201)
        _ = created
        let answers = try collectAnswers(members.map { connections[$0] }, timeout: 10)
        for answer in answers {
            guard answer.status == 200 else { throw ClientError(description: "a woken poll answered \(answer.status)") }
            latencies.append((answer.at - sentAt) * 1000)
        }
        let page = try parseObject(answers[0].body)
        tokens[account] = try stringField(page, "changeToken")
        for index in members { try connections[index].write(pollRequest(devices[owners[index]], since: tokens[account])) }
    }
    let cpu = server.cpuSeconds() - cpuBefore
    latencies.sort()
    func percentile(_ p: Double) -> Double { latencies[min(latencies.count - 1, max(0, Int((p / 100 * Double(latencies.count)).rounded(.up)) - 1))] }

    // The peer: the same number of idle keep-alive connections (one GET /health each, then idle).
    var peerPerConnection: Double?
    if let peerPort = s.peerPort, let peer = s.peer {
        connections.removeAll()   // closes ours first: the client's own descriptors are limited too
        let peerBefore = settledRSS(peer)
        var idle: [HeldConnection] = []
        idle.reserveCapacity(total)
        for _ in 0..<total {
            let connection = try HeldConnection(port: peerPort)
            try connection.write(RawRequest("GET", "/health").bytes)
            idle.append(connection)
        }
        _ = try collectAnswers(idle, timeout: 60)
        let peerAfter = settledRSS(peer)
        peerPerConnection = (peerAfter - peerBefore) * 1024 * 1024 / Double(total)
        log("peer: \(total) idle connections: RSS \(f(peerBefore, 1)) → \(f(peerAfter, 1)) MiB")
    }

    print(markdown: "", "## Live sync — \(total) held long-polls (\(accounts) accounts × \(devicesPerAccount) devices × \(pollsPerDevice))", "")
    print(markdown: "| metric | Concord | Hummingbird 2 (idle keep-alive) | Concord/Hummingbird | target |", "|---|---:|---:|---:|---|")
    let peerText = peerPerConnection.map { f($0, 0) } ?? "—"
    let ratioText = peerPerConnection.map { $0 > 0 ? f(perPollBytes / $0) + "×" : "—" } ?? "—"
    print(markdown: "| resident bytes per held connection | \(f(perPollBytes, 0)) | \(peerText) | \(ratioText) | ≤ 4096 \(met(perPollBytes <= 4096)) |")
    print(markdown: "| wake-up latency p50 (ms), write sent → answer | \(f(percentile(50))) | | | |")
    print(markdown: "| wake-up latency p99 (ms) | \(f(percentile(99))) | | | ≤ 50 \(met(percentile(99) <= 50)) |")
    print(markdown: "| wake-ups measured | \(latencies.count) (\(rounds) writes × \(devicesPerAccount * pollsPerDevice) polls) | | | |")
    print(markdown: "| server CPU per wake-up (µs), write and re-poll included | \(f(cpu / Double(latencies.count) * 1e6, 0)) | | | |")
    print(markdown: "| server RSS with the polls held (MiB) | \(f(after, 1)) (before: \(f(before, 1))) | | | |")
}
