import CConcordSystem
import Glibc

/// A failed system call: which call and the errno it left.
struct SystemError: Error, CustomStringConvertible {
    var call: StaticString
    var errno: Int32

    var description: String { "\(self.call): \(SystemError.describe(self.errno))" }

    /// `strerror` text with a lower-case first letter, to sit inside a sentence.
    static func describe(_ code: Int32) -> String {
        guard let cString = strerror(code) else { return "errno \(code)" }
        let text = String(cString: cString)
        guard let first = text.first else { return "errno \(code)" }
        return first.lowercased() + text.dropFirst()
    }
}

/// The outcome of a non-blocking call: done, or "try again when the fd is ready".
enum IOResult<T> {
    case processed(T)
    case wouldBlock
}

/// The one funnel for system calls (after NIO's `System.swift`): retries `EINTR`,
/// turns `EAGAIN` into `.wouldBlock`, and throws everything else with the call's name.
/// `EBADF` means the transport mixed up its own descriptors, a bug, so it asserts in debug.
@inline(__always)
func syscall<T: FixedWidthInteger>(_ name: StaticString, _ body: () -> T) throws(SystemError) -> IOResult<T> {
    while true {
        let result = body()
        if result != -1 { return .processed(result) }
        let code = Glibc.errno
        switch code {
        case EINTR:
            continue
        case EAGAIN, EWOULDBLOCK:
            return .wouldBlock
        case EBADF:
            assertionFailure("\(name) on a bad file descriptor: the transport closed or reused an fd it does not own")
            throw SystemError(call: name, errno: code)
        default:
            throw SystemError(call: name, errno: code)
        }
    }
}

/// A call that cannot return `EAGAIN` (setup calls): the value, or a thrown error.
@inline(__always)
func syscallBlocking<T: FixedWidthInteger>(_ name: StaticString, _ body: () -> T) throws(SystemError) -> T {
    switch try syscall(name, body) {
    case .processed(let value): return value
    case .wouldBlock: throw SystemError(call: name, errno: EAGAIN)
    }
}

/// Closes a descriptor exactly once. Never retried: on Linux the fd is released even
/// when `close` reports `EINTR`, and a retry could close a descriptor another thread
/// has just been given.
@inline(__always)
func closeDescriptor(_ fd: Int32) {
    _ = Glibc.close(fd)
}

/// Monotonic seconds, for timeouts (immune to wall-clock jumps).
@inline(__always)
func monotonicNow() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1_000_000_000
}

/// Wall-clock whole seconds since 1970, for the `Date` header.
@inline(__always)
func wallClockSeconds() -> Int {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int(ts.tv_sec)
}
