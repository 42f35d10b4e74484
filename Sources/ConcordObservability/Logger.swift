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
        self.write(level: level, message: message(), extra: metadata())
    }

    /// Renders the line straight into the sink's buffer: no intermediate line array,
    /// and no merged copy of the metadata when only one side has pairs.
    @usableFromInline
    func write(level: LogLevel, message: String, extra: LogMetadata) {
        let now = LogClock.nowNanoseconds()
        if extra.isEmpty || self.metadata.isEmpty {
            let all = extra.isEmpty ? self.metadata : extra
            self.sink.append { LogLine.append(epochNanoseconds: now, level: level, message: message, metadata: all, to: &$0) }
        } else {
            let all = self.metadata.merging(extra)
            self.sink.append { LogLine.append(epochNanoseconds: now, level: level, message: message, metadata: all, to: &$0) }
        }
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
        self.append(epochNanoseconds: epochNanoseconds, level: level, message: message, metadata: metadata, to: &out)
        return out
    }

    /// Appends the line `render` returns to `out` (the sink renders into its buffer).
    public static func append(epochNanoseconds: Int64, level: LogLevel, message: String, metadata: LogMetadata, to out: inout [UInt8]) {
        out.append(contentsOf: #"{"ts":""#.utf8)
        appendTimestamp(epochNanoseconds, to: &out)
        out.append(contentsOf: #"","level":""#.utf8)
        out.append(contentsOf: level.name.utf8)
        out.append(contentsOf: #"","msg":"#.utf8)
        appendJSONString(message, to: &out)
        for (key, value) in metadata.pairs where !isReservedKey(key) {
            out.append(UInt8(ascii: ","))
            appendJSONString(key, to: &out)
            out.append(UInt8(ascii: ":"))
            switch value {
            case .string(let s): appendJSONString(s, to: &out)
            case .int(let i): appendInt(i, to: &out)
            case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
            case .double(let d):
                // JSON has no NaN or infinities; write them as strings rather than break the line.
                if d.isFinite { out.append(contentsOf: String(d).utf8) } else { appendJSONString(String(d), to: &out) }
            }
        }
        out.append(contentsOf: "}\n".utf8)
    }

    /// `ts`, `level` or `msg`; lengths first, so most keys need no string comparison.
    @inline(__always)
    static func isReservedKey(_ key: String) -> Bool {
        switch key.utf8.count {
        case 2: key == "ts"
        case 3: key == "msg"
        case 5: key == "level"
        default: false
        }
    }

    /// Decimal digits of `value`, as `String(value)` spells them, without building a String.
    static func appendInt(_ value: Int, to out: inout [UInt8]) {
        if value < 0 {
            out.append(UInt8(ascii: "-"))
        }
        // Magnitude as UInt so Int.min does not overflow.
        var v = value.magnitude
        if v < 10 {
            out.append(UInt8(ascii: "0") &+ UInt8(v))
            return
        }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)   // 24 bytes ≥ the 20 digits of UInt64.max
        withUnsafeMutableBytes(of: &digits) { raw in
            var i = raw.count
            while v > 0 {
                i -= 1
                raw[i] = UInt8(ascii: "0") &+ UInt8(v % 10)
                v /= 10
            }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[i...]))
        }
    }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`, by arithmetic on the epoch (no `gmtime_r`, which takes
    /// glibc's time-zone lock on every call).
    static func appendTimestamp(_ epochNanoseconds: Int64, to out: inout [UInt8]) {
        // Floor division so instants before 1970 still land on the right day and millisecond.
        var seconds = epochNanoseconds / 1_000_000_000
        var nanos = epochNanoseconds % 1_000_000_000
        if nanos < 0 {
            nanos += 1_000_000_000
            seconds -= 1
        }
        // The C library's proleptic Gregorian calendar in UTC; years kept to four digits.
        var t = time_t(min(max(seconds, -62_167_219_200), 253_402_300_799))
        var parts = tm()
        _ = gmtime_r(&t, &parts)
        let (year, month, day) = (Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday))
        let secondsOfDay = Int(parts.tm_hour) * 3600 + Int(parts.tm_min) * 60 + Int(parts.tm_sec)
        appendDigits(year, 4, &out)
        out.append(UInt8(ascii: "-"))
        appendDigits(month, 2, &out)
        out.append(UInt8(ascii: "-"))
        appendDigits(day, 2, &out)
        out.append(UInt8(ascii: "T"))
        appendDigits(secondsOfDay / 3600, 2, &out)
        out.append(UInt8(ascii: ":"))
        appendDigits(secondsOfDay / 60 % 60, 2, &out)
        out.append(UInt8(ascii: ":"))
        appendDigits(secondsOfDay % 60, 2, &out)
        out.append(UInt8(ascii: "."))
        appendDigits(Int(nanos / 1_000_000), 3, &out)
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
        // Most keys and values need no escape: check first, then copy in one go.
        var s = s
        let clean = s.withUTF8 { bytes in
            for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if clean {
            out.append(UInt8(ascii: "\""))
            return
        }
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
