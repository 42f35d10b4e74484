import CCurl
import Dispatch
import Foundation
import Testing
@testable import ConcordOutbound

/// WebhookSender over real sockets, against a local receiver on 127.0.0.1.
@Suite struct DeliveryTests {
    static let loopbackPolicy = try! DestinationPolicy(allowedHosts: ["127.0.0.1"])

    static func request(_ url: String, policy: DestinationPolicy = loopbackPolicy, timeout: Int = 2) throws -> DeliveryRequest {
        guard case .ok(let parsed) = policy.validateURL(url) else { throw Failure.url(url) }
        return DeliveryRequest(
            url: parsed,
            headers: [("Content-Type", "application/json"), ("webhook-id", "EVT-1"), ("webhook-timestamp", "1700000000"), ("webhook-signature", "v1,abc=")],
            body: Array(#"{"id":"EVT-1"}"#.utf8), timeoutSeconds: timeout, connectTimeoutSeconds: 2)
    }

    static func send(_ behaviour: LocalReceiver.Behaviour, policy: DestinationPolicy = loopbackPolicy, scheme: String = "http",
                     host: String = "127.0.0.1", timeout: Int = 2) throws -> (DeliveryResult, LocalReceiver) {
        let receiver = try LocalReceiver(behaviour)
        defer { receiver.stop() }
        let sender = WebhookSender(policy: policy, userAgent: "Concord/test")
        let result = sender.send(try request("\(scheme)://\(host):\(receiver.port)/hook?k=v", policy: policy, timeout: timeout))
        return (result, receiver)
    }

    static func answer(_ text: String) -> LocalReceiver.Behaviour { .answer(Array(text.utf8)) }

    enum Failure: Error { case url(String) }

    @Test func twoHundredSucceedsAndTheRequestIsAsGiven() throws {
        let (result, receiver) = try Self.send(Self.answer("HTTP/1.1 204 No Content\r\n\r\n"))
        #expect(result.status == 204 && result.error == nil && result.succeeded)
        #expect(receiver.connections == 1)
        let request = String(decoding: try #require(receiver.requests.first), as: UTF8.self)
        let lines = request.components(separatedBy: "\r\n")
        #expect(lines.first == "POST /hook?k=v HTTP/1.1")
        for expected in ["Host: 127.0.0.1:\(receiver.port)", "User-Agent: Concord/test", "Content-Type: application/json",
                         "Content-Length: 14", "webhook-id: EVT-1", "webhook-timestamp: 1700000000", "webhook-signature: v1,abc="] {
            #expect(lines.contains(expected), "\(expected)")
        }
        #expect(!request.lowercased().contains("expect:"))
        #expect(request.hasSuffix("\r\n\r\n{\"id\":\"EVT-1\"}"))
    }

    @Test func statusesOtherThan2xxFailWithTheirStatus() throws {
        for (head, status) in [("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n", 500),
                               ("HTTP/1.1 410 Gone\r\nContent-Length: 4\r\n\r\ngone", 410),
                               ("HTTP/1.0 200 OK\r\n\r\nclose-delimited body", 200)] {
            let (result, _) = try Self.send(Self.answer(head))
            #expect(result.status == status && result.error == nil, "\(status)")
        }
    }

    @Test func redirectIsNotFollowed() throws {
        let (result, receiver) = try Self.send(Self.answer("HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/elsewhere\r\nContent-Length: 0\r\n\r\n"))
        #expect(result.status == 302 && result.error == nil && !result.succeeded)
        #expect(receiver.connections == 1)
    }

    @Test func retryAfterIsRead() throws {
        let (seconds, _) = try Self.send(Self.answer("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 120\r\nContent-Length: 0\r\n\r\n"))
        #expect(seconds.status == 503 && seconds.retryAfterSeconds == 120)
        let soon = Date().addingTimeInterval(3600)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let (date, _) = try Self.send(Self.answer("HTTP/1.1 429 Too Many Requests\r\nretry-after: \(formatter.string(from: soon))\r\nContent-Length: 0\r\n\r\n"))
        #expect(date.status == 429)
        #expect((3590...3600).contains(date.retryAfterSeconds ?? -1), "\(String(describing: date.retryAfterSeconds))")
    }

    @Test func hangingReceiverTimesOut() throws {
        let (result, receiver) = try Self.send(.hang, timeout: 1)
        #expect(result.error == .timeout && result.status == nil)
        #expect(receiver.connections == 1)
    }

    @Test func resetIsConnectionFailed() throws {
        let (result, _) = try Self.send(.reset)
        #expect(result.error == .connectionFailed && result.status == nil)
    }

    @Test func refusedIsConnectionFailed() throws {
        // A port nobody listens on: bind a receiver, note its port, stop it.
        let receiver = try LocalReceiver(.hang)
        receiver.stop()
        let sender = WebhookSender(policy: Self.loopbackPolicy, userAgent: "Concord/test")
        let result = sender.send(try Self.request("http://127.0.0.1:\(receiver.port)/"))
        #expect(result.error == .connectionFailed)
    }

    @Test func garbageIsInvalidResponse() throws {
        for garbage in ["garbage\r\n\r\n", "HTTP/2 200\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n", "SSH-2.0-OpenSSH_9.2\r\n"] {
            let (result, _) = try Self.send(Self.answer(garbage))
            #expect(result.error == .invalidResponse, "\(garbage)")
        }
    }

    @Test func emptyAnswerIsConnectionFailed() throws {
        let (result, _) = try Self.send(.answer([]))
        #expect(result.error == .connectionFailed)
    }

    @Test func tenMegabyteBodyIsReadOnlyToTheLimit() throws {
        let (result, receiver) = try Self.send(.stream(head: Array("HTTP/1.1 200 OK\r\nContent-Length: 10485760\r\n\r\n".utf8), bodyBytes: 10 * 1024 * 1024))
        #expect(result.status == 200 && result.error == nil && result.succeeded)
        // The receiver could not push all 10 MB: the sender stopped reading and closed.
        #expect(receiver.bodyBytesSent < 10 * 1024 * 1024)
    }

    @Test func headOverSixteenKiBIsInvalidResponse() throws {
        let header = "X-Padding: " + String(repeating: "p", count: 100) + "\r\n"
        let (result, _) = try Self.send(Self.answer("HTTP/1.1 200 OK\r\n" + String(repeating: header, count: 170) + "Content-Length: 0\r\n\r\n"))
        #expect(result.error == .invalidResponse)
        // Just under the limit is fine.
        let (fits, _) = try Self.send(Self.answer("HTTP/1.1 200 OK\r\n" + String(repeating: header, count: 140) + "Content-Length: 0\r\n\r\n"))
        #expect(fits.status == 200 && fits.error == nil)
    }

    @Test func loopbackNotAllowedIsForbiddenAndNothingConnects() throws {
        let open = try DestinationPolicy(allowedHosts: [])
        let (result, receiver) = try Self.send(Self.answer("HTTP/1.1 204 No Content\r\n\r\n"), policy: open, scheme: "https")
        #expect(result.error == .forbiddenAddress && result.status == nil)
        #expect(receiver.connections == 0)
        // Plain http to a host no longer listed is refused the same way, before any connection.
        let sender = WebhookSender(policy: open, userAgent: "Concord/test")
        let earlier = try Self.request("http://127.0.0.1:9/")
        #expect(sender.send(earlier).error == .forbiddenAddress)
    }

    @Test func listedNameMayResolveToLoopback() throws {
        let policy = try DestinationPolicy(allowedHosts: ["localhost"])
        let (result, receiver) = try Self.send(Self.answer("HTTP/1.1 204 No Content\r\n\r\n"), policy: policy, host: "localhost")
        #expect(result.status == 204 && result.error == nil)
        #expect(receiver.connections == 1)
    }

    @Test func httpsToAPlainServerIsTLSFailure() throws {
        let (result, _) = try Self.send(.answerEarly(Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".utf8)), scheme: "https")
        #expect(result.error == .tlsFailure)
    }

    /// The pinning itself: curl is given a name no resolver knows and the checked address for it,
    /// so it connects there with no lookup of its own; and the open-socket check refuses an address
    /// that was not checked for this attempt, before any connection.
    @Test func curlConnectsOnlyToTheCheckedAddresses() throws {
        let receiver = try LocalReceiver(Self.answer("HTTP/1.1 204 No Content\r\n\r\n"))
        defer { receiver.stop() }
        let policy = try DestinationPolicy(allowedHosts: ["pinned.invalid", "127.0.0.1"])
        let loopback = IPAddress("127.0.0.1")!

        let pinned = try Self.request("http://pinned.invalid:\(receiver.port)/", policy: policy)
        let named = Transfer(policy: policy, host: "pinned.invalid", checked: [loopback])
        let code = named.perform(url: pinned.url, allowed: [loopback], request: pinned, userAgent: "t", connectMs: 2000, totalMs: 2000)
        #expect(code == CURLE_OK && named.status == 204)
        let request = String(decoding: try #require(receiver.requests.first), as: UTF8.self)
        #expect(request.contains("Host: pinned.invalid:\(receiver.port)\r\n"))

        let literal = try Self.request("http://127.0.0.1:\(receiver.port)/", policy: policy)
        let unchecked = Transfer(policy: policy, host: "127.0.0.1", checked: [IPAddress("8.8.8.8")!])
        let refused = unchecked.perform(url: literal.url, allowed: [IPAddress("8.8.8.8")!], request: literal, userAgent: "t", connectMs: 2000, totalMs: 2000)
        #expect(refused == CURLE_COULDNT_CONNECT && unchecked.refusedAddress)
        #expect(receiver.connections == 1)
    }

    @Test func unknownHostIsDNSFailure() throws {
        // `.invalid` never resolves (RFC 2606).
        let policy = try DestinationPolicy(allowedHosts: [])
        let sender = WebhookSender(policy: policy, userAgent: "Concord/test")
        #expect(sender.send(try Self.request("https://no-such-host.invalid/", policy: policy)).error == .dnsFailure)
    }

    /// Proxy settings in the environment are ignored: the POST goes straight to the receiver. In a
    /// child process, so that changing the environment cannot disturb other tests.
    @Test func environmentProxiesAreIgnored() async {
        await #expect(processExitsWith: .success) {
            for name in ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] {
                setenv(name, "http://127.0.0.1:9", 1)
            }
            guard let (result, receiver) = try? DeliveryTests.send(DeliveryTests.answer("HTTP/1.1 204 No Content\r\n\r\n")) else { exit(10) }
            exit(result.status == 204 && result.error == nil && receiver.connections == 1 ? 0 : 11)
        }
    }

    /// The chain is verified: a self-signed certificate (`openssl s_server`) fails as tlsFailure.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs /usr/bin/openssl"))
    func selfSignedCertificateIsTLSFailure() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbound-tls-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("key.pem").path, certificate = directory.appendingPathComponent("cert.pem").path
        let made = try Self.run(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                 "-keyout", key, "-out", certificate, "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "1"])
        try #require(made == 0, "openssl req")
        // A free port: bind one, let it go, hand it to s_server.
        let probe = try LocalReceiver(.hang)
        let port = probe.port
        probe.stop()
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        server.arguments = ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate, "-key", key, "-www", "-quiet"]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        // SIGKILL: the child may inherit a mask blocking SIGTERM from the test runner.
        defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
        try #require(Self.waitUntilListening(port: port), "s_server listens")

        let sender = WebhookSender(policy: Self.loopbackPolicy, userAgent: "Concord/test")
        let result = sender.send(try Self.request("https://127.0.0.1:\(port)/"))
        #expect(result.error == .tlsFailure, "\(String(describing: result.detail))")
        #expect(result.detail?.contains("certificate") == true, "refused for its certificate: \(String(describing: result.detail))")
    }

    static func run(_ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Whether something accepts on 127.0.0.1:port within 20 s.
    static func waitUntilListening(port: Int) -> Bool {
        for _ in 0..<200 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            close(fd)
            if connected == 0 { return true }
            usleep(100_000)
        }
        return false
    }

    @Test func manyThreadsAtOnce() throws {
        let receiver = try LocalReceiver(Self.answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
        defer { receiver.stop() }
        let sender = WebhookSender(policy: Self.loopbackPolicy, userAgent: "Concord/test")
        let request = try Self.request("http://127.0.0.1:\(receiver.port)/")
        let statuses = StatusList()
        DispatchQueue.concurrentPerform(iterations: 16) { _ in statuses.append(sender.send(request).status) }
        #expect(statuses.values == Array(repeating: 200, count: 16))
        #expect(receiver.connections == 16)
    }

    final class StatusList: @unchecked Sendable {  // guarded by `lock`
        private let lock = NSLock()
        private var list: [Int?] = []
        func append(_ status: Int?) { self.lock.withLock { self.list.append(status) } }
        var values: [Int?] { self.lock.withLock { self.list } }
    }
}
