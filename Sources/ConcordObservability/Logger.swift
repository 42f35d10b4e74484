#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A swift-log-shaped logger: a value that carries a minimum level and metadata, and
/// hands finished lines to a shared `LogSink`.
///
/// Messages and metadata are `@autoclosure`s, so a line below `level` costs one integer
/// comparison: the string is never built.
public struct Logger: Sendable {
    /// Lines below this level are dropped before their message is evaluated.
    public var level: LogLevel
    /// Pairs written into every line of this logger (e.g. a request id).
    public var metadata: LogMetadata
    /// Where finished lines go.
    public let sink: LogSink

    public init(level: LogLevel = .info, metadata: LogMetadata = [:], sink: LogSink) {
        self.level = level
        self.metadata = metadata
        self.sink = sink
    }

    /// Reads or sets one metadata pair of this logger.
    public subscript(metadataKey key: String) -> LogValue? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    /// Whether a line at `level` would be written.
    @inline(__always)
    public func isEnabled(_ level: LogLevel) -> Bool { level >= self.level }

    /// Writes one line if `level` is enabled.
    @inline(__always)
    public func log(level: LogLevel, _ message: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        guard level >= self.level else { return }
        let extra = metadata()
        let all = extra.isEmpty ? self.metadata : self.metadata.merging(extra)
        self.sink.append(LogLine.render(epochNanoseconds: LogClock.nowNanoseconds(), level: level, message: message(), metadata: all))
    }

    public func trace(_ message: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        self.log(level: .trace, message(), metadata: metadata())
    }
    public func debug(_ message: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        self.log(level: .debug, message(), metadata: metadata())
    }
    public func info(_ message: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        self.log(level: .info, message(), metadata: metadata())
    }
    public func notice(_ message: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        self.log(level: .notice, message(), metadata: metadata())
    }
    public func warning(_ message: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        self.log(level: .warning, message(), metadata: metadata())
    }
    public func error(_ message: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        self.log(level: .error, message(), metadata: metadata())
    }
}

/// Wall-clock time for the `ts` field.
enum LogClock {
    static func nowNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}

/// Renders one log line: a JSON object on one line, `ts`, `level`, `msg`, then the
/// metadata in order, ending with `\n`.
public enum LogLine {
    /// The line for the given parts; `epochNanoseconds` becomes an RFC 3339 UTC time
    /// with milliseconds. Metadata keys named `ts`, `level` or `msg` are skipped so
    /// every line keeps exactly one of each.
    public static func render(epochNanoseconds: Int64, level: LogLevel, message: String, metadata: LogMetadata) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(96 + message.utf8.count)
        out.append(contentsOf: #"{"ts":""#.utf8)
        appendTimestamp(epochNanoseconds, to: &out)
        out.append(contentsOf: #"","level":""#.utf8)
        out.append(contentsOf: level.name.utf8)
        out.append(contentsOf: #"","msg":"#.utf8)
        appendJSONString(message, to: &out)
        for (key, value) in metadata.pairs where key != "ts" && key != "level" && key != "msg" {
            out.append(UInt8(ascii: ","))
            appendJSONString(key, to: &out)
            out.append(UInt8(ascii: ":"))
            switch value {
            case .string(let s): appendJSONString(s, to: &out)
            case .int(let i): out.append(contentsOf: String(i).utf8)
            case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
            case .double(let d):
                // JSON has no NaN or infinities; write them as strings rather than break the line.
                if d.isFinite { out.append(contentsOf: String(d).utf8) } else { appendJSONString(String(d), to: &out) }
            }
        }
        out.append(contentsOf: "}\n".utf8)
        return out
    }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`
    static func appendTimestamp(_ epochNanoseconds: Int64, to out: inout [UInt8]) {
        var seconds = time_t(epochNanoseconds / 1_000_000_000)
        let millis = Int((epochNanoseconds % 1_000_000_000) / 1_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        appendDigits(Int(parts.tm_year) + 1900, 4, &out)
        out.append(UInt8(ascii: "-"))
        appendDigits(Int(parts.tm_mon) + 1, 2, &out)
        out.append(UInt8(ascii: "-"))
        appendDigits(Int(parts.tm_mday), 2, &out)
        out.append(UInt8(ascii: "T"))
        appendDigits(Int(parts.tm_hour), 2, &out)
        out.append(UInt8(ascii: ":"))
        appendDigits(Int(parts.tm_min), 2, &out)
        out.append(UInt8(ascii: ":"))
        appendDigits(Int(parts.tm_sec), 2, &out)
        out.append(UInt8(ascii: "."))
        appendDigits(millis, 3, &out)
        out.append(UInt8(ascii: "Z"))
    }

    private static func appendDigits(_ value: Int, _ width: Int, _ out: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        var v = max(0, value)
        while divisor > 0 {
            out.append(UInt8(ascii: "0") + UInt8((v / divisor) % 10))
            v %= divisor
            divisor /= 10
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends `s` as a JSON string literal (RFC 8259 §7): quote, backslash and
    /// control characters escaped; everything else copied as UTF-8.
    static func appendJSONString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
