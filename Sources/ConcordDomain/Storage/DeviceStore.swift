import Foundation

/// Server-wide reads of tokens and settings.
public protocol TokenReads {
    /// A server-wide setting (e.g. the change-token secret).
    func setting(_ key: String) throws -> [UInt8]?
    /// Who holds the token, and when it was last used (nil: never, or before this was kept).
    func tokenOwner(tokenHash: [UInt8]) throws -> TokenOwner?
}

extension TokenReads {
    /// Who holds the token.
    public func principal(tokenHash: [UInt8]) throws -> Principal? {
        try self.tokenOwner(tokenHash: tokenHash)?.principal
    }
}

/// Server-wide writes of tokens, settings and new accounts.
public protocol TokenWrites: TokenReads {
    func setSetting(_ key: String, _ value: [UInt8]) throws
    func insertAccount(accountID: String, name: String, tokenHash: [UInt8], createdAt: Date) throws
    /// Notes a use of the token (callers write at most once a minute per token).
    func touchToken(tokenHash: [UInt8], at: Double) throws
}

/// Reads of one account's own row, its devices and their tokens.
public protocol DeviceReads {
    func accountExists() throws -> Bool
    func device(_ device: DeviceRef) throws -> DeviceState?
    /// The account's devices, oldest first.
    func devices() throws -> [DeviceState]
    /// Each device's token: when issued and last used (device ID → times).
    func deviceTokenTimes() throws -> [String: TokenTimes]
}

/// Writes of one account's own row, its devices and their tokens.
public protocol DeviceWrites: DeviceReads {
    func insertDevice(_ device: DeviceRef, name: String, platform: String?, tokenHash: [UInt8], createdAt: Date) throws
    /// `successor` takes over from `predecessor`: each names the other, the predecessor's
    /// tokens are deleted (401 from this commit on), and its library feed is announced, so that a
    /// poll held with the dead token is answered (on every instance).
    func setSuccessor(_ successor: DeviceRef, of predecessor: DeviceRef) throws
    /// Removes the device, its token, library, links and history; false if it did not exist. A
    /// successor stops naming it (`replaces` null), and a predecessor it replaced is free again.
    func deleteDevice(_ device: DeviceRef) throws -> Bool
    /// Replaces the account's token (the old one stops at once); false when there is no such account.
    func replaceAccountToken(tokenHash: [UInt8], createdAt: Date) throws -> Bool
    /// Replaces the device's token, its library untouched; false when the account has no such device.
    func replaceDeviceToken(_ device: DeviceRef, tokenHash: [UInt8], createdAt: Date) throws -> Bool
    /// Deletes every row of the account (devices, libraries, records, history, journals, tokens);
    /// false when there is no such account.
    func deleteAccount() throws -> Bool
    func setAuthorization(_ device: DeviceRef, _ status: AuthorizationStatus) throws
    func updateDeviceCounters(_ device: DeviceRef, lastChangeSeq: Int64, objectCount: Int) throws
}
