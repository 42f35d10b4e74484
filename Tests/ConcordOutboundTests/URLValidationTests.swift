import Testing
@testable import ConcordOutbound

/// Webhook URL rules, checked from the text alone, one rule per case.
@Suite struct URLValidationTests {
    /// "ok scheme host port target", "invalid", or "insecure".
    static let table: [(url: String, expected: String)] = [
        // Accepted forms.
        ("https://relay.example/hooks", "ok https relay.example 443 /hooks"),
        ("https://relay.example", "ok https relay.example 443 /"),
        ("https://relay.example?x=1", "ok https relay.example 443 /?x=1"),
        ("HTTPS://Relay.Example:8443/a/b?c=d&e=%20", "ok https Relay.Example 8443 /a/b?c=d&e=%20"),
        ("https://relay.example.:1/", "ok https relay.example. 1 /"),
        ("https://relay.example:65535/", "ok https relay.example 65535 /"),
        ("https://xn--bcher-kva.example/", "ok https xn--bcher-kva.example 443 /"),
        ("https://8.8.8.8/", "ok https 8.8.8.8 443 /"),
        ("https://127.0.0.1/", "ok https 127.0.0.1 443 /"),                       // form only: the address check comes later
        ("https://[2606:4700:4700::1111]:8443/x", "ok https 2606:4700:4700::1111 8443 /x"),
        ("https://[::ffff:7f00:1]/", "ok https ::ffff:7f00:1 443 /"),           // valid form; its address is forbidden
        ("https://a_b.example/", "ok https a_b.example 443 /"),
        ("https://relay.example/" + String(repeating: "a", count: 2048 - 22), "ok https relay.example 443 /" + String(repeating: "a", count: 2048 - 22)),
        // Length: 2049 bytes.
        ("https://relay.example/" + String(repeating: "a", count: 2048 - 21), "invalid"),
        // Scheme and form.
        ("ftp://relay.example/", "invalid"),
        ("file:///etc/passwd", "invalid"),
        ("gopher://relay.example/", "invalid"),
        ("//relay.example/", "invalid"),
        ("relay.example/hooks", "invalid"),
        ("https:relay.example", "invalid"),
        ("", "invalid"),
        // Host.
        ("https:///path", "invalid"),
        ("https://:443/", "invalid"),
        ("https://bücher.example/", "invalid"),
        ("https://relay..example/", "invalid"),
        ("https://-relay.example/", "invalid"),
        ("https://relay.example%2F/", "invalid"),
        ("https://" + String(repeating: "a", count: 64) + ".example/", "invalid"),
        ("https://[::1/", "invalid"),
        ("https://[127.0.0.1]/", "invalid"),
        ("https://[fe80::1%25eth0]/", "invalid"),
        // Numeric hosts in any other form than the dotted quad.
        ("https://2130706433/", "invalid"),
        ("https://0x7f.1/", "invalid"),
        ("https://0x7f000001/", "invalid"),
        ("https://0177.0.0.1/", "invalid"),
        ("https://127.1/", "invalid"),
        ("https://127.0.1/", "invalid"),
        ("https://127.0.0.0x1/", "invalid"),
        ("https://1.2.3.256/", "invalid"),
        ("https://relay.123/", "invalid"),
        // Port.
        ("https://relay.example:0/", "invalid"),
        ("https://relay.example:65536/", "invalid"),
        ("https://relay.example:/", "invalid"),
        ("https://relay.example:http/", "invalid"),
        ("https://relay.example:+443/", "invalid"),
        ("https://relay.example:443:1/", "invalid"),
        // User information, fragment, characters.
        ("https://user:pass@relay.example/", "invalid"),
        ("https://user@relay.example/", "invalid"),
        ("https://relay.example@evil.example/", "invalid"),
        ("https://relay.example/#frag", "invalid"),
        ("https://relay.example/a#", "invalid"),
        ("https://relay.example/a b", "invalid"),
        ("https://relay.example/\u{00e9}", "invalid"),
        ("https://relay.example\\@evil.example/", "invalid"),
        ("https://relay.example/\r\nX: y", "invalid"),
        // http: only to listed hosts (the policy lists relay.internal, 10.9.9.9 and 192.168.0.0/16, fd00::/8).
        ("http://relay.example/", "insecure"),
        ("http://8.8.8.8/", "insecure"),
        ("http://10.9.9.8/", "insecure"),
        ("http://relay.internal/", "ok http relay.internal 80 /"),
        ("http://RELAY.internal.:8080/x", "ok http RELAY.internal. 8080 /x"),
        ("http://10.9.9.9/", "ok http 10.9.9.9 80 /"),
        ("http://192.168.44.1:81/", "ok http 192.168.44.1 81 /"),
        ("http://[fd00::7]/", "ok http fd00::7 80 /"),
        ("http://[::ffff:10.9.9.9]/", "ok http ::ffff:10.9.9.9 80 /"),
        ("http://sub.relay.internal/", "insecure"),                                // names match exactly
        ("http://2130706433/", "invalid"),                                         // form before scheme
    ]

    @Test(arguments: table)
    func webhookURLRules(_ url: String, _ expected: String) throws {
        let policy = try DestinationPolicy(allowedHosts: ["relay.internal", "10.9.9.9", "192.168.0.0/16", "fd00::/8"])
        let described: String
        switch policy.validateURL(url) {
        case .ok(let parsed):
            described = "ok \(parsed.scheme) \(parsed.host) \(parsed.port) \(parsed.target)"
            #expect(parsed.original == url)
        case .invalid(let message):
            described = "invalid"
            #expect(message.hasPrefix("url"), "the message names url: \(message)")
        case .insecureScheme:
            described = "insecure"
        }
        #expect(described == expected, "\(url.prefix(80))")
    }

    @Test func originHasNoPathOrQuery() throws {
        let policy = try DestinationPolicy(allowedHosts: [])
        guard case .ok(let a) = policy.validateURL("https://relay.example/hook?token=SECRET"),
              case .ok(let b) = policy.validateURL("https://[2606:4700::1]:8443/x?k=v")
        else { Issue.record("valid URLs"); return }
        #expect(a.origin == "https://relay.example:443")
        #expect(b.origin == "https://[2606:4700::1]:8443")
    }

    /// Retry-After in both forms (RFC 9110: delay-seconds, or an HTTP-date in any of its three forms).
    static let retryAfterTable: [(String, Int?)] = [
        ("120", 120), (" 30 ", 30), ("0", 0), ("99999999999999999999", 999_999_999_999),
        ("Sun, 06 Nov 1994 08:50:37 GMT", 60),          // IMF-fixdate, a minute after `now`
        ("Sunday, 06-Nov-94 08:50:37 GMT", 60),         // RFC 850
        ("Sun Nov  6 08:50:37 1994", 60),               // asctime
        ("Sun, 06 Nov 1994 08:48:37 GMT", 0),           // in the past
        ("-5", nil), ("1.5", nil), ("soon", nil), ("", nil), ("Sun, 06 Nov 1994 25:00:00 GMT", nil),
        ("Sun, 06 Foo 1994 08:50:37 GMT", nil),
    ]

    @Test(arguments: retryAfterTable)
    func retryAfter(_ value: String, _ expected: Int?) {
        let now = 784_111_777  // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(RetryAfter.seconds(value, now: now) == expected, "\(value)")
    }
}
