import Foundation

/// Accounts and devices (API.md §3).
public struct AccountService: ServiceArea {
    let core: ServiceCore

    /// Who a presented bearer token belongs to (looked up by its SHA-256), nil if unknown.
    public func authenticate(token: String) throws(DomainError) -> Principal? {
        guard !token.isEmpty, token.utf8.count <= 256 else { return nil }
        let hash = Secrets.tokenHash(token)
        return try self.run { try self.store.readServer { tx in try tx.principal(tokenHash: hash) } }
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
    public func createDevice(accountID: String, name: String, platform: String?) throws(DomainError) -> CreatedDevice {
        try Self.validateName(name, field: "name")
        if let platform { try Self.validateName(platform, field: "platform") }
        let id = self.core.newID()
        let token = Secrets.newToken(prefix: "cdt_")
        let hash = Secrets.tokenHash(token)
        let now = self.now
        try self.run {
            try self.core.write(account: accountID) { tx in
                guard try tx.accountExists(accountID) else { throw DomainError.notFound(message: "No such account.") }
                try tx.insertDevice(DeviceRef(accountID: accountID, deviceID: id), name: name, platform: platform, tokenHash: hash, createdAt: now)
            }
        }
        return CreatedDevice(deviceID: id, deviceToken: token)
    }

    /// The account's devices, oldest first (by creation time, then device ID).
    public func listDevices(accountID: String) throws(DomainError) -> [DeviceSummary] {
        let states = try self.run { try self.store.read(account: accountID) { tx in try tx.devices(accountID: accountID) } }
        return states.map { s in
            DeviceSummary(deviceID: s.ref.deviceID, name: s.name, platform: s.platform, createdAt: s.createdAt,
                          objectCount: s.objectCount, changeToken: self.tokens.encode(seq: s.lastChangeSeq, scope: .library(s.ref)))
        }
    }

    /// Deletes a device with its library, history, links and token. `notFound` when it is not the account's.
    public func deleteDevice(accountID: String, deviceID: String) throws(DomainError) {
        let ref = DeviceRef(accountID: accountID, deviceID: deviceID)
        let existed = try self.run { try self.core.write(account: accountID) { tx in try tx.deleteDevice(ref) } }
        guard existed else { throw DomainError.notFound(message: "No such device.") }
    }
}
