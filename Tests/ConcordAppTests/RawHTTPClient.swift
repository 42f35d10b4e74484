import ConcordSocketTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A response as read off the wire.
struct RawResponse {
    var status: Int
    var headers: [(String, String)]
    var body: String
    func header(_ name: String) -> String? { self.headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
}

enum RawHTTPError: Error { case connect(Int32), malformed(String) }

/// A TCP connection to 127.0.0.1:`port` whose reads give up after `receiveTimeout` seconds.
func connectLoopback(port: Int, receiveTimeout: Double) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw RawHTTPError.connect(errno) }
    var timeout = timeval(tv_sec: Int(receiveTimeout), tv_usec: Int((receiveTimeout - receiveTimeout.rounded(.down)) * 1_000_000))
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else {
        let error = errno
        close(fd)
        throw RawHTTPError.connect(error)
    }
    return fd
}

/// Writes all of `text`; false when the connection refused part of it.
@discardableResult
func sendAll(_ fd: Int32, _ text: String) -> Bool { ConcordSocketTestSupport.sendAll(fd, Array(text.utf8)) }

/// Sends `request` bytes to 127.0.0.1:`port` and reads until the server closes (requests
/// should carry `Connection: close`). A 60 s receive timeout keeps a broken server from
/// hanging the suite; it is no bound on a busy one (a 4 MB body parsed on a loaded machine
/// took more than 5 s).
func rawExchange(port: Int, _ request: String) throws -> String {
    let fd = try connectLoopback(port: port, receiveTimeout: 60)
    defer { close(fd) }
    guard sendAll(fd, request) else { throw RawHTTPError.connect(errno) }
    return receiveUntilClosed(fd)
}

/// Everything the server sends on `fd` until it closes (or the receive timeout passes).
func receiveUntilClosed(_ fd: Int32) -> String {
    receive(fd, until: { _ in false })
}

/// What the server sends on `fd` until `done` says the text so far is enough, it closes, or the
/// receive timeout passes.
func receive(_ fd: Int32, until done: (String) -> Bool) -> String {
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { break }
        received.append(contentsOf: chunk[0..<n])
        if done(String(decoding: received, as: UTF8.self)) { break }
    }
    return String(decoding: received, as: UTF8.self)
}

/// One request with `Connection: close`, parsed.
func rawRequest(port: Int, _ method: String, _ target: String, headers: [String] = [], body: String = "") throws -> RawResponse {
    var request = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    for header in headers { request += header + "\r\n" }
    if !body.isEmpty { request += "Content-Length: \(body.utf8.count)\r\n" }
    request += "\r\n" + body
    return try parseResponse(try rawExchange(port: port, request))
}

func parseResponse(_ text: String) throws -> RawResponse {
    guard let split = text.range(of: "\r\n\r\n") else { throw RawHTTPError.malformed(text) }
    let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
    let statusParts = lines[0].split(separator: " ")
    guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw RawHTTPError.malformed(text) }
    let headers = lines.dropFirst().compactMap { line -> (String, String)? in
        guard let colon = line.firstIndex(of: ":") else { return nil }
        return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
    }
    return RawResponse(status: status, headers: headers, body: String(text[split.upperBound...]))
}
