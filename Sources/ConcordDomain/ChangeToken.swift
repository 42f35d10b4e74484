import Synchronization

/// The scope a change token belongs to: a device's library history or an account's journals.
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

/// The keys change tokens are signed with: key 0 is the original secret, later keys
/// are added by `concord rotate-change-key`, and `current` signs new tokens. Keys are kept, so a
/// token signed with any of them stays valid until the history it points into ages out.
public struct ChangeKeys: Sendable, Equatable {
    public var keys: [UInt8: [UInt8]]
    public var current: UInt8

    static let secretSetting = "changeTokenSecret"
    static let currentSetting = "changeTokenCurrentKey"
    static func keySetting(_ id: UInt8) -> String { "changeTokenKey.\(id)" }

    /// The keys stored in `tx`; nil before the first secret exists.
    static func load(_ tx: any ServerReadTransaction) throws -> ChangeKeys? {
        guard let secret = try tx.setting(Self.secretSetting) else { return nil }
        let current = try tx.setting(Self.currentSetting)?.first ?? 0
        var keys: [UInt8: [UInt8]] = [0: secret]
        if current > 0 {
            for id in 1...current {
                if let key = try tx.setting(Self.keySetting(id)) { keys[id] = key }
            }
        }
        return ChangeKeys(keys: keys, current: keys[current] == nil ? 0 : current)
    }

    /// The stored keys, creating the first secret when there is none.
    static func loadOrCreate(_ store: any ConcordStore) throws -> ChangeKeys {
        if let keys = try store.readServer({ tx in try Self.load(tx) }) { return keys }
        return try store.writeServer { tx in
            if let keys = try Self.load(tx) { return keys }
            let secret = Secrets.randomBytes(32)
            try tx.setSetting(Self.secretSetting, secret)
            return ChangeKeys(keys: [0: secret], current: 0)
        }
    }

    /// Adds a new random key and makes it the one that signs new tokens; returns its ID.
    static func rotate(_ store: any ConcordStore) throws -> UInt8 {
        _ = try Self.loadOrCreate(store)
        return try store.writeServer { tx in
            let keys = try Self.load(tx) ?? ChangeKeys(keys: [:], current: 0)
            guard keys.current < UInt8.max else { throw DomainError.badRequest(message: "All 255 change-token keys are used.", field: nil) }
            let id = keys.current + 1
            try tx.setSetting(Self.keySetting(id), Secrets.randomBytes(32))
            try tx.setSetting(Self.currentSetting, [id])
            return id
        }
    }
}

/// Encodes change tokens: opaque to clients, self-checking on the server.
///
/// Layout (base64url, no padding), version 1 (signed with key 0, the original secret):
/// `version(1) | kind(1) | seq(8, big endian) | tag(16)`; version 2 (a rotated key):
/// `version(1) | key ID(1) | kind(1) | seq(8) | tag(16)`. `tag` is the first 16 bytes of
/// HMAC-SHA-256(key, everything before it | scope). The scope (account and device) is not in
/// the token but in the MAC, so a token of another device or account, a forged or a garbled
/// one all fail verification the same way. A key ID this process does not know yet (another
/// instance rotated) is looked up once in storage through `reload`.
public final class ChangeTokenCodec: Sendable {
    private static let tagLength = 16
    private let keys: Mutex<ChangeKeys>
    private let reload: (@Sendable () -> ChangeKeys?)?

    public convenience init(secret: [UInt8]) {
        self.init(keys: ChangeKeys(keys: [0: secret], current: 0), reload: nil)
    }

    init(keys: ChangeKeys, reload: (@Sendable () -> ChangeKeys?)?) {
        self.keys = Mutex(keys)
        self.reload = reload
    }

    public func encode(seq: Int64, scope: ChangeTokenScope) -> String {
        let (id, key) = self.keys.withLock { ($0.current, $0.keys[$0.current] ?? []) }
        var bytes: [UInt8] = id == 0 ? [1, scope.kind] : [2, id, scope.kind]
        let u = UInt64(bitPattern: seq)
        for i in (0..<8).reversed() { bytes.append(UInt8(truncatingIfNeeded: u >> (UInt64(i) * 8))) }
        bytes += Self.tag(bytes, scope: scope, key: key)
        return Base64URL.encode(bytes)
    }

    /// The sequence number in `token`, or nil when it is malformed or not of this scope.
    public func decode(_ token: String, scope: ChangeTokenScope) -> Int64? {
        guard token.utf8.count <= 64, let bytes = Base64URL.decode(token), let version = bytes.first else { return nil }
        let header: Int, id: UInt8
        switch version {
        case 1: (header, id) = (2, 0)
        case 2 where bytes.count > 1: (header, id) = (3, bytes[1])
        default: return nil
        }
        guard bytes.count == header + 8 + Self.tagLength, bytes[header - 1] == scope.kind, let key = self.key(id) else { return nil }
        let body = Array(bytes[0..<header + 8])
        guard Secrets.constantTimeEquals(Self.tag(body, scope: scope, key: key), bytes[(header + 8)...]) else { return nil }
        var u: UInt64 = 0
        for b in bytes[header..<header + 8] { u = u << 8 | UInt64(b) }
        let seq = Int64(bitPattern: u)
        return seq >= 0 ? seq : nil
    }

    /// Key `id`, looked up in storage once when another process added it.
    private func key(_ id: UInt8) -> [UInt8]? {
        if let key = self.keys.withLock({ $0.keys[id] }) { return key }
        guard let fresh = self.reload?() else { return nil }
        return self.keys.withLock { keys in
            keys = fresh
            return keys.keys[id]
        }
    }

    private static func tag(_ body: [UInt8], scope: ChangeTokenScope, key: [UInt8]) -> [UInt8] {
        Array(HMACSHA256.authenticate(body + scope.scopeBytes, key: key).prefix(Self.tagLength))
    }
}
