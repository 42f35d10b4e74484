/// The addresses a webhook may not reach unless the operator lists them: every block that is not
/// globally reachable (private, loopback, link-local with the cloud metadata address, shared,
/// documentation, benchmarking, multicast, reserved), as the API reference lists them.
public enum ForbiddenAddresses {
    public static let ipv4: [CIDRBlock] = [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
        "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
    ].map { CIDRBlock($0)! }

    public static let ipv6: [CIDRBlock] = [
        "::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8", "2001:db8::/32", "64:ff9b::/96",
        "100::/64",
    ].map { CIDRBlock($0)! }

    /// Whether `address` is in a forbidden block; an IPv4-mapped or -compatible IPv6 address is
    /// judged by its IPv4 part too, so `::ffff:127.0.0.1` is as forbidden as `127.0.0.1`.
    public static func contains(_ address: IPAddress) -> Bool {
        if address.isIPv4 { return ipv4.contains { $0.contains(address) } }
        if ipv6.contains(where: { $0.contains(address) }) { return true }
        if let v4 = address.embeddedIPv4 { return contains(v4) }
        return false
    }
}
