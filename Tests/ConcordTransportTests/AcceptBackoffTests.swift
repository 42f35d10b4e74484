import ConcordHTTP
import Foundation
import Glibc
import Testing
@testable import ConcordTransport

/// Running out of file descriptors must pause accepting, not kill the loop. Runs in a
/// child process (an exit test) because it lowers the process-wide descriptor limit.
@Suite struct AcceptBackoffTests {
    @Test func acceptResumesAfterRunningOutOfFileDescriptors() async {
        await #expect(processExitsWith: .success) {
            let events = EventLog()
            var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
            configuration.eventLoopCount = 1
            let server = HTTPServer(configuration: configuration, responder: echoResponder, onEvent: { events.record($0) })
            guard let port = try? server.start() else { exit(10) }
            // Client sockets are created first: connect() needs no new descriptor, accept4() does.
            let clients = (0..<3).map { _ in socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0) }
            var original = rlimit()
            getrlimit(Int32(RLIMIT_NOFILE.rawValue), &original)
            var none = original
            none.rlim_cur = 0
            guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &none) == 0 else { exit(11) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            for fd in clients {
                let result = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
                guard result == 0 else { exit(12) }
            }
            let sawError = eventually(timeout: 30) {
                events.all.contains { if case .acceptError(EMFILE) = $0 { true } else { false } }
            }
            guard sawError else { exit(13) }
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &original)
            // The listener comes back within its ~100 ms pause and serves every waiting client.
            let request = Array("GET /back HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
            var timeout = timeval(tv_sec: 30, tv_usec: 0)
            for fd in clients {
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else { exit(14) }
                var buffer = [UInt8](repeating: 0, count: 4096)
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 4096, 0) }
                guard n > 0, String(decoding: buffer[0..<n], as: UTF8.self).hasPrefix("HTTP/1.1 200 OK") else { exit(15) }
            }
            server.shutdown(gracePeriod: 0.2)
            exit(0)
        }
    }
}
