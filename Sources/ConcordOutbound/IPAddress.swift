import Glibc

/// An IPv4 or IPv6 address as its network-order bytes (4 or 16 of them).
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// 4 bytes for IPv4, 16 for IPv6, most significant first.
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    public var isIPv4: Bool { self.bytes.count == 4 }

    /// Parses an address literal: IPv4 strictly as four decimal parts 0–255 without leading zeros
    /// (so `0x7f.1`, `2130706433` or `010.0.0.1` are not addresses), IPv6 as `inet_pton` reads it,
    /// without brackets and without a zone (`%eth0`).
    public init?(_ text: String) {
        if let v4 = IPAddress.parseDottedQuad(text) {
            self.bytes = v4
            return
        }
        guard text.contains(":"), !text.contains("%") else { return nil }
        var storage = in6_addr()
        guard inet_pton(AF_INET6, text, &storage) == 1 else { return nil }
        self.bytes = withUnsafeBytes(of: &storage) { Array($0) }
    }

    /// Four decimal parts 0–255, no leading zeros, nothing else.
    static func parseDottedQuad(_ text: String) -> [UInt8]? {
        let parts = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            if part.count > 1 && part.first == UInt8(ascii: "0") { return nil }
            let value = part.reduce(0) { $0 * 10 + Int($1 - 48) }
            guard value <= 255 else { return nil }
            bytes.append(UInt8(value))
        }
        return bytes
    }

    /// The IPv4 address an IPv4-mapped (`::ffff:a.b.c.d`) or IPv4-compatible (`::a.b.c.d`) IPv6
    /// address carries; nil for every other address. `::` and `::1` are not read as compatible.
    public var embeddedIPv4: IPAddress? {
        guard self.bytes.count == 16, self.bytes[0..<10].allSatisfy({ $0 == 0 }) else { return nil }
        let mapped = self.bytes[10] == 0xff && self.bytes[11] == 0xff
        let compatible = self.bytes[10] == 0 && self.bytes[11] == 0
        guard mapped || compatible else { return nil }
        let v4 = Array(self.bytes[12..<16])
        if compatible && v4[0] == 0 && v4[1] == 0 && v4[2] == 0 && v4[3] <= 1 { return nil }
        return IPAddress(bytes: v4)
    }

    public var description: String {
        if self.isIPv4 { return self.bytes.map(String.init).joined(separator: ".") }
        var storage = in6_addr()
        withUnsafeMutableBytes(of: &storage) { $0.copyBytes(from: self.bytes) }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &storage, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// How the address is written in a URL's host or a curl resolve entry: IPv6 in brackets.
    var bracketed: String { self.isIPv4 ? self.description : "[\(self.description)]" }
}

/// An address block, `10.0.0.0/8` or `fc00::/7`.
public struct CIDRBlock: Hashable, Sendable, CustomStringConvertible {
    /// The block's first address (bits past the prefix are zero).
    public let network: IPAddress
    public let prefixLength: Int

    public init?(network: IPAddress, prefixLength: Int) {
        guard prefixLength >= 0, prefixLength <= network.bytes.count * 8 else { return nil }
        self.network = IPAddress(bytes: CIDRBlock.masked(network.bytes, prefixLength))!
        self.prefixLength = prefixLength
    }

    /// Parses `address/length`; bits set past the prefix are cleared (`10.1.2.3/8` is `10.0.0.0/8`).
    public init?(_ text: String) {
        let halves = text.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2, let address = IPAddress(String(halves[0])),
              (1...3).contains(halves[1].count), halves[1].allSatisfy({ $0.isASCII && $0.isNumber }),
              let length = Int(halves[1])
        else { return nil }
        self.init(network: address, prefixLength: length)
    }

    static func masked(_ bytes: [UInt8], _ prefixLength: Int) -> [UInt8] {
        var result = bytes
        for index in result.indices {
            let bitsKept = max(0, min(8, prefixLength - index * 8))
            result[index] &= bitsKept == 0 ? 0 : UInt8(truncatingIfNeeded: 0xff << (8 - bitsKept))
        }
        return result
    }

    public func contains(_ address: IPAddress) -> Bool {
        address.bytes.count == self.network.bytes.count
            && CIDRBlock.masked(address.bytes, self.prefixLength) == self.network.bytes
    }

    public var description: String { "\(self.network)/\(self.prefixLength)" }
}
