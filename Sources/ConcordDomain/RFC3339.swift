import Foundation

/// RFC 3339 timestamps: validation of what clients send, formatting of what we answer.
public enum RFC3339 {
    /// True for `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` with fields in range (RFC 3339 §5.6).
    public static func isValid(_ s: String) -> Bool {
        let b = Array(s.utf8)
        guard b.count >= 20, b.count <= 64 else { return false }
        func digits(_ at: Int, _ n: Int) -> Int? {
            guard at + n <= b.count else { return nil }
            var v = 0
            for i in at..<(at + n) {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                v = v * 10 + Int(b[i] - 48)
            }
            return v
        }
        guard let year = digits(0, 4), b[4] == UInt8(ascii: "-"), let mo = digits(5, 2), b[7] == UInt8(ascii: "-"),
              let d = digits(8, 2), b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t"),
              let h = digits(11, 2), b[13] == UInt8(ascii: ":"), let mi = digits(14, 2), b[16] == UInt8(ascii: ":"),
              let se = digits(17, 2) else { return false }
        guard (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, se <= 60 else { return false }
        // RFC 3339 §5.7: the day must exist in its month (February 29 only in leap years).
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let monthDays = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard d <= monthDays[mo - 1] else { return false }
        var i = 19
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            let start = i
            while i < b.count, b[i] >= 48, b[i] <= 57 { i += 1 }
            guard i > start else { return false }
        }
        guard i < b.count else { return false }
        if b[i] == UInt8(ascii: "Z") || b[i] == UInt8(ascii: "z") { return i + 1 == b.count }
        guard b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-"), i + 6 == b.count,
              let oh = digits(i + 1, 2), b[i + 3] == UInt8(ascii: ":"), let om = digits(i + 4, 2) else { return false }
        return oh < 24 && om < 60
    }

    /// `2026-11-23T08:39:26Z` (UTC, whole seconds).
    public static func format(_ date: Date) -> String {
        var t = time_t(date.timeIntervalSince1970.rounded(.down))
        var tmv = tm()
        gmtime_r(&t, &tmv)
        func p(_ v: Int32, _ w: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, w - s.count)) + s
        }
        return "\(p(tmv.tm_year + 1900, 4))-\(p(tmv.tm_mon + 1, 2))-\(p(tmv.tm_mday, 2))T\(p(tmv.tm_hour, 2)):\(p(tmv.tm_min, 2)):\(p(tmv.tm_sec, 2))Z"
    }
}
