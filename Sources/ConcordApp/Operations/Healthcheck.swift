#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `concord healthcheck [--url http://HOST:PORT/PATH]`: one `GET` over a plain socket,
/// exit 0 on `200`, 1 otherwise. It exists so a container image needs no curl: Docker's
/// `HEALTHCHECK` runs the binary it already has.
///
/// The default URL is `http://127.0.0.1:$CONCORD_PORT/health` (port 8080 when unset), which is
/// right inside the container whatever `CONCORD_HOST` is bound to (`0.0.0.0` includes loopback).
enum Healthcheck {
    /// Connect, send and read each give up after this long: a health check must not hang.
    static let timeoutSeconds = 3

    /// Where to send the request.
    struct Target: Equatable {
        var host: String
        var port: Int
        var path: String

        /// Parses `http://HOST[:PORT][/PATH]`; HOST may be `[v6 address]`.
        init?(url: String) {
            guard url.hasPrefix("http://") else { return nil }
            let rest = url.dropFirst("http://".count)
            let authority = rest.prefix { $0 != "/" }
            let path = rest.dropFirst(authority.count)
            self.path = path.isEmpty ? "/" : String(path)
            guard self.path.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
            var hostPart = authority[...]
            var portPart: Substring?
            if hostPart.hasPrefix("[") {
                guard let close = hostPart.firstIndex(of: "]") else { return nil }
                let after = hostPart[hostPart.index(after: close)...]
                if !after.isEmpty {
                    guard after.hasPrefix(":") else { return nil }
                    portPart = after.dropFirst()
                }
                hostPart = hostPart[hostPart.index(after: hostPart.startIndex)..<close]
            } else if let colon = hostPart.lastIndex(of: ":") {
                portPart = hostPart[hostPart.index(after: colon)...]
                hostPart = hostPart[..<colon]
            }
            guard !hostPart.isEmpty, !hostPart.contains("@") else { return nil }
            self.host = String(hostPart)
            if let portPart {
                guard let port = Int(portPart), (1...65535).contains(port) else { return nil }
                self.port = port
            } else {
                self.port = 80
            }
        }
    }

    /// Runs the subcommand on the arguments after `healthcheck`; returns the exit status.
    static func run(_ arguments: [String], environment: [String: String]) -> Int32 {
        let url: String?
        do {
            url = try OperatorCommands.flags(arguments, known: ["--url"]).last?.value
        } catch {
            printError("concord: \(error.message) (usage: concord healthcheck [--url http://HOST:PORT/PATH])")
            return 2
        }
        let text = url ?? "http://127.0.0.1:\(environment["CONCORD_PORT"].flatMap { $0.isEmpty ? nil : $0 } ?? "8080")/health"
        guard let target = Target(url: text) else {
            printError("concord: invalid URL \(text) for healthcheck: expected http://HOST:PORT/PATH")
            return 2
        }
        switch self.status(of: target) {
        case .success(200):
            return 0
        case .success(let status):
            printError("concord: healthcheck \(text): status \(status)")
            return 1
        case .failure(let error):
            printError("concord: healthcheck \(text): \(error.message)")
            return 1
        }
    }

    struct Failure: Error, Equatable { var message: String }

    /// The status code `GET target` answers, or why there is none.
    static func status(of target: Target) -> Result<Int, Failure> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(target.host, String(target.port), &hints, &list)
        guard rc == 0, let list else { return .failure(Failure(message: "cannot resolve \(target.host): \(String(cString: gai_strerror(rc)))")) }
        defer { freeaddrinfo(list) }

        var lastError = "no address"
        var next: UnsafeMutablePointer<addrinfo>? = list
        while let info = next {
            next = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { lastError = String(cString: strerror(errno)); continue }
            defer { close(fd) }
            // Blocking socket with send/receive timeouts; on Linux the send timeout bounds connect too.
            var timeout = timeval(tv_sec: self.timeoutSeconds, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            guard connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
                lastError = "cannot connect: " + String(cString: strerror(errno))
                continue
            }
            return self.exchange(fd, target: target)
        }
        return .failure(Failure(message: lastError))
    }

    /// Sends the request and reads the status line.
    private static func exchange(_ fd: Int32, target: Target) -> Result<Int, Failure> {
        let host = target.host.contains(":") ? "[\(target.host)]" : target.host
        let request = Array("GET \(target.path) HTTP/1.1\r\nHost: \(host):\(target.port)\r\nUser-Agent: concord-healthcheck\r\nConnection: close\r\n\r\n".utf8)
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n } else if n < 0 && errno == EINTR { continue } else {
                return .failure(Failure(message: "cannot send: " + String(cString: strerror(errno))))
            }
        }
        // "HTTP/1.1 200 OK\r\n": the first line is all we need; stop at its end or 1 KiB.
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 512)
        while !response.contains(UInt8(ascii: "\n")) && response.count < 1024 {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                response += chunk[0..<n]
            } else if n == 0 {
                break
            } else if errno != EINTR {
                let reason = errno == EAGAIN || errno == EWOULDBLOCK ? "no answer within \(self.timeoutSeconds)s" : String(cString: strerror(errno))
                return .failure(Failure(message: reason))
            }
        }
        guard let status = self.parseStatus(response) else {
            return .failure(Failure(message: response.isEmpty ? "connection closed without an answer" : "not an HTTP answer"))
        }
        return .success(status)
    }

    /// The status code of a status line `HTTP/1.x NNN ...`.
    static func parseStatus(_ bytes: [UInt8]) -> Int? {
        let line = bytes.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }
        let parts = line.split(separator: UInt8(ascii: " "), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].starts(with: Array("HTTP/1.".utf8)), parts[1].count == 3,
              parts[1].allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int(String(decoding: parts[1], as: UTF8.self))
    }
}
