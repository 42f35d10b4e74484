/// IMF-fixdate formatting for the `Date` header (RFC 9110 §5.6.7), without Foundation's
/// DateFormatter: pure arithmetic on the epoch.
public enum HTTPDate {
    private static let dayNames: [String] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let monthNames: [String] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// e.g. `Sun, 06 Nov 1994 08:49:37 GMT` for 784111777.
    public static func format(epochSeconds: Int) -> String {
        // Floor division so instants before 1970 still land on the right day.
        var days = epochSeconds / 86_400
        var secondsOfDay = epochSeconds % 86_400
        if secondsOfDay < 0 {
            secondsOfDay += 86_400
            days -= 1
        }
        // 1970-01-01 was a Thursday (index 4).
        let weekday = ((days % 7) + 7 + 4) % 7
        let (year, month, day) = civilFromDays(days)

        var out: [UInt8] = []
        out.reserveCapacity(29)
        out.append(contentsOf: self.dayNames[weekday].utf8)
        out.append(contentsOf: ", ".utf8)
        append2(day, &out)
        out.append(UInt8(ascii: " "))
        out.append(contentsOf: self.monthNames[month - 1].utf8)
        out.append(UInt8(ascii: " "))
        // IMF-fixdate has a 4-digit year; years outside 0...9999 are clamped to stay valid.
        let y = min(max(year, 0), 9999)
        append2(y / 100, &out)
        append2(y % 100, &out)
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

    /// Days since 1970-01-01 → proleptic Gregorian (year, month 1...12, day 1...31).
    /// Howard Hinnant's `civil_from_days`.
    private static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }
}
