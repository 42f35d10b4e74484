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
}

extension ConcordClient {
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

    /// True when the server answers `/health` with 200 (no token needed).
    public func isHealthy() async -> Bool {
        (try? await self.send(APIRequest(method: "GET", path: "/health", idempotent: true))) != nil
    }
}
