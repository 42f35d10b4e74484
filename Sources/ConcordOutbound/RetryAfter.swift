import Glibc

/// `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
enum RetryAfter {
    /// Seconds from `now` (Unix seconds) until the receiver wants the next attempt; 0 for a date in
    /// the past; nil when the value is neither form. Not capped: the scheduler bounds it.
    static func seconds(_ value: String, now: Int) -> Int? {
        let trimmed = value.trimmedOfSpaces
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) {
            // Absurdly long numbers saturate rather than fail: they still mean "not soon".
            return trimmed.utf8.count > 12 ? 999_999_999_999 : Int(trimmed)
        }
        guard let date = HTTPDate.parse(trimmed) else { return nil }
        return max(0, date - now)
    }
}

/// HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, and the obsolete RFC 850 and asctime forms a
/// recipient must accept. Returns Unix seconds.
enum HTTPDate {
    static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    static func parse(_ text: String) -> Int? {
        parseWords(text.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init))
    }

    private static func parseWords(_ words: [String]) -> Int? {
        var day: Int?, month: Int?, year: Int?, time: String?
        switch words.count {
        case 6 where words[5] == "GMT":                  // Sun, 06 Nov 1994 08:49:37 GMT
            day = Int(words[1]); month = monthIndex(words[2]); year = Int(words[3]); time = words[4]
            if words[3].count != 4 { return nil }
        case 4 where words[3] == "GMT":                  // Sunday, 06-Nov-94 08:49:37 GMT
            let parts = words[1].split(separator: "-").map(String.init)
            guard parts.count == 3, parts[2].count == 2, let shortYear = Int(parts[2]) else { return nil }
            day = Int(parts[0]); month = monthIndex(parts[1]); time = words[2]
            year = shortYear < 70 ? 2000 + shortYear : 1900 + shortYear
        case 5:                                          // Sun Nov  6 08:49:37 1994
            month = monthIndex(words[1]); day = Int(words[2]); time = words[3]; year = Int(words[4])
        default:
            return nil
        }
        guard let day, let month, let year, let time, (1...31).contains(day), (1970...9999).contains(year) else {
            return nil
        }
        let clock = time.split(separator: ":").map { Int($0) }
        guard clock.count == 3, let hour = clock[0], let minute = clock[1], let second = clock[2],
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        var fields = tm()
        fields.tm_year = Int32(year - 1900)
        fields.tm_mon = Int32(month)
        fields.tm_mday = Int32(day)
        fields.tm_hour = Int32(hour)
        fields.tm_min = Int32(minute)
        fields.tm_sec = Int32(second)
        return Int(timegm(&fields))
    }

    private static func monthIndex(_ name: String) -> Int? {
        months.firstIndex(of: name.lowercased())
    }
}

extension String {
    /// Without leading and trailing spaces and tabs.
    var trimmedOfSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        return String(self.drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
