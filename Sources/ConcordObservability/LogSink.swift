#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization

/// Collects finished log lines in memory and writes them out in batches, so the hot
/// path never makes a system call per line.
///
/// Lines are appended under a lock; a background timer flushes every
/// `flushInterval`, an append that takes the buffer past `flushThreshold` flushes at
/// once, and `flush()` writes whatever is left (call it at shutdown). Writes happen
/// in append order: one flush at a time, under `writeLock`.
public final class LogSink: Sendable {
    /// Receives each batch of complete lines.
    public typealias Output = @Sendable ([UInt8]) -> Void

    private let buffer = Mutex<[UInt8]>([])
    /// Serialises flushes so batches reach `output` in order.
    private let writeLock = Mutex<Void>(())
    private let output: Output
    private let flushThreshold: Int
    /// `nonisolated(unsafe)`: set once in `init`, then only `cancel()`ed, which
    /// Dispatch documents as safe from any thread.
    nonisolated(unsafe) private let timer: DispatchSourceTimer?

    /// A sink writing to file descriptor `fd` (stdout by default).
    public convenience init(fd: Int32 = 1, flushInterval: Double = 0.2, flushThreshold: Int = 64 * 1024) {
        self.init(flushInterval: flushInterval, flushThreshold: flushThreshold, output: { LogSink.writeAll($0, to: fd) })
    }

    /// A sink handing batches to `output`; `flushInterval` ≤ 0 means no timer (tests).
    public init(flushInterval: Double, flushThreshold: Int = 64 * 1024, output: @escaping Output) {
        self.output = output
        self.flushThreshold = flushThreshold
        if flushInterval > 0 {
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global(qos: .utility))
            let interval = DispatchTimeInterval.milliseconds(max(1, Int(flushInterval * 1000)))
            timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(20))
            self.timer = timer
            timer.setEventHandler { [weak self] in self?.flush() }
            timer.resume()
        } else {
            self.timer = nil
        }
    }

    deinit {
        self.timer?.cancel()
    }

    /// Adds one rendered line; flushes synchronously only when the buffer passes the threshold.
    public func append(_ line: [UInt8]) {
        let full = self.buffer.withLock { buffer in
            buffer.append(contentsOf: line)
            return buffer.count >= self.flushThreshold
        }
        if full { self.flush() }
    }

    /// Renders one line straight into the buffer (under the lock: no line array of its
    /// own); flushes synchronously only when the buffer passes the threshold.
    public func append(_ render: (inout [UInt8]) -> Void) {
        let full = self.buffer.withLock { buffer in
            render(&buffer)
            return buffer.count >= self.flushThreshold
        }
        if full { self.flush() }
    }

    /// Writes everything buffered so far.
    public func flush() {
        self.writeLock.withLock { _ in
            let pending = self.buffer.withLock { buffer -> [UInt8] in
                let taken = buffer
                buffer.removeAll(keepingCapacity: true)
                return taken
            }
            if !pending.isEmpty { self.output(pending) }
        }
    }

    /// Stops the background timer and flushes; later appends still buffer and need `flush()`.
    public func shutdown() {
        self.timer?.cancel()
        self.flush()
    }

    /// Writes all of `bytes`, retrying short writes and `EINTR`; gives up quietly on
    /// other errors (a closed stdout must not take the server down).
    static func writeAll(_ bytes: [UInt8], to fd: Int32) {
        bytes.withUnsafeBytes { raw in
            guard var base = raw.baseAddress else { return }
            var remaining = raw.count
            while remaining > 0 {
                let n = write(fd, base, remaining)
                if n > 0 {
                    remaining -= n
                    base += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}
