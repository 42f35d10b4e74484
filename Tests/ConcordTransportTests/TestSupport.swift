import ConcordHTTP
import ConcordSocketTestSupport
import Dispatch
import Foundation
import Glibc
@testable import ConcordTransport

/// A responder built from a closure, for tests.
struct ClosureResponder: HTTPResponder {
    let body: @Sendable (HTTPRequest, ConnectionContext, @escaping @Sendable (HTTPResponse) -> Void) -> Void
    init(_ body: @escaping @Sendable (HTTPRequest, @escaping @Sendable (HTTPResponse) -> Void) -> Void) { self.body = { request, _, respond in body(request, respond) } }
    /// A responder that also reads what the transport knows of the connection.
    init(withContext body: @escaping @Sendable (HTTPRequest, ConnectionContext, @escaping @Sendable (HTTPResponse) -> Void) -> Void) { self.body = body }
    func handle(_ request: HTTPRequest, context: ConnectionContext, respond: @escaping @Sendable (HTTPResponse) -> Void) {
        self.body(request, context, respond)
    }
}

/// Answers inline with "METHOD TARGET" plus the body, if any, after a colon.
let echoResponder = ClosureResponder { request, respond in
    var body = Array("\(request.method) \(request.target)".utf8)
    if !request.body.isEmpty {
        body.append(UInt8(ascii: ":"))
        body.append(contentsOf: request.body)
    }
    respond(HTTPResponse(status: 200, headers: HTTPHeaders([(name: "Content-Type", value: "text/plain")]), body: body))
}

/// Collects transport events.
final class EventLog: Sendable {
    private let events = Mutex<[TransportEvent]>([])
    func record(_ event: TransportEvent) { self.events.withLock { $0.append(event) } }
    var all: [TransportEvent] { self.events.withLock { $0 } }
}

import Synchronization

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Starts a server on 127.0.0.1, port 0, runs `body`, and shuts the server down.
func withServer(
    _ configure: (inout ServerConfiguration) -> Void = { _ in },
    responder: any HTTPResponder = echoResponder,
    events: EventLog? = nil,
    _ body: (Int, HTTPServer) throws -> Void
) throws {
    var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
    configuration.eventLoopCount = 2
    configure(&configuration)
    let server = HTTPServer(configuration: configuration, responder: responder, onEvent: { event in events?.record(event) })
    let port = try server.start()
    defer { server.shutdown(gracePeriod: 0.5) }
    try body(port, server)
}

/// `withServer` with one client connected to it: for the tests that talk over that one connection.
func withClient(
    _ configure: (inout ServerConfiguration) -> Void = { _ in },
    responder: any HTTPResponder = echoResponder,
    events: EventLog? = nil,
    _ body: (TestClient) throws -> Void
) throws {
    try withServer(configure, responder: responder, events: events) { port, _ in try body(try TestClient(port: port)) }
}

/// A parsed response as the test client saw it.
struct TestResponse {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        self.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
    var text: String { String(decoding: self.body, as: UTF8.self) }
}

/// A blocking TCP client with a receive timeout, so a broken server fails a test
/// instead of hanging it.
final class TestClient {
    private(set) var fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int, host: String = "127.0.0.1", timeout: Double = 3) throws {
        let isV6 = host.contains(":")
        self.fd = socket(isV6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard self.fd >= 0 else { throw TestFailure("socket failed") }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1_000_000))
        setsockopt(self.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(self.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        // `connect` with an address of either family, given as the sockaddr it starts with.
        func connect<Address>(to address: Address) -> Int32 {
            withUnsafePointer(to: address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(self.fd, $0, socklen_t(MemoryLayout<Address>.size)) }
            }
        }
        let result: Int32
        if isV6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = UInt16(port).bigEndian
            inet_pton(AF_INET6, host, &address.sin6_addr)
            result = connect(to: address)
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            inet_pton(AF_INET, host, &address.sin_addr)
            result = connect(to: address)
        }
        guard result == 0 else {
            let code = errno
            close(self.fd)
            throw TestFailure("connect failed: errno \(code)")
        }
    }

    deinit { if self.fd >= 0 { close(self.fd) } }

    /// Closes the connection now (the descriptor is not closed again at deinit).
    func closeNow() {
        if self.fd >= 0 { close(self.fd) }
        self.fd = -1
    }

    func send(_ text: String) throws { try self.send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        guard sendAll(self.fd, bytes) else { throw TestFailure("send failed: errno \(errno)") }
    }

    /// Sends `request` and reads its response (nil if the server closed before any byte of it).
    func exchange(_ request: String) throws -> TestResponse? {
        try self.send(request)
        return try self.readResponse()
    }

    /// Reads more bytes into the buffer; false on EOF, throws on timeout/error.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(self.fd, $0.baseAddress, 65536, 0) }
        if n == 0 { return false }
        if n < 0 { throw TestFailure("recv failed: errno \(errno)") }
        self.buffer.append(contentsOf: chunk[0..<n])
        return true
    }

    /// Reads one response (1xx included); nil if the server closed before any byte of it.
    func readResponse(isHead: Bool = false) throws -> TestResponse? {
        var headEnd: Int? = nil
        while true {
            if let range = self.find([13, 10, 13, 10]) { headEnd = range; break }
            if try !self.fill() {
                if self.buffer.isEmpty { return nil }
                throw TestFailure("EOF inside a response head")
            }
        }
        guard let headEnd else { return nil }
        let head = String(decoding: self.buffer[0..<headEnd], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw TestFailure("bad status line in \(head)") }
        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        self.buffer.removeFirst(headEnd + 4)
        var response = TestResponse(status: status, headers: headers, body: [])
        if status < 200 || status == 204 || status == 304 || isHead { return response }
        guard let length = response.header("Content-Length").flatMap(Int.init) else { throw TestFailure("no Content-Length") }
        while self.buffer.count < length {
            if try !self.fill() { throw TestFailure("EOF inside a body") }
        }
        response.body = Array(self.buffer[0..<length])
        self.buffer.removeFirst(length)
        return response
    }

    /// True when the server closes the connection (EOF, or a reset) with no further
    /// bytes before `timeout`; false if bytes arrive or the wait times out.
    func closedByPeer() -> Bool {
        if !self.buffer.isEmpty { return false }
        var byte: UInt8 = 0
        let n = recv(self.fd, &byte, 1, 0)
        if n == 0 { return true }
        if n < 0 { return errno == ECONNRESET }
        self.buffer.append(byte)
        return false
    }

    /// Closes with SO_LINGER 0: the kernel sends RST instead of FIN.
    func reset() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(self.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(self.fd)
        self.fd = -1
    }

    private func find(_ needle: [UInt8]) -> Int? {
        guard self.buffer.count >= needle.count else { return nil }
        for i in 0...(self.buffer.count - needle.count) where self.buffer[i] == needle[0] {
            if Array(self.buffer[i..<(i + needle.count)]) == needle { return i }
        }
        return nil
    }
}

/// Waits until `condition` holds or `timeout` passes; returns whether it held. The timeout only
/// bounds a broken server: on a loaded machine the condition may take seconds to come.
func eventually(timeout: Double = 30, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// The error name in a contract JSON error body.
func errorName(_ response: TestResponse) -> String? {
    guard let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
          let error = object["error"] as? [String: Any] else { return nil }
    return error["name"] as? String
}
