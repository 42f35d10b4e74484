#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// IMF-fixdate formatting for the `Date` header (RFC 9110 §5.6.7), without Foundation's
/// DateFormatter: the C library's `gmtime_r`, then fixed-width digits.
public enum HTTPDate {
    private static let dayNames: [String] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let monthNames: [String] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// e.g. `Sun, 06 Nov 1994 08:49:37 GMT` for 784111777.
    public static func format(epochSeconds: Int) -> String {
        // IMF-fixdate has a 4-digit year: instants outside years 0...9999 are clamped to stay valid.
        var t = time_t(min(max(epochSeconds, -62_167_219_200), 253_402_300_799))
        var parts = tm()
        // The C library's proleptic Gregorian calendar in UTC (what `strftime` formats too).
        _ = gmtime_r(&t, &parts)
        let (year, month, day, weekday) = (Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday), Int(parts.tm_wday))
        let secondsOfDay = Int(parts.tm_hour) * 3600 + Int(parts.tm_min) * 60 + Int(parts.tm_sec)

        var out: [UInt8] = []
        out.reserveCapacity(29)
        out.append(contentsOf: self.dayNames[weekday].utf8)
        out.append(contentsOf: ", ".utf8)
        append2(day, &out)
        out.append(UInt8(ascii: " "))
        out.append(contentsOf: self.monthNames[month - 1].utf8)
        out.append(UInt8(ascii: " "))
        append2(year / 100, &out)
        append2(year % 100, &out)
        out.append(UInt8(ascii: " "))
        append2(secondsOfDay / 3600, &out)
        out.append(UInt8(ascii: ":"))
        append2(secondsOfDay / 60 % 60, &out)
        out.append(UInt8(ascii: ":"))
        append2(secondsOfDay % 60, &out)
        out.append(contentsOf: " GMT".utf8)
        return String(decoding: out, as: UTF8.self)
    }

    /// Remembers the last formatted second, so a loop formats at most once per second.
    /// A value type: each event loop keeps its own, no locking.
    public struct Cache: Sendable {
        private var second = Int.min
        private var value = ""

        /// An empty cache.
        public init() {}

        /// The IMF-fixdate for `epochSeconds`, formatted only when the second changed.
        public mutating func string(epochSeconds: Int) -> String {
            if epochSeconds != self.second {
                self.second = epochSeconds
                self.value = HTTPDate.format(epochSeconds: epochSeconds)
            }
            return self.value
        }
    }

    private static func append2(_ n: Int, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "0") + UInt8(n / 10 % 10))
        out.append(UInt8(ascii: "0") + UInt8(n % 10))
    }
}
