/// The client addresses a request's proxies recorded: the `for=` parameters of `Forwarded`
/// (RFC 7239 §4), or else the entries of `X-Forwarded-For` (its de-facto form: the client
/// first, each proxy appending the address it received from). Only a trusted proxy's word is worth
/// anything; deciding whose to believe is the caller's (`Dispatcher.clientAddress`).
public enum ForwardedFor {
    /// The nodes in order, the original client first; each an address literal without brackets or
    /// port, or what was written there when it is not an address (`unknown`, an obfuscated
    /// `_hidden`, RFC 7239 §6). Nil when neither header is present.
    public static func chain(_ headers: HTTPHeaders) -> [String]? {
        let forwarded = headers[all: "Forwarded"]
        if !forwarded.isEmpty {
            var nodes: [String] = []
            for value in forwarded {
                for element in value.split(separator: ",") {
                    // forwarded-element = [ forwarded-pair ] *( ";" [ forwarded-pair ] )
                    for pair in element.split(separator: ";") {
                        let trimmed = pair.trimmingSpaces()
                        guard let equals = trimmed.firstIndex(of: "="), trimmed[..<equals].lowercased() == "for" else { continue }
                        nodes.append(Self.node(trimmed[trimmed.index(after: equals)...]))
                    }
                }
            }
            return nodes
        }
        let legacy = headers[all: "X-Forwarded-For"]
        guard !legacy.isEmpty else { return nil }
        return legacy.flatMap { $0.split(separator: ",").map { Self.node($0.trimmingSpaces()) } }
    }

    /// A node's address: quotes, brackets and a port removed (`"[2001:db8::1]:4711"` → `2001:db8::1`,
    /// `192.0.2.43:47011` → `192.0.2.43`).
    static func node(_ text: Substring) -> String {
        var value = text
        if value.count >= 2, value.first == "\"", value.last == "\"" { value = value.dropFirst().dropLast() }
        if value.first == "[" {
            guard let close = value.firstIndex(of: "]") else { return String(value) }
            return String(value[value.index(after: value.startIndex)..<close])
        }
        // One colon: IPv4 with a port; more: a bare IPv6 literal (X-Forwarded-For writes them so).
        if let colon = value.firstIndex(of: ":"), value[value.index(after: colon)...].firstIndex(of: ":") == nil {
            return String(value[..<colon])
        }
        return String(value)
    }
}
