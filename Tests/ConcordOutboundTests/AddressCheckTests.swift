import Testing
@testable import ConcordOutbound

/// The forbidden blocks, each at its edges and just outside them, and how allowedHosts opens them.
@Suite struct AddressCheckTests {
    /// (address, forbidden?) — first and last address of every block, and the neighbours outside it.
    static let forbiddenTable: [(String, Bool)] = [
        // 0.0.0.0/8
        ("0.0.0.0", true), ("0.255.255.255", true), ("1.0.0.0", false),
        // 10/8
        ("9.255.255.255", false), ("10.0.0.0", true), ("10.255.255.255", true), ("11.0.0.0", false),
        // 100.64/10 (shared address space)
        ("100.63.255.255", false), ("100.64.0.0", true), ("100.127.255.255", true), ("100.128.0.0", false),
        // 127/8
        ("126.255.255.255", false), ("127.0.0.0", true), ("127.0.0.1", true), ("127.255.255.255", true), ("128.0.0.0", false),
        // 169.254/16, the cloud metadata address included
        ("169.253.255.255", false), ("169.254.0.0", true), ("169.254.169.254", true), ("169.254.255.255", true), ("169.255.0.0", false),
        // 172.16/12
        ("172.15.255.255", false), ("172.16.0.0", true), ("172.31.255.255", true), ("172.32.0.0", false),
        // 192.0.0/24 and 192.0.2/24 (192.0.1/24 between them is public)
        ("191.255.255.255", false), ("192.0.0.0", true), ("192.0.0.255", true), ("192.0.1.0", false),
        ("192.0.1.255", false), ("192.0.2.0", true), ("192.0.2.255", true), ("192.0.3.0", false),
        // 192.168/16
        ("192.167.255.255", false), ("192.168.0.0", true), ("192.168.255.255", true), ("192.169.0.0", false),
        // 198.18/15
        ("198.17.255.255", false), ("198.18.0.0", true), ("198.19.255.255", true), ("198.20.0.0", false),
        // 198.51.100/24
        ("198.51.99.255", false), ("198.51.100.0", true), ("198.51.100.255", true), ("198.51.101.0", false),
        // 203.0.113/24
        ("203.0.112.255", false), ("203.0.113.0", true), ("203.0.113.255", true), ("203.0.114.0", false),
        // 224/4 and 240/4: everything from 224.0.0.0 up
        ("223.255.255.255", false), ("224.0.0.0", true), ("239.255.255.255", true), ("240.0.0.0", true), ("255.255.255.255", true),
        // public IPv4
        ("8.8.8.8", false), ("1.1.1.1", false), ("93.184.216.34", false),

        // ::, ::1
        ("::", true), ("::1", true),
        // fc00::/7, fd00:ec2::254 included
        ("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false), ("fc00::", true), ("fd00:ec2::254", true),
        ("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true), ("fe00::", false),
        // fe80::/10
        ("fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false), ("fe80::", true), ("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true), ("fec0::", false),
        // ff00::/8
        ("feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false), ("ff00::", true), ("ff02::1", true), ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true),
        // 2001:db8::/32
        ("2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", false), ("2001:db8::", true), ("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", true), ("2001:db9::", false),
        // 64:ff9b::/96 (NAT64)
        ("64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", false), ("64:ff9b::", true), ("64:ff9b::8.8.8.8", true), ("64:ff9b::1:0:0", false),
        // 100::/64 (discard)
        ("ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false), ("100::", true), ("100::ffff:ffff:ffff:ffff", true), ("100:0:0:1::", false),
        // IPv4-mapped: judged by the IPv4 part
        ("::ffff:127.0.0.1", true), ("::ffff:7f00:1", true), ("::ffff:10.0.0.1", true), ("::ffff:169.254.169.254", true),
        ("::ffff:0.0.0.0", true), ("::ffff:8.8.8.8", false), ("::ffff:1.1.1.1", false),
        // IPv4-compatible: likewise
        ("::127.0.0.1", true), ("::10.0.0.1", true), ("::0.0.0.2", true), ("::192.168.1.1", true), ("::8.8.8.8", false),
        // public IPv6
        ("2606:4700:4700::1111", false), ("2001:4860:4860::8888", false), ("::1:0:0:0", false),
    ]

    @Test(arguments: forbiddenTable)
    func forbiddenBlocks(_ text: String, _ forbidden: Bool) throws {
        let address = try #require(IPAddress(text), "\(text) parses")
        #expect(ForbiddenAddresses.contains(address) == forbidden, "\(text)")
        let open = try DestinationPolicy(allowedHosts: [])
        #expect(open.allows(address, forHost: text) == !forbidden, "\(text)")
    }

    /// Address spellings: only the dotted quad and inet_pton's IPv6 forms are addresses.
    static let spellingTable: [(String, String?)] = [
        ("127.0.0.1", "127.0.0.1"), ("0.0.0.0", "0.0.0.0"), ("255.255.255.255", "255.255.255.255"),
        ("2130706433", nil), ("0x7f.1", nil), ("0x7f.0.0.1", nil), ("0177.0.0.1", nil), ("127.1", nil),
        ("127.0.1", nil), ("127.0.0.1.", nil), ("127.0.0.256", nil), ("127.0.0.01", nil), ("1.2.3.4.5", nil),
        ("::ffff:7f00:1", "::ffff:127.0.0.1"), ("::FFFF:127.0.0.1", "::ffff:127.0.0.1"), ("0:0:0:0:0:0:0:1", "::1"),
        ("[::1]", nil), ("fe80::1%eth0", nil), ("::g", nil), ("", nil),
    ]

    @Test(arguments: spellingTable)
    func addressSpellings(_ text: String, _ expected: String?) {
        #expect(IPAddress(text)?.description == expected, "\(text)")
    }

    /// allowedHosts: addresses, blocks (v4 and v6, mapped forms included), and names.
    static let allowedTable: [(address: String, host: String, allowed: Bool)] = [
        ("127.0.0.1", "127.0.0.1", true),          // listed address
        ("127.0.0.2", "127.0.0.2", false),         // its neighbour is not
        ("::ffff:127.0.0.1", "::ffff:127.0.0.1", true),  // the same destination, mapped
        ("10.1.2.3", "10.1.2.3", true),            // inside 10.1.0.0/16
        ("10.2.0.0", "10.2.0.0", false),           // outside it
        ("::ffff:10.1.9.9", "::ffff:10.1.9.9", true),
        ("fd12::5", "fd12::5", true),              // inside fd12::/16
        ("fd13::5", "fd13::5", false),
        ("::1", "::1", true),                      // listed as [::1]
        ("fe80::1", "fe80::1", false),
        ("192.168.7.7", "relay.internal", true),   // a listed name allows what it resolves to
        ("192.168.7.7", "RELAY.Internal.", true),  // compared without case or final dot
        ("192.168.7.7", "other.internal", false),
        ("169.254.169.254", "relay.example", false),
        ("8.8.8.8", "anything.example", true),     // public: always
    ]

    @Test(arguments: allowedTable)
    func allowedHostsOpenForbiddenAddresses(_ address: String, _ host: String, _ allowed: Bool) throws {
        let policy = try DestinationPolicy(allowedHosts: ["127.0.0.1", " 10.1.0.0/16 ", "fd12::/16", "[::1]", "relay.internal"])
        #expect(policy.allows(try #require(IPAddress(address)), forHost: host) == allowed, "\(address) for \(host)")
    }

    static let badEntries = [
        "", "10.0.0.0/33", "::/129", "10.0.0.0/", "/8", "10.0.0.0/x", "http://relay", "relay:8080", "a b",
        "2130706433", "0x7f.1", "127.1", "-bad.example", "bad-.example", "exa mple", "[10.0.0.1]", "[::1",
        "fe80::1%eth0", "ünicode.example",
    ]

    @Test(arguments: badEntries)
    func badAllowedHostsEntriesAreNamed(_ entry: String) {
        #expect(throws: DestinationPolicyError(entry: entry)) { try DestinationPolicy(allowedHosts: ["ok.example", entry]) }
        let message = DestinationPolicyError(entry: entry).description
        #expect(message.contains("webhooks.allowedHosts") && message.contains("\"\(entry)\""))
    }

    @Test func goodAllowedHostsEntries() throws {
        let policy = try DestinationPolicy(allowedHosts: ["relay.internal", "xn--bcher-kva.example", "localhost", "10.0.0.0/8", "10.1.2.3/8", "::1", "[fd00::1]", "fd00::/8", "192.168.1.1"])
        #expect(policy.allowedNames == ["relay.internal", "xn--bcher-kva.example", "localhost"])
        #expect(policy.allowedBlocks.map(\.description) == ["10.0.0.0/8", "10.0.0.0/8", "::1/128", "fd00::1/128", "fd00::/8", "192.168.1.1/32"])
    }

    /// Resolution: literals are checked without a lookup; any forbidden address refuses.
    @Test func checkResolvedLiteralsAndNames() throws {
        let open = try DestinationPolicy(allowedHosts: [])
        #expect(open.checkResolved(host: "8.8.8.8", timeout: 5) == .ok([IPAddress("8.8.8.8")!]))
        #expect(open.checkResolved(host: "127.0.0.1", timeout: 5) == .forbiddenAddress)
        #expect(open.checkResolved(host: "::ffff:7f00:1", timeout: 5) == .forbiddenAddress)
        #expect(open.checkResolved(host: "169.254.169.254", timeout: 5) == .forbiddenAddress)
        #expect(open.checkResolved(host: "fd00:ec2::254", timeout: 5) == .forbiddenAddress)
        // localhost resolves through /etc/hosts to loopback addresses only.
        #expect(open.checkResolved(host: "localhost", timeout: 5) == .forbiddenAddress)
        // `.invalid` never resolves (RFC 2606).
        #expect(open.checkResolved(host: "no-such-host.invalid", timeout: 2) == .unresolvable)

        let listed = try DestinationPolicy(allowedHosts: ["localhost", "127.0.0.0/8"])
        guard case .ok(let addresses) = listed.checkResolved(host: "localhost", timeout: 5) else {
            Issue.record("a listed name resolves to its addresses")
            return
        }
        #expect(addresses.contains(IPAddress("127.0.0.1")!))
        #expect(listed.checkResolved(host: "127.9.9.9", timeout: 5) == .ok([IPAddress("127.9.9.9")!]))
    }
}
