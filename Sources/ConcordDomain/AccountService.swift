import Foundation

/// Accounts and devices.
public struct AccountService: ServiceArea {
    let core: ServiceCore

    /// Who a presented bearer token belongs to (looked up by its SHA-256), nil if unknown. Its
    /// last use is written at most once a minute, so a read stays a read.
    public func authenticate(token: String) throws(DomainError) -> Principal? {
        try self.authenticateWithDeviceCheck(token: token)?.principal
    }

    /// `authenticate`, with the device token's device and mapping version when storage read them
    /// with the token (`DeviceCheck`): what the request's mapping read may start from.
    public func authenticateWithDeviceCheck(token: String) throws(DomainError) -> (principal: Principal, deviceCheck: DeviceCheck?)? {
        guard !token.isEmpty, token.utf8.count <= 256 else { return nil }
        let hash = Secrets.tokenHash(token)
        guard let owner = try self.run({ try self.store.readServer { tx in try tx.tokenOwner(tokenHash: hash) } }) else { return nil }
        let now = self.now.timeIntervalSince1970
        if now - (owner.lastUsedAt ?? 0) >= Self.lastUseResolution {
            self.core.lastUse.note(hash, at: now, store: self.store)
        }
        return (owner.principal, owner.deviceCheck)
    }

    /// Token last-use times are kept to this many seconds.
    static let lastUseResolution = 60.0

    /// A new account token; the old one stops working at once. `notFound` without the account.
    public func rotateAccountToken(accountID: String, idempotency: IdempotencyScope? = nil) throws(DomainError) -> String {
        let token = Secrets.newToken(prefix: "cat_")
        let hash = Secrets.tokenHash(token)
        let now = self.now
        let replaced = try self.run { try self.core.write(account: accountID, idempotency: idempotency) { tx in try tx.replaceAccountToken(tokenHash: hash, createdAt: now) } }
        guard replaced else { throw DomainError.notFound(message: "No such account.") }
        return token
    }

    /// A new token for the device, its library untouched; the old token stops at once.
    /// `notFound` when the device is not the account's.
    public func rotateDeviceToken(accountID: String, deviceID: String, idempotency: IdempotencyScope? = nil) throws(DomainError) -> CreatedDevice {
        let token = Secrets.newToken(prefix: "cdt_")
        let hash = Secrets.tokenHash(token)
        let now = self.now
        let ref = DeviceRef(accountID: accountID, deviceID: deviceID)
        let replaced = try self.run { try self.core.write(account: accountID, idempotency: idempotency) { tx in try tx.replaceDeviceToken(ref, tokenHash: hash, createdAt: now) } }
        guard replaced else { throw DomainError.notFound(message: "No such device.") }
        return CreatedDevice(deviceID: deviceID, deviceToken: token)
    }

    /// Deletes the account and every row it owns, on this database; its tokens stop at once and
    /// this process's mapping index forgets it. `notFound` when there is no such account.
    public func deleteAccount(accountID: String) throws(DomainError) {
        let now = self.now.timeIntervalSince1970
        let existed = try self.run {
            try self.core.write(account: accountID, idempotency: nil) { tx in
                guard try tx.deleteAccount() else { return false }
                try WebhookOutbox.accountDeleted(self.core, tx, accountID: accountID, at: now)
                return true
            }
        }
        self.core.webhookEnvironment?.wake()
        self.core.index?.forget(account: accountID)
        guard existed else { throw DomainError.notFound(message: "No such account.") }
    }

    /// Creates an account; its token is returned once and stored only as a hash.
    public func createAccount(name: String) throws(DomainError) -> CreatedAccount {
        try Self.validateName(name, field: "name")
        let id = self.core.newID()
        let token = Secrets.newToken(prefix: "cat_")
        let hash = Secrets.tokenHash(token)
        let now = self.now
        try self.run { try self.store.writeServer { tx in try tx.insertAccount(accountID: id, name: name, tokenHash: hash, createdAt: now) } }
        return CreatedAccount(accountID: id, accountToken: token)
    }

    /// Creates a device of the account; its token is returned once and stored only as a hash.
    public func createDevice(accountID: String, name: String, platform: String?, idempotency: IdempotencyScope? = nil) throws(DomainError) -> CreatedDevice {
        try Self.validateName(name, field: "name")
        if let platform { try Self.validateName(platform, field: "platform") }
        return try self.insertDevice(accountID: accountID, name: name, platform: platform, idempotency: idempotency) { tx in
            guard try tx.accountExists() else { throw DomainError.notFound(message: "No such account.") }
        }
    }

    /// A new device of the account with a new token, inside one write: `check` first, then the
    /// device quota, then `after` (given the new device) — all or nothing.
    private func insertDevice(accountID: String, name: String, platform: String?, replaces: String? = nil, idempotency: IdempotencyScope?,
                              check: (any AccountWriteTransaction) throws -> Void,
                              after: (any AccountWriteTransaction, DeviceRef) throws -> Void = { _, _ in }) throws(DomainError) -> CreatedDevice {
        let id = self.core.newID()
        let token = Secrets.newToken(prefix: "cdt_")
        let hash = Secrets.tokenHash(token)
        let now = self.now
        try self.run {
            try self.core.write(account: accountID, idempotency: idempotency) { tx in
                try check(tx)
                let quota = self.configuration.quotas.devicesPerAccount
                if try tx.devices().count >= quota { throw DomainError.quotaExceeded(quota: "devicesPerAccount", limit: quota) }
                let device = DeviceRef(accountID: accountID, deviceID: id)
                try tx.insertDevice(device, name: name, platform: platform, tokenHash: hash, createdAt: now)
                try after(tx, device)
                try WebhookOutbox.deviceCreated(self.core, tx, device: device, replaces: replaces, at: now.timeIntervalSince1970)
            }
        }
        self.core.webhookEnvironment?.wake()
        return CreatedDevice(deviceID: id, deviceToken: token)
    }

    /// `POST /v1/devices/{deviceID}/successor`: a new device of the account that takes over
    /// from `deviceID`. From its commit the predecessor's token is `401` (its polls held with it are
    /// answered), and its library, links and history stay, read-only, until it is deleted. `caller`
    /// is the device when its own token asks (it may name only itself: `403` otherwise).
    public func createSuccessor(accountID: String, of deviceID: String, name: String, platform: String?,
                                caller: DeviceRef? = nil, idempotency: IdempotencyScope? = nil) throws(DomainError) -> CreatedSuccessor {
        if let caller, caller.deviceID != deviceID || caller.accountID != accountID { throw DomainError.forbidden }
        try Self.validateName(name, field: "name")
        if let platform { try Self.validateName(platform, field: "platform") }
        let predecessor = DeviceRef(accountID: accountID, deviceID: deviceID)
        let created = try self.insertDevice(accountID: accountID, name: name, platform: platform, replaces: deviceID, idempotency: idempotency, check: { tx in
            guard let old = try tx.device(predecessor) else { throw DomainError.notFound(message: "No such device.") }
            if let successor = old.replacedBy { throw DomainError.deviceAlreadyReplaced(replacedBy: successor) }
        }, after: { tx, successor in try tx.setSuccessor(successor, of: predecessor) })
        return CreatedSuccessor(device: created, replaces: deviceID)
    }

    /// The account's devices, oldest first (by creation time, then device ID).
    public func listDevices(accountID: String, page: PageRequest? = nil) throws(DomainError) -> (devices: [DeviceSummary], hasMore: Bool) {
        let all = try self.listDevices(accountID: accountID)
        guard let page else { return (all, false) }
        let paged = try page.apply(all, id: \.deviceID)
        return (paged.items, paged.hasMore)
    }

    public func listDevices(accountID: String) throws(DomainError) -> [DeviceSummary] {
        let (states, times) = try self.run {
            try self.store.read(account: accountID) { tx in (try tx.devices(), try tx.deviceTokenTimes()) }
        }
        return states.map { s in
            let time = times[s.ref.deviceID]
            return DeviceSummary(deviceID: s.ref.deviceID, name: s.name, platform: s.platform, createdAt: s.createdAt,
                                 objectCount: s.objectCount, changeToken: self.tokens.encode(seq: s.lastChangeSeq, scope: .library(s.ref)),
                                 tokenCreatedAt: time?.createdAt.map(Date.init(timeIntervalSince1970:)),
                                 tokenLastUsedAt: time?.lastUsedAt.map(Date.init(timeIntervalSince1970:)),
                                 replaces: s.replaces, replacedBy: s.replacedBy)
        }
    }

    /// Deletes a device with its library, history, links and token. `notFound` when it is not the account's.
    public func deleteDevice(accountID: String, deviceID: String) throws(DomainError) {
        let ref = DeviceRef(accountID: accountID, deviceID: deviceID)
        let now = self.now.timeIntervalSince1970
        let existed = try self.run {
            try self.core.write(account: accountID, idempotency: nil) { tx in
                guard try tx.deleteDevice(ref) else { return false }
                try WebhookOutbox.deviceDeleted(self.core, tx, device: ref, at: now)
                return true
            }
        }
        self.core.webhookEnvironment?.wake()
        guard existed else { throw DomainError.notFound(message: "No such device.") }
    }
}
