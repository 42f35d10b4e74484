/// The scope a change token belongs to: a device's library history (§7) or an account's journals (§6).
public enum ChangeTokenScope: Sendable, Equatable {
    case library(DeviceRef)
    case journals(accountID: String)

    fileprivate var kind: UInt8 {
        switch self {
        case .library: return 1
        case .journals: return 2
        }
    }

    fileprivate var scopeBytes: [UInt8] {
        switch self {
        case .library(let d): return Array(("L:" + d.accountID + ":" + d.deviceID).utf8)
        case .journals(let a): return Array(("J:" + a).utf8)
        }
    }
}

/// Encodes change tokens: opaque to clients, self-checking on the server.
///
/// Layout (base64url, no padding): `version(1) | kind(1) | seq(8, big endian) | tag(16)`, where
/// `tag` is the first 16 bytes of HMAC-SHA-256(secret, version | kind | seq | scope). The scope
/// (account and device) is not in the token but in the MAC, so a token of another device or
/// account, a forged or a garbled one all fail verification the same way.
public struct ChangeTokenCodec: Sendable {
    private static let version: UInt8 = 1
    private static let tagLength = 16
    private let secret: [UInt8]

    public init(secret: [UInt8]) { self.secret = secret }

    public func encode(seq: Int64, scope: ChangeTokenScope) -> String {
        var bytes: [UInt8] = [Self.version, scope.kind]
        let u = UInt64(bitPattern: seq)
        for i in (0..<8).reversed() { bytes.append(UInt8(truncatingIfNeeded: u >> (UInt64(i) * 8))) }
        bytes += self.tag(bytes, scope: scope)
        return Base64URL.encode(bytes)
    }

    /// The sequence number in `token`, or nil when it is malformed or not of this scope.
    public func decode(_ token: String, scope: ChangeTokenScope) -> Int64? {
        guard token.utf8.count <= 64, let bytes = Base64URL.decode(token), bytes.count == 10 + Self.tagLength,
              bytes[0] == Self.version, bytes[1] == scope.kind else { return nil }
        let body = Array(bytes[0..<10])
        guard Secrets.constantTimeEquals(self.tag(body, scope: scope), bytes[10...]) else { return nil }
        var u: UInt64 = 0
        for b in bytes[2..<10] { u = u << 8 | UInt64(b) }
        let seq = Int64(bitPattern: u)
        return seq >= 0 ? seq : nil
    }

    private func tag(_ body: [UInt8], scope: ChangeTokenScope) -> [UInt8] {
        Array(HMACSHA256.authenticate(body + scope.scopeBytes, key: self.secret).prefix(Self.tagLength))
    }
}
