import Foundation

/// The domain service: every operation of API.md §3–§5 and §7, over a `ConcordStore`.
/// Synchronous and thread-safe; call it from worker threads, never from an event loop.
public final class ConcordService: Sendable {
    /// Limits and retention.
    public let configuration: DomainConfiguration
    let store: any ConcordStore
    let tokens: ChangeTokenCodec
    let clock: @Sendable () -> Date

    static let secretKey = "changeTokenSecret"

    /// Opens the service on `store`, creating the change-token secret on first start (it lives in the
    /// database so that tokens survive restarts and several servers sharing one database agree).
    public init(store: any ConcordStore, configuration: DomainConfiguration = DomainConfiguration(),
                clock: @escaping @Sendable () -> Date = { Date() }) throws(DomainError) {
        self.store = store
        self.configuration = configuration
        self.clock = clock
        let secret = try Self.run {
            if let s = try store.read({ tx in try tx.setting(Self.secretKey) }) { return s }
            return try store.write { tx in
                if let s = try tx.setting(Self.secretKey) { return s }
                let s = Secrets.randomBytes(32)
                try tx.setSetting(Self.secretKey, s)
                return s
            }
        }
        self.tokens = ChangeTokenCodec(secret: secret)
    }

    /// Runs storage work, turning anything that is not already a `DomainError` into `internalError`.
    static func run<T>(_ body: () throws -> T) throws(DomainError) -> T {
        do {
            return try body()
        } catch let error as DomainError {
            throw error
        } catch {
            throw DomainError.internalError(message: String(describing: error))
        }
    }

    func run<T>(_ body: () throws -> T) throws(DomainError) -> T { try Self.run(body) }

    var now: Date { self.clock() }

    /// True when storage answers a trivial read (for `GET /ready`).
    public func isReady() -> Bool {
        (try? self.store.read { tx -> Bool in
            _ = try tx.setting(Self.secretKey)
            return true
        }) ?? false
    }

    // MARK: - Accounts and devices (§3)

    /// Who a presented bearer token belongs to (looked up by its SHA-256), nil if unknown.
    public func authenticate(token: String) throws(DomainError) -> Principal? {
        guard !token.isEmpty, token.utf8.count <= 256 else { return nil }
        let hash = Secrets.tokenHash(token)
        return try self.run { try self.store.read { tx in try tx.principal(tokenHash: hash) } }
    }

    /// Creates an account; its token is returned once and stored only as a hash.
    public func createAccount(name: String) throws(DomainError) -> CreatedAccount {
        try Self.validateName(name, field: "name")
        let id = UUID().uuidString
        let token = Secrets.newToken(prefix: "cat_")
        let hash = Secrets.tokenHash(token)
        let now = self.now
        try self.run { try self.store.write { tx in try tx.insertAccount(accountID: id, name: name, tokenHash: hash, createdAt: now) } }
        return CreatedAccount(accountID: id, accountToken: token)
    }

    /// Creates a device of the account; its token is returned once and stored only as a hash.
    public func createDevice(accountID: String, name: String, platform: String?) throws(DomainError) -> CreatedDevice {
        try Self.validateName(name, field: "name")
        if let platform { try Self.validateName(platform, field: "platform") }
        let id = UUID().uuidString
        let token = Secrets.newToken(prefix: "cdt_")
        let hash = Secrets.tokenHash(token)
        let now = self.now
        try self.run {
            try self.store.write { tx in
                guard try tx.accountExists(accountID) else { throw DomainError.notFound(message: "No such account.") }
                try tx.insertDevice(DeviceRef(accountID: accountID, deviceID: id), name: name, platform: platform, tokenHash: hash, createdAt: now)
            }
        }
        return CreatedDevice(deviceID: id, deviceToken: token)
    }

    /// The account's devices, oldest first (by creation time, then device ID).
    public func listDevices(accountID: String) throws(DomainError) -> [DeviceSummary] {
        let states = try self.run { try self.store.read { tx in try tx.devices(accountID: accountID) } }
        return states.map { s in
            DeviceSummary(deviceID: s.ref.deviceID, name: s.name, platform: s.platform, createdAt: s.createdAt,
                          objectCount: s.objectCount, changeToken: self.tokens.encode(seq: s.lastChangeSeq, scope: .library(s.ref)))
        }
    }

    /// Deletes a device with its library, history, links and token. `notFound` when it is not the account's.
    public func deleteDevice(accountID: String, deviceID: String) throws(DomainError) {
        let ref = DeviceRef(accountID: accountID, deviceID: deviceID)
        let existed = try self.run { try self.store.write { tx in try tx.deleteDevice(ref) } }
        guard existed else { throw DomainError.notFound(message: "No such device.") }
    }

    static func validateName(_ s: String, field: String) throws(DomainError) {
        guard !s.isEmpty, s.utf8.count <= 1024 else {
            throw DomainError.badRequest(message: "\(field) must be 1 to 1024 bytes.", field: field)
        }
    }

    /// The device row, or `notFound` (a token whose device was deleted meanwhile).
    static func requireDevice(_ tx: any StoreReadTransaction, _ ref: DeviceRef) throws -> DeviceState {
        guard let d = try tx.device(ref) else { throw DomainError.notFound(message: "No such device.") }
        return d
    }
}

extension String {
    /// Byte-order comparison of UTF-8 (what the contract means by "sorted by byte order").
    @inline(__always)
    func utf8Precedes(_ other: String) -> Bool { self.utf8.lexicographicallyPrecedes(other.utf8) }
}
