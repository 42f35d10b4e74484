// A small blocking HTTP/1.1 keep-alive client over a raw socket: the load generator must cost
// little CPU (it shares the machine's two cores with the server it measures), so no URLSession,
// no async machinery; one connection per thread, requests pre-serialised once and re-sent.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failure talking to a server: connect, send, receive or an unparsable answer.
struct ClientError: Error, CustomStringConvertible {
    var description: String
    /// False for a timeout: re-sending on a fresh connection would only double the wait.
    var retryable = true
}

/// A serialised request, built once and sent many times.
struct RawRequest: Sendable {
    var bytes: [UInt8]

    /// `method path` with `Host`, an optional bearer token and an optional JSON body.
    init(_ method: String, _ path: String, token: String? = nil, body: [UInt8]? = nil, headers: [(String, String)] = []) {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body {
            head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n"
        } else if method == "POST" || method == "PUT" {
            head += "Content-Length: 0\r\n"
        }
        head += "\r\n"
        self.bytes = Array(head.utf8)
        if let body { self.bytes += body }
    }
}

/// One answer: status, body, and the header section as received (the soak checks
/// `Idempotent-Replayed`).
struct RawResponse {
    var status: Int
    var body: [UInt8]
    var head: String = ""

    /// The value of header `name` (case-insensitive), if present.
    func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        for line in self.head.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == wanted { return String(line[line.index(after: colon)...].trimmingSpaces) }
        }
        return nil
    }
}

/// One keep-alive connection. Not thread-safe: one per thread.
final class HTTPConnection {
    private let port: Int
    private var fd: Int32 = -1
    private var buffer: [UInt8] = []
    private var start = 0   // first unread byte in buffer

    /// Seconds a single send or recv may block (the 100k-asset manifest upload is the slowest answer).
    static let ioTimeoutSeconds = 60

    init(port: Int) throws {
        self.port = port
        try self.connect()
    }

    deinit { if self.fd >= 0 { close(self.fd) } }

    private func connect() throws {
        if self.fd >= 0 { close(self.fd) }
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw ClientError(description: "socket: errno \(errno)") }
        var one: Int32 = 1
        // TCP_NODELAY (1 on Linux and Darwin): small requests must not wait for Nagle.
        _ = setsockopt(fd, Int32(IPPROTO_TCP), 1, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(self.port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw ClientError(description: "connect to 127.0.0.1:\(self.port): errno \(code)")
        }
        // A deadline on every send and recv: a server (or a framing bug here) that stops
        // answering must fail the run with an error, never hang it.
        var timeout = timeval(tv_sec: HTTPConnection.ioTimeoutSeconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        self.fd = fd
        self.buffer.removeAll(keepingCapacity: true)
        self.start = 0
    }

    /// Sends `request` and reads its answer. Reconnects once if the server had closed the
    /// idle connection before the request was written.
    func send(_ request: RawRequest) throws -> RawResponse {
        do {
            return try self.exchange(request)
        } catch let error as ClientError where !error.retryable {
            throw error
        } catch {
            try self.connect()
            return try self.exchange(request)
        }
    }

    private func exchange(_ request: RawRequest) throws -> RawResponse {
        try request.bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.send(self.fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw ClientError(description: "send: errno \(errno)")
                }
                offset += n
            }
        }
        return try self.readResponse()
    }

    /// Reads more bytes into the buffer; throws on EOF.
    private func fill() throws {
        if self.start > 0 && self.start == self.buffer.count {
            self.buffer.removeAll(keepingCapacity: true)
            self.start = 0
        }
        let old = self.buffer.count
        let chunk = 64 * 1024
        self.buffer.reserveCapacity(old + chunk)
        var received = 0
        // Append uninitialised space, receive into it, trim to what arrived.
        self.buffer.append(contentsOf: repeatElement(0, count: chunk))
        while true {
            received = self.buffer.withUnsafeMutableBytes { recv(self.fd, $0.baseAddress! + old, chunk, 0) }
            if received < 0 && errno == EINTR { continue }
            break
        }
        self.buffer.removeLast(chunk - max(received, 0))
        if received <= 0 {
            let code = errno
            if received < 0 && (code == EAGAIN || code == EWOULDBLOCK) {
                throw ClientError(description: "no answer from 127.0.0.1:\(self.port) within \(HTTPConnection.ioTimeoutSeconds) s", retryable: false)
            }
            throw ClientError(description: received == 0 ? "connection closed by server" : "recv: errno \(code)")
        }
    }

    private func readResponse() throws -> RawResponse {
        // Head: up to CRLF CRLF.
        // How far past `start` has been scanned, kept RELATIVE to `start`: `fill()` moves the
        // unread bytes to the front of the buffer when all earlier ones were consumed, so an
        // absolute index taken before a fill can point past the new data. (It used to: the
        // second answer on a keep-alive connection was then never found and recv waited forever.)
        var headEnd = -1
        var scanned = 0
        while headEnd < 0 {
            if let end = self.findHeadEnd(from: self.start + scanned) { headEnd = end; break }
            scanned = max(0, self.buffer.count - self.start - 3)
            try self.fill()
        }
        let head = String(decoding: self.buffer[self.start..<headEnd], as: UTF8.self)
        self.start = headEnd + 4
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1."),
              let status = Int(statusLine.dropFirst(9).prefix(3)) else {
            throw ClientError(description: "bad status line: \(lines.first ?? "")")
        }
        var length: Int?
        var chunked = false
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces
            if name == "content-length" { length = Int(value) }
            if name == "transfer-encoding" && value.lowercased().contains("chunked") { chunked = true }
        }
        if chunked { return RawResponse(status: status, body: try self.readChunked(), head: head) }
        let count = length ?? 0
        while self.buffer.count - self.start < count { try self.fill() }
        let body = Array(self.buffer[self.start..<(self.start + count)])
        self.start += count
        return RawResponse(status: status, body: body, head: head)
    }

    private func findHeadEnd(from: Int) -> Int? {
        var i = from
        let end = self.buffer.count - 3
        while i < end {
            if self.buffer[i] == 13 && self.buffer[i + 1] == 10 && self.buffer[i + 2] == 13 && self.buffer[i + 3] == 10 { return i }
            i += 1
        }
        return nil
    }

    private func readLine() throws -> String {
        while true {
            var i = self.start
            while i + 1 < self.buffer.count {
                if self.buffer[i] == 13 && self.buffer[i + 1] == 10 {
                    let line = String(decoding: self.buffer[self.start..<i], as: UTF8.self)
                    self.start = i + 2
                    return line
                }
                i += 1
            }
            try self.fill()
        }
    }

    private func readChunked() throws -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let sizeLine = try self.readLine()
            guard let size = Int(sizeLine.split(separator: ";").first ?? "", radix: 16) else {
                throw ClientError(description: "bad chunk size: \(sizeLine)")
            }
            if size == 0 {
                while try self.readLine() != "" {}   // trailers
                return body
            }
            while self.buffer.count - self.start < size + 2 { try self.fill() }
            body += self.buffer[self.start..<(self.start + size)]
            self.start += size + 2
        }
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while s.first == " " || s.first == "\t" { s.removeFirst() }
        while s.last == " " || s.last == "\t" { s.removeLast() }
        return s
    }
}
