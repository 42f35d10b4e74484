#if canImport(Glibc)
import Glibc
#endif

/// Writes all of `bytes` to the socket `fd` (no SIGPIPE); false when the connection refused part
/// of it. The raw-socket clients and servers of the test suites send through this one loop.
@discardableResult
public func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    var sent = 0
    while sent < bytes.count {
        let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if n <= 0 { return false }
        sent += n
    }
    return true
}
