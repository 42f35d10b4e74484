import Glibc

/// An IP address as 16 bytes (IPv4 as its IPv4-mapped IPv6 form, RFC 4291 §2.5.5.2, so that
/// `1.2.3.4` and `::ffff:1.2.3.4` — how a dual-stack listener sees an IPv4 peer — are one address).
public struct IPAddress: Sendable, Hashable {
    public let bytes: [UInt8]

    /// Parses an IPv4 or IPv6 literal (an IPv6 one may be in brackets and carry a zone, `%eth0`,
    /// which is dropped); nil for anything else.
    public init?(_ text: some StringProtocol) {
        var literal = String(text)
        if literal.hasPrefix("["), literal.hasSuffix("]") { literal = String(literal.dropFirst().dropLast()) }
        if let zone = literal.firstIndex(of: "%") { literal = String(literal[..<zone]) }
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            let host = withUnsafeBytes(of: &v4.s_addr) { Array($0) }
            self.bytes = [UInt8](repeating: 0, count: 10) + [0xff, 0xff] + host
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, literal, &v6) == 1 else { return nil }
        self.bytes = withUnsafeBytes(of: &v6) { Array($0) }
    }

    /// Whether it is an IPv4 address (or IPv4-mapped IPv6 address).
    public var isIPv4: Bool { self.bytes[0..<10].allSatisfy { $0 == 0 } && self.bytes[10] == 0xff && self.bytes[11] == 0xff }
}

/// A block of addresses in CIDR notation (RFC 4632 §3.1): `10.0.0.0/8`, `2001:db8::/32`, or a
/// single address (`192.0.2.7`, as `/32` or `/128`). Used for the trusted proxies.
public struct IPAddressRange: Sendable, Hashable, CustomStringConvertible {
    public let network: IPAddress
    /// Leading bits that must match, counted over the 16-byte form (an IPv4 prefix + 96).
    public let prefixBits: Int
    public let description: String

    /// Parses `ADDRESS` or `ADDRESS/BITS`; nil when malformed.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2, let address = IPAddress(parts[0]) else { return nil }
        let width = address.isIPv4 && !parts[0].contains(":") ? 32 : 128
        var bits = width
        if parts.count == 2 {
            guard !parts[1].isEmpty, parts[1].utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                  let given = Int(parts[1]), (0...width).contains(given) else { return nil }
            bits = given
        }
        self.network = address
        self.prefixBits = bits + (128 - width)
        self.description = String(text)
    }

    /// Whether `address` lies in the block.
    public func contains(_ address: IPAddress) -> Bool {
        var remaining = self.prefixBits
        for index in 0..<16 where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xff : ~(0xff >> UInt8(remaining))
            if address.bytes[index] & mask != self.network.bytes[index] & mask { return false }
            remaining -= 8
        }
        return true
    }

    /// Whether any of `ranges` holds the address written `text` (false when it is no address).
    public static func any(_ ranges: [IPAddressRange], contains text: String?) -> Bool {
        guard !ranges.isEmpty, let text, let address = IPAddress(text) else { return false }
        return ranges.contains { $0.contains(address) }
    }
}
