#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ConcordDomain
import ConcordHTTP
import ConcordJSON
import Synchronization

/// `concord webhooks listen --port P --secret whsec_… [--secret …] [--host H]`: a receiver for
/// development, as `stripe listen` is. Register `http://HOST:P/` as a webhook (with the host in
/// `webhooks.allowedHosts`), run this with the secret the create answer gave, and each verified
/// event is one line on stdout: `<type> <id> <data>`. Rejections and duplicates go to stderr.
///
/// It answers as a relay should: `204` for a verified event (also for a repeat, which it does not
/// print again), `400` when a Standard Webhooks header is missing or malformed, `401` for a bad
/// signature or a timestamp more than 5 minutes from this machine's clock, `405` for anything but
/// POST. One connection at a time, each closed after its answer: it is a tool, not a server.
enum WebhooksCommand {
    static let usage = "usage: concord webhooks listen --port P --secret whsec_... [--secret whsec_...] [--host 127.0.0.1]"

    /// Runs the arguments after `webhooks`; returns the exit status (2 for a usage error, 1 when
    /// it cannot listen). Serves until the process is stopped.
    static func run(_ arguments: [String], environment: [String: String]) -> Int32 {
        guard arguments.first == "listen" else {
            printError("concord: \(arguments.first.map { "unknown webhooks command \($0)" } ?? "missing webhooks command") (\(self.usage))")
            return 2
        }
        let flags: [(name: String, value: String)]
        do {
            flags = try OperatorCommands.flags(Array(arguments.dropFirst()), known: ["--port", "--secret", "--host"])
        } catch {
            printError("concord: \(error.message) (\(self.usage))")
            return 2
        }
        guard let portText = flags.last(where: { $0.name == "--port" })?.value, let port = Int(portText), (0...65535).contains(port) else {
            printError("concord: --port needs a port number 0-65535 (\(self.usage))")
            return 2
        }
        let secretTexts = flags.filter { $0.name == "--secret" }.map(\.value)
        guard !secretTexts.isEmpty else {
            printError("concord: missing --secret whsec_... (the secret the webhook's create or rotate-secret answer gave) (\(self.usage))")
            return 2
        }
        var secrets: [WebhookSecret] = []
        for text in secretTexts {
            guard let secret = WebhookSecret(parsing: text) else {
                printError("concord: --secret must be whsec_ followed by the base64 of 24-64 bytes")
                return 2
            }
            secrets.append(secret)
        }
        let host = flags.last(where: { $0.name == "--host" })?.value ?? "127.0.0.1"
        let listener: WebhookListener
        do {
            listener = try WebhookListener(host: host, port: port, receiver: WebhookReceiver(secrets: secrets),
                                           printEvent: { printToStdout($0 + "\n") }, printNote: { printError($0) })
        } catch {
            printError("concord: \(error.message)")
            return 1
        }
        printError("concord: listening for webhooks on http://\(host.contains(":") ? "[\(host)]" : host):\(listener.port)/ (Ctrl-C to stop)")
        listener.serve()
        return 0
    }
}

/// What the listener does with one request, apart from sockets: verify, deduplicate, describe.
struct WebhookReceiver {
    /// What became of a request.
    enum Outcome: Equatable {
        /// Verified and new: the line to print.
        case event(String)
        /// Verified, already seen: answered 204, not printed again.
        case duplicate(id: String)
        /// Refused with `status`, for `reason`.
        case rejected(status: Int, reason: String)

        var status: Int {
            switch self {
            case .event, .duplicate: 204
            case .rejected(let status, _): status
            }
        }
    }

    /// How many event IDs are remembered for deduplication (the oldest are forgotten first).
    static let rememberedIDs = 100_000

    let secrets: [WebhookSecret]
    let tolerance: Int
    private var seen: Set<String> = []
    private var seenOrder: [String] = []
    private var oldest = 0

    init(secrets: [WebhookSecret], tolerance: Int = WebhookSigning.defaultTolerance) {
        self.secrets = secrets
        self.tolerance = tolerance
    }

    /// Verifies before parsing anything (the order a relay must follow), then deduplicates on
    /// `webhook-id`, then reads the body for the printed line.
    mutating func receive(method: String, headers: HTTPHeaders, body: [UInt8], now: Int) -> Outcome {
        guard method == "POST" else { return .rejected(status: 405, reason: "method \(method) (webhooks are POSTed)") }
        guard let id = headers[first: "webhook-id"], let timestampText = headers[first: "webhook-timestamp"],
              let signature = headers[first: "webhook-signature"] else {
            return .rejected(status: 400, reason: "missing webhook-id, webhook-timestamp or webhook-signature")
        }
        guard let timestamp = WebhookSigning.parseTimestamp(timestampText) else {
            return .rejected(status: 400, reason: "webhook-timestamp is not integer Unix seconds")
        }
        guard abs(now - timestamp) <= self.tolerance else {
            return .rejected(status: 401, reason: "webhook-timestamp is \(now - timestamp) s from this machine's clock (more than \(self.tolerance) s) for \(id)")
        }
        guard WebhookSigning.verify(header: signature, id: id, timestamp: timestamp, body: body, secrets: self.secrets,
                                    now: now, tolerance: self.tolerance) else {
            return .rejected(status: 401, reason: "signature does not match the secret for \(id)")
        }
        guard self.remember(id) else { return .duplicate(id: id) }
        return .event(Self.describe(id: id, body: body))
    }

    /// `<type> <id> <data as compact JSON>`; a body that is not an event object prints as it came.
    static func describe(id: String, body: [UInt8]) -> String {
        guard let value = try? JSONValue.parse(body), case .object(let event) = value,
              case .string(let type)? = event["type"] else {
            return "? \(id) \(String(decoding: body, as: UTF8.self))"
        }
        var writer = JSONWriter()
        writer.value(event["data"] ?? .null)
        return "\(type) \(id) \(String(decoding: writer.bytes, as: UTF8.self))"
    }

    /// True when `id` is new (and now remembered); false for a repeat.
    private mutating func remember(_ id: String) -> Bool {
        guard self.seen.insert(id).inserted else { return false }
        if self.seenOrder.count < Self.rememberedIDs {
            self.seenOrder.append(id)
        } else {
            // A ring: forget the oldest ID in its slot.
            self.seen.remove(self.seenOrder[self.oldest])
            self.seenOrder[self.oldest] = id
            self.oldest = (self.oldest + 1) % Self.rememberedIDs
        }
        return true
    }
}

/// A small blocking HTTP/1.1 server for `concord webhooks listen`: accepts one connection at a
/// time, reads one request with ConcordHTTP's parser, answers with `Connection: close`.
///
/// `@unchecked Sendable`: `serve()` runs on one thread and alone touches the receiver; `stop()`,
/// from any thread, touches only an atomic flag and the listening socket (shutdown wakes `accept`).
final class WebhookListener: @unchecked Sendable {
    struct Failure: Error { var message: String }

    /// Reads and writes on a connection give up after this long, so a stuck sender cannot hold
    /// the listener.
    static let ioTimeoutSeconds = 10
    /// Largest body accepted; Concord's events are at most 2 KiB.
    static let maxBodyBytes = 1 << 20

    /// The port bound (the one the kernel chose when asked for 0).
    let port: Int
    private let fd: Int32
    private var receiver: WebhookReceiver
    private let printEvent: (String) -> Void
    private let printNote: (String) -> Void
    private let stopped = Atomic(false)

    init(host: String, port: Int, receiver: WebhookReceiver,
         printEvent: @escaping (String) -> Void, printNote: @escaping (String) -> Void) throws(Failure) {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let info = list else {
            throw Failure(message: "cannot resolve \(host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(message: "cannot create a socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0, listen(fd, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Failure(message: "cannot listen on \(host):\(port): \(reason)")
        }
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let family = Int32(address.ss_family)
        self.port = withUnsafePointer(to: &address) { pointer -> Int in
            if family == AF_INET6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
        self.fd = fd
        self.receiver = receiver
        self.printEvent = printEvent
        self.printNote = printNote
    }

    /// Serves until `stop()`; closes the listening socket on the way out.
    func serve() {
        defer { close(self.fd) }
        while true {
            let connection = accept(self.fd, nil, nil)   // blocking: one connection at a time
            if self.stopped.load(ordering: .acquiring) {
                if connection >= 0 { close(connection) }
                return
            }
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                // Out of descriptors or memory: wait a little rather than spin.
                usleep(100_000)
                continue
            }
            self.handle(connection)
            close(connection)
        }
    }

    /// Makes `serve()` return (from any thread).
    func stop() {
        self.stopped.store(true, ordering: .releasing)
        shutdown(self.fd, Int32(SHUT_RDWR))
    }

    private func handle(_ connection: Int32) {
        var timeout = timeval(tv_sec: Self.ioTimeoutSeconds, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var parser = HTTPRequestParser(limits: HTTPLimits(maxBodyBytes: Self.maxBodyBytes))
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        var continueSent = false
        while true {
            do {
                while let event = try parser.next() {
                    switch event {
                    case .head(let head):
                        if head.expectsContinue && !continueSent {
                            continueSent = true
                            self.send(connection, HTTPResponseWriter.continueResponse)
                        }
                    case .request(let request, _):
                        let outcome = self.receiver.receive(method: request.method, headers: request.headers, body: request.body,
                                                            now: Int(time(nil)))
                        self.report(outcome)
                        var headers = HTTPHeaders()
                        if outcome.status == 405 { headers.add(name: "Allow", value: "POST") }
                        self.answer(connection, HTTPResponse(status: outcome.status, headers: headers))
                        return
                    }
                }
            } catch {
                self.printNote("concord: refused a request: \(error.status) \(error.message)")
                self.answer(connection, error.response)
                return
            }
            let n = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                chunk.withUnsafeBytes { parser.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return   // closed, reset, or silent past the timeout: nothing to answer
            }
        }
    }

    private func report(_ outcome: WebhookReceiver.Outcome) {
        switch outcome {
        case .event(let line): self.printEvent(line)
        case .duplicate(let id): self.printNote("concord: \(id) again (a redelivery or retry); answered 204, not printed")
        case .rejected(let status, let reason): self.printNote("concord: answered \(status): \(reason)")
        }
    }

    private func answer(_ connection: Int32, _ response: HTTPResponse) {
        self.send(connection, HTTPResponseWriter.serialize(response, keepAlive: false, isHead: false,
                                                           date: HTTPDate.format(epochSeconds: Int(time(nil)))))
    }

    private func send(_ connection: Int32, _ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { sendBytes(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n } else if n < 0 && errno == EINTR { continue } else { return }
        }
    }
}

/// `send(2)` under another name: inside `WebhookListener` the method `send` hides it.
private func sendBytes(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int {
    send(fd, buffer, count, flags)
}
