/// The result of checking a webhook URL from its text alone.
public enum URLCheck: Equatable, Sendable {
    case ok(WebhookURL)
    /// Not a valid webhook URL; the message names `url` and says why.
    case invalid(String)
    /// `http` to a host the operator did not list.
    case insecureScheme
}

/// The result of resolving a destination's host and checking its addresses.
public enum AddressCheck: Equatable, Sendable {
    /// Every address the host resolved to, all allowed.
    case ok([IPAddress])
    /// No address (or none within the time allowed).
    case unresolvable
    /// At least one address is forbidden. Which one is never told to the caller.
    case forbiddenAddress
}

/// A bad `webhooks.allowedHosts` entry.
public struct DestinationPolicyError: Error, Equatable, CustomStringConvertible {
    public let entry: String
    public var description: String {
        "webhooks.allowedHosts: \"\(self.entry)\" is not a host name, an IP address or a CIDR block"
    }
}

/// Where webhooks may go: public addresses over `https`, plus what the operator lists in
/// `webhooks.allowedHosts` (host names, IP addresses, CIDR blocks), which may also use `http`.
public struct DestinationPolicy: Sendable {
    /// Listed names, lower-case without a final dot.
    public let allowedNames: Set<String>
    /// Listed addresses, each a block (`/32` or `/128` for a single address).
    public let allowedBlocks: [CIDRBlock]

    /// Reads the entries; throws on the first that is neither a host name, an IP address (IPv6 with
    /// or without brackets) nor a CIDR block.
    public init(allowedHosts: [String]) throws {
        var names: Set<String> = []
        var blocks: [CIDRBlock] = []
        for raw in allowedHosts {
            let entry = raw.trimmedOfSpaces
            var unbracketed = entry
            if entry.hasPrefix("[") && entry.hasSuffix("]") { unbracketed = String(entry.dropFirst().dropLast()) }
            if entry.contains("/") {
                guard let block = CIDRBlock(entry) else { throw DestinationPolicyError(entry: raw) }
                blocks.append(block)
            } else if let address = IPAddress(unbracketed), unbracketed == entry || !address.isIPv4 {
                blocks.append(CIDRBlock(network: address, prefixLength: address.bytes.count * 8)!)
            } else if !entry.contains(":"), case .success(nil) = WebhookURL.checkHostName(entry) {
                names.insert(WebhookURL.normalizeName(entry))
            } else {
                throw DestinationPolicyError(entry: raw)
            }
        }
        self.allowedNames = names
        self.allowedBlocks = blocks
    }

    /// Checks a URL from its text alone: its form, then its scheme (`http` only to a listed host
    /// name or IP literal, or an IP literal inside a listed block).
    public func validateURL(_ url: String) -> URLCheck {
        switch WebhookURL.parse(url) {
        case .failure(let error): return .invalid(error.message)
        case .success(let parsed): return self.allowsScheme(of: parsed) ? .ok(parsed) : .insecureScheme
        }
    }

    /// Whether the URL's scheme may be used: `https` always, `http` only to a listed host.
    public func allowsScheme(of url: WebhookURL) -> Bool {
        if url.scheme == "https" { return true }
        if let literal = url.ipLiteral { return self.isListed(literal) }
        return self.allowedNames.contains(url.normalizedName)
    }

    /// Whether a connection for `host` (as written in the URL) may go to `address`: a public address,
    /// a listed one (or one inside a listed block), or any address of a listed host name.
    public func allows(_ address: IPAddress, forHost host: String) -> Bool {
        !ForbiddenAddresses.contains(address) || self.isListed(address)
            || self.allowedNames.contains(WebhookURL.normalizeName(host))
    }

    /// Whether the address, or the IPv4 address an IPv4-mapped or -compatible one carries, is in a
    /// listed block (listing `127.0.0.1` also allows `::ffff:127.0.0.1`, the same destination).
    func isListed(_ address: IPAddress) -> Bool {
        if self.allowedBlocks.contains(where: { $0.contains(address) }) { return true }
        if let v4 = address.embeddedIPv4 { return self.allowedBlocks.contains { $0.contains(v4) } }
        return false
    }

    /// Resolves `host` (within `timeout` seconds) and checks every address: any forbidden one
    /// refuses the destination. An IP literal is checked without a lookup. For create and update;
    /// each delivery resolves and checks again.
    public func checkResolved(host: String, timeout: Double = 5) -> AddressCheck {
        guard let addresses = Resolver.addresses(of: host, timeout: timeout), !addresses.isEmpty else {
            return .unresolvable
        }
        return addresses.allSatisfy({ self.allows($0, forHost: host) }) ? .ok(addresses) : .forbiddenAddress
    }
}
