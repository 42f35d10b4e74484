/// Percent-decoding (RFC 3986 §2.1) for path segments and query components.
enum PercentDecoding {
    /// Decodes `%XX` escapes in `raw`; with `plusIsSpace` (query strings,
    /// application/x-www-form-urlencoded) `+` becomes a space. Nil when an escape is
    /// malformed or the result is not valid UTF-8.
    static func decode(_ raw: Substring, plusIsSpace: Bool = false) -> String? {
        let utf8 = raw.utf8
        // Fast path: nothing to decode, the substring is already valid UTF-8.
        if !utf8.contains(where: { $0 == UInt8(ascii: "%") || (plusIsSpace && $0 == UInt8(ascii: "+")) }) {
            return String(raw)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var i = utf8.startIndex
        while i != utf8.endIndex {
            let byte = utf8[i]
            if byte == UInt8(ascii: "%") {
                let h = utf8.index(after: i)
                guard h != utf8.endIndex else { return nil }
                let l = utf8.index(after: h)
                guard l != utf8.endIndex, let high = hexValue(utf8[h]), let low = hexValue(utf8[l]) else { return nil }
                bytes.append(high << 4 | low)
                i = utf8.index(after: l)
                continue
            }
            bytes.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            i = utf8.index(after: i)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Splits a query string into decoded name/value pairs, in order. A pair without
    /// `=` has an empty value; empty pairs (`a=1&&b=2`) are skipped. Nil when any
    /// component is malformed.
    static func parseQuery(_ query: Substring) -> [(name: String, value: String)]? {
        var result: [(name: String, value: String)] = []
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let name: Substring
            let value: Substring
            if let eq = pair.firstIndex(of: "=") {
                name = pair[..<eq]
                value = pair[pair.index(after: eq)...]
            } else {
                name = pair
                value = ""
            }
            guard let decodedName = decode(name, plusIsSpace: true), let decodedValue = decode(value, plusIsSpace: true) else { return nil }
            result.append((decodedName, decodedValue))
        }
        return result
    }
}
