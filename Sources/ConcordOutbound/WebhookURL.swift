/// A webhook's destination, parsed from the URL a caller gave.
public struct WebhookURL: Sendable, Equatable {
    /// `http` or `https`, lower-case.
    public let scheme: String
    /// The host as written (IPv6 without its brackets).
    public let host: String
    /// The explicit port, else 80 or 443.
    public let port: Int
    /// Path and query, `/` when the URL has no path.
    public let target: String
    /// The URL exactly as given (stored and answered as sent).
    public let original: String
    /// The host's address when it is written as an IP literal.
    public let ipLiteral: IPAddress?

    /// `scheme://host:port`: what logs and audit lines show of a destination, never its path or
    /// query (they may hold the receiver's own credential).
    public var origin: String { "\(self.scheme)://\(self.hostForURL):\(self.port)" }

    /// The host as it goes in a URL: IPv6 in brackets.
    var hostForURL: String { self.ipLiteral.map(\.bracketed) ?? self.host }

    /// The host name compared with allowed names: lower-case, without a final dot.
    var normalizedName: String { WebhookURL.normalizeName(self.host) }

    static func normalizeName(_ name: String) -> String {
        var lowered = name.lowercased()
        if lowered.hasSuffix(".") { lowered.removeLast() }
        return lowered
    }

    static let maxLength = 2048

    /// Parses `text` by the rules for a webhook URL; the error is a message for the caller.
    static func parse(_ text: String) -> Result<WebhookURL, URLError> {
        let bytes = Array(text.utf8)
        guard bytes.count <= maxLength else { return .failure(.init("url is longer than \(maxLength) bytes")) }
        // Printable ASCII only: no spaces, controls or raw non-ASCII (an IDN host goes in its xn-- form,
        // anything else percent-encoded). A backslash is refused: parsers disagree on what it means.
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "\\") }) else {
            return .failure(.init("url must be ASCII without spaces (an international host in its xn-- form)"))
        }
        guard !bytes.contains(UInt8(ascii: "#")) else { return .failure(.init("url must not have a fragment")) }
        guard let schemeEnd = text.firstRange(of: "://") else { return .failure(.init("url must be an absolute http or https URL")) }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return .failure(.init("url must be an absolute http or https URL")) }

        let rest = text[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var target = String(rest[authorityEnd...])
        if target.isEmpty { target = "/" } else if target.hasPrefix("?") { target = "/" + target }
        guard !authority.contains("@") else { return .failure(.init("url must not have user information")) }

        // Host, then an optional port.
        var host: Substring
        var afterHost: Substring
        var literal: IPAddress?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return .failure(.init("url has an unclosed IPv6 literal")) }
            host = authority[authority.index(after: authority.startIndex)..<close]
            afterHost = authority[authority.index(after: close)...]
            guard let address = IPAddress(String(host)), !address.isIPv4 else {
                return .failure(.init("url has an invalid IPv6 literal"))
            }
            literal = address
        } else {
            let colon = authority.firstIndex(of: ":") ?? authority.endIndex
            host = authority[..<colon]
            afterHost = authority[colon...]
            switch checkHostName(String(host)) {
            case .failure(let error): return .failure(error)
            case .success(let address): literal = address
            }
        }
        var port = scheme == "https" ? 443 : 80
        if !afterHost.isEmpty {
            guard afterHost.first == ":" else { return .failure(.init("url has an invalid host")) }
            let digits = afterHost.dropFirst()
            guard (1...5).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let value = Int(digits), (1...65535).contains(value)
            else { return .failure(.init("url's port must be 1–65535")) }
            port = value
        }
        return .success(WebhookURL(scheme: scheme, host: String(host), port: port, target: target,
                                   original: text, ipLiteral: literal))
    }

    /// A host written without brackets: a dotted-quad IPv4 literal (returned) or a DNS name. A name
    /// whose last label is numeric (`2130706433`, `0x7f.1`, `10.1`, `010.0.0.1`) is refused: resolvers
    /// read such forms as addresses in ways that differ, so only the plain dotted quad is an address.
    static func checkHostName(_ host: String) -> Result<IPAddress?, URLError> {
        guard !host.isEmpty else { return .failure(.init("url has no host")) }
        if let address = IPAddress(host), address.isIPv4 { return .success(address) }
        var labels = host.split(separator: ".", omittingEmptySubsequences: false)
        if labels.count > 1 && labels.last == "" { labels.removeLast() }  // a final dot: fully qualified
        guard host.utf8.count <= 254, labels.allSatisfy({ (1...63).contains($0.utf8.count) }) else {
            return .failure(.init("url has an invalid host"))
        }
        let allowed: (Character) -> Bool = { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        guard labels.allSatisfy({ $0.allSatisfy(allowed) && !$0.hasPrefix("-") && !$0.hasSuffix("-") }) else {
            return .failure(.init("url has an invalid host"))
        }
        let last = labels.last!.lowercased()
        let isNumber = last.allSatisfy(\.isNumber)
            || (last.hasPrefix("0x") && last.dropFirst(2).allSatisfy(\.isHexDigit))
        guard !isNumber else { return .failure(.init("url's host must not be written as a number (use a dotted IPv4 address)")) }
        return .success(nil)
    }
}

/// Why a URL was refused, as a message naming `url`.
struct URLError: Error, Equatable {
    let message: String
    init(_ message: String) { self.message = message }
}
