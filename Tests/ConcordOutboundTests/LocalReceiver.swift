import ConcordSocketTestSupport
import Foundation
import Dispatch
import Glibc

/// A tiny HTTP receiver on 127.0.0.1 for delivery tests: accepts on its own thread, hands each
/// connection to `behaviour` on a thread of its own, and records what it saw.
final class LocalReceiver: @unchecked Sendable {  // mutable state behind `lock`
    /// What the receiver does with one accepted connection.
    enum Behaviour: Sendable {
        /// Reads the request, writes these bytes, closes.
        case answer([UInt8])
        /// Reads the request, then says nothing until the client goes.
        case hang
        /// Reads the request, then resets the connection (RST).
        case reset
        /// Reads the request's first bytes only (a TLS ClientHello has no blank line), writes these
        /// bytes, closes.
        case answerEarly([UInt8])
        /// Reads the request, writes the head, then streams `bodyBytes` of body until done or refused.
        case stream(head: [UInt8], bodyBytes: Int)
    }

    let port: Int
    private let listener: Int32
    private let behaviour: Behaviour
    private let lock = DispatchSemaphore(value: 1)
    private var _connections = 0
    private var _requests: [[UInt8]] = []
    private var _bodyBytesSent = 0
    private let acceptThreadDone = DispatchSemaphore(value: 0)

    var connections: Int { self.locked { self._connections } }
    var requests: [[UInt8]] { self.locked { self._requests } }
    var bodyBytesSent: Int { self.locked { self._bodyBytesSent } }

    init(_ behaviour: Behaviour) throws {
        signal(SIGPIPE, SIG_IGN)
        self.behaviour = behaviour
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ReceiverError.socket }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else { close(fd); throw ReceiverError.socket }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: address.sin_port))
        self.listener = fd
        let thread = Thread { [self] in self.acceptLoop() }
        thread.start()
    }

    /// Stops accepting (connections being served finish on their own) and waits for the accept thread.
    func stop() {
        shutdown(self.listener, Int32(SHUT_RDWR))
        self.acceptThreadDone.wait()
        close(self.listener)
    }

    private func locked<T>(_ body: () -> T) -> T {
        self.lock.wait()
        defer { self.lock.signal() }
        return body()
    }

    private func acceptLoop() {
        defer { self.acceptThreadDone.signal() }
        while true {
            let connection = accept(self.listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                return
            }
            self.locked { self._connections += 1 }
            let thread = Thread { [self] in
                self.serve(connection)
                close(connection)
            }
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        switch self.behaviour {
        case .answer(let bytes):
            self.readRequest(fd)
            sendAll(fd, bytes)
        case .hang:
            self.readRequest(fd)
            var scratch = [UInt8](repeating: 0, count: 256)
            while recv(fd, &scratch, scratch.count, 0) > 0 {}  // until the client closes (or 10 s)
        case .reset:
            self.readRequest(fd)
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        case .answerEarly(let bytes):
            var scratch = [UInt8](repeating: 0, count: 4096)
            _ = recv(fd, &scratch, scratch.count, 0)
            sendAll(fd, bytes)
        case .stream(let head, let bodyBytes):
            self.readRequest(fd)
            guard sendAll(fd, head) else { return }
            let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 16 * 1024)
            var sent = 0
            while sent < bodyBytes {
                let count = min(chunk.count, bodyBytes - sent)
                let written = chunk.withUnsafeBytes { send(fd, $0.baseAddress, count, Int32(MSG_NOSIGNAL)) }
                if written <= 0 { break }
                sent += written
                self.locked { self._bodyBytesSent = sent }
            }
        }
    }

    /// Reads a request head and its Content-Length body, and records them.
    private func readRequest(_ fd: Int32) {
        var received: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 4096)
        var needed: Int?
        while needed == nil || received.count < needed! {
            let count = recv(fd, &scratch, scratch.count, 0)
            if count <= 0 { break }
            received += scratch[0..<count]
            if needed == nil, let end = LocalReceiver.headEnd(received) {
                let head = String(decoding: received[..<end], as: UTF8.self).lowercased()
                let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters()) } ?? 0
                needed = end + length
            }
        }
        self.locked { self._requests.append(received) }
    }

    static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index + 4
        }
        return nil
    }

    enum ReceiverError: Error { case socket }
}

extension Substring {
    fileprivate func trimmingCharacters() -> Substring {
        var result = self
        while result.first == " " { result.removeFirst() }
        while result.last == " " { result.removeLast() }
        return result
    }
}
