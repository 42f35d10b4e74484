import Foundation

/// A new account and its token (shown once: store it).
public struct AccountCredentials: Sendable, Hashable, Codable {
    public var accountID: String
    public var accountToken: String
}

/// A new device and its token (shown once: store it).
public struct DeviceCredentials: Sendable, Hashable, Codable {
    public var deviceID: String
    public var deviceToken: String
}

/// A device of the account, as listed.
public struct Device: Sendable, Hashable, Codable {
    public var deviceID: String
    public var name: String
    public var platform: String?
    public var createdAt: Date
    /// Objects of every type in its library.
    public var objectCount: Int
    /// Its library's current change token.
    public var changeToken: ChangeToken
    /// When its current token was issued, and last used (written at most once a minute; nil: never).
    public var tokenCreatedAt: Date?
    public var tokenLastUsedAt: Date?
    /// The device it took over from (while that one exists), and the one that took over from it
    /// (whose token is dead then). Nil from servers before successors.
    public var replaces: String?
    public var replacedBy: String?
}

/// A successor and its token (shown once: store it), and the device it replaces.
public struct SuccessorCredentials: Sendable, Hashable, Codable {
    public var deviceID: String
    public var deviceToken: String
    public var replaces: String
}

/// What `adopt()` carried over from the predecessor.
public struct Adoption: Sendable, Hashable, Decodable {
    /// A record with several candidates here: show them and let the person choose (`link`).
    public struct Ambiguous: Sendable, Hashable, Decodable {
        public var cloudIdentifier: CloudIdentifier
        public var localIdentifiers: [String]
    }
    /// Records now linked here; that were linked here already; with no candidate among this
    /// device's objects (yet: adopt again after uploading more).
    public var adopted: Int, alreadyLinked: Int, unmatched: Int
    /// Records with several candidates, by cloud identifier.
    public var ambiguous: [Ambiguous]
}

extension ConcordClient {
    /// Registers the device that takes over from `deviceID` (a new phone, a restored backup): with
    /// the account's token, or with that device's own token (a copied installation that learned it
    /// is a copy, `LibraryChangedElsewhereError`). From then on `deviceID`'s token is dead; its
    /// library stays, read-only, for `adopt()`. Not retried without its idempotency key's replay.
    public func registerSuccessor(of deviceID: String, name: String, platform: String? = nil) async throws -> SuccessorCredentials {
        struct Body: Encodable { var name: String; var platform: String? }
        return try await self.call(try self.request("POST", "/v1/devices/" + percentEncoded(deviceID) + "/successor",
                                                    body: Body(name: name, platform: platform), idempotent: false))
    }

    /// Carries over the links the predecessor had onto this device's objects uploaded so far
    /// (device token of the successor). Repeatable: adopt again after uploading more.
    public func adopt() async throws -> Adoption {
        struct Body: Encodable {}
        return try await self.call(try self.request("POST", "/v1/library/adopt", body: Body(), idempotent: false))
    }
    /// Creates an account (admin token).
    public func createAccount(name: String) async throws -> AccountCredentials {
        struct Body: Encodable { var name: String }
        return try await self.call(try self.request("POST", "/v1/accounts", body: Body(name: name), idempotent: false))
    }

    /// Registers a device of the account (account token).
    public func createDevice(name: String, platform: String? = nil) async throws -> DeviceCredentials {
        struct Body: Encodable { var name: String; var platform: String? }
        return try await self.call(try self.request("POST", "/v1/devices", body: Body(name: name, platform: platform), idempotent: false))
    }

    /// The account's devices, oldest first (account token).
    public func listDevices() async throws -> [Device] {
        struct Answer: Decodable { var devices: [Device] }
        return try await self.call(APIRequest(method: "GET", path: "/v1/devices", idempotent: true), as: Answer.self).devices
    }

    /// Deletes a device with its library, history and links (account token).
    public func deleteDevice(_ deviceID: String) async throws {
        _ = try await self.send(APIRequest(method: "DELETE", path: "/v1/devices/" + percentEncoded(deviceID), idempotent: true))
    }

    /// A new account token (account token); the one this client holds stops working at once:
    /// continue with `withToken(_:)`. Not retried (a lost answer loses the new token).
    public func rotateAccountToken() async throws -> String {
        struct Answer: Decodable { var accountToken: String }
        return try await self.call(APIRequest(method: "POST", path: "/v1/account/token", idempotent: false), as: Answer.self).accountToken
    }

    /// A new token for one of the account's devices (account token); the device's old token stops
    /// working at once, its library is untouched. Not retried.
    public func rotateDeviceToken(_ deviceID: String) async throws -> DeviceCredentials {
        try await self.call(APIRequest(method: "POST", path: "/v1/devices/" + percentEncoded(deviceID) + "/token", idempotent: false))
    }

    /// Deletes the account this client's account token belongs to, with everything it owns.
    public func deleteAccount() async throws {
        _ = try await self.send(APIRequest(method: "DELETE", path: "/v1/account", idempotent: false))
    }

    /// Deletes an account by ID with everything it owns (admin token).
    public func deleteAccount(_ accountID: String) async throws {
        _ = try await self.send(APIRequest(method: "DELETE", path: "/v1/accounts/" + percentEncoded(accountID), idempotent: true))
    }

    /// True when the server answers `/health` with 200 (no token needed).
    public func isHealthy() async -> Bool {
        (try? await self.send(APIRequest(method: "GET", path: "/health", idempotent: true))) != nil
    }
}
