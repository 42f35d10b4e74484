#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// A webhook receiver for tests: an HTTP/1.1 listener on 127.0.0.1 that keeps every POST it gets
/// and answers each with the status `answer` gives (204 by default; 0: never answers).
final class LocalWebhookReceiver: Sendable {
    struct Received: Sendable {
        var headers: [String: String]
        var body: [UInt8]
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(self.body))) as? [String: Any] }
        var type: String? { self.json?["type"] as? String }
        var data: [String: Any]? { self.json?["data"] as? [String: Any] }
    }

    let port: Int
    private let fd: Int32
    private let received = Mutex<[Received]>([])
    let answer = Mutex<(status: Int, extraHeaders: String)>((204, ""))
    private let stopped = Atomic<Bool>(false)

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, listen(fd, 64) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        self.fd = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in self.acceptLoop() }
        thread.start()
    }

    func stop() {
        self.stopped.store(true, ordering: .relaxed)
        shutdown(self.fd, Int32(SHUT_RDWR))
        close(self.fd)
    }

    var all: [Received] { self.received.withLock { $0 } }

    /// Waits up to `seconds` for `count` requests matching `match`.
    func wait(for count: Int = 1, seconds: Double = 20, _ match: (Received) -> Bool = { _ in true }) -> [Received] {
        let until = Date().addingTimeInterval(seconds)
        while Date() < until {
            let found = self.all.filter(match)
            if found.count >= count { return found }
            usleep(20_000)
        }
        return self.all.filter(match)
    }

    private func acceptLoop() {
        while !self.stopped.load(ordering: .relaxed) {
            let client = accept(self.fd, nil, nil)
            if client < 0 { return }
            Thread { [self] in self.serve(client) }.start()
        }
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(client, &chunk, chunk.count)
            if n <= 0 { return }
            buffer += chunk[0..<n]
            guard let end = Self.headEnd(buffer) else { continue }
            let head = String(decoding: buffer[0..<end], as: UTF8.self)
            var headers: [String: String] = [:]
            for line in head.split(separator: "\r\n").dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let length = Int(headers["content-length"] ?? "0") ?? 0
            while buffer.count < end + 4 + length {
                let m = read(client, &chunk, chunk.count)
                if m <= 0 { return }
                buffer += chunk[0..<m]
            }
            self.received.withLock { $0.append(Received(headers: headers, body: Array(buffer[(end + 4)..<(end + 4 + length)]))) }
            let (status, extra) = self.answer.withLock { $0 }
            // Status 0: hang (the connection stays open, unanswered, until the receiver stops).
            if status == 0 {
                while !self.stopped.load(ordering: .relaxed) { usleep(20_000) }
                return
            }
            let response = "HTTP/1.1 \(status) X\r\nContent-Length: 0\r\nConnection: close\r\n\(extra)\r\n"
            _ = response.withCString { write(client, $0, strlen($0)) }
            return
        }
    }

    private static func headEnd(_ b: [UInt8]) -> Int? {
        guard b.count >= 4 else { return nil }
        for i in 0...(b.count - 4) where b[i] == 13 && b[i + 1] == 10 && b[i + 2] == 13 && b[i + 3] == 10 { return i }
        return nil
    }
}
