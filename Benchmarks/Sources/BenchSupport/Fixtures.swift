// Deterministic fixtures shared by the Hummingbird peer and the in-process benchmarks, so
// both sides of every comparison see byte-identical identifiers.

/// The body of `POST /v1/library/cloud-identifiers`.
public struct CloudIdentifiersRequest: Codable, Sendable {
    public var localIdentifiers: [String]
    public init(localIdentifiers: [String]) { self.localIdentifiers = localIdentifiers }
}

/// One successful mapping in the answer.
public struct CloudIdentifierMapping: Codable, Sendable, Equatable {
    public var localIdentifier: String
    public var cloudIdentifier: String
    public init(localIdentifier: String, cloudIdentifier: String) {
        self.localIdentifier = localIdentifier
        self.cloudIdentifier = cloudIdentifier
    }
}

/// The answer of `POST /v1/library/cloud-identifiers`.
public struct CloudIdentifiersResponse: Codable, Sendable, Equatable {
    public var mappings: [CloudIdentifierMapping]
    public init(mappings: [CloudIdentifierMapping]) { self.mappings = mappings }
}

/// Identifier generators: realistic shapes, no randomness (runs are comparable).
public enum Fixtures {
    /// A PhotoKit-shaped asset identifier, e.g. `9F983DBA-EC35-42B8-8773-B597CF782EDD/L0/001`.
    public static func localIdentifier(_ index: Int) -> String {
        var state = UInt64(truncatingIfNeeded: index) &+ 0x5EED
        let bytes = self.randomBytes(count: 16, state: &state)
        return self.uuidString(bytes) + "/L0/001"
    }

    /// `count` distinct local identifiers.
    public static func localIdentifiers(count: Int) -> [String] {
        (0..<count).map { self.localIdentifier($0) }
    }

    /// A cloud identifier in PhotoKit's layout, `<UUID>:001:<43-char base64url SHA-256-sized
    /// fingerprint>`, derived from the local identifier alone (the peer keeps no storage).
    /// Not a real SHA-256: only the shape and the determinism matter here.
    public static func cloudIdentifier(for localIdentifier: String) -> String {
        var state = self.fnv1a(localIdentifier)
        let guid = self.randomBytes(count: 16, state: &state)
        let fingerprint = self.randomBytes(count: 32, state: &state)
        return self.uuidString(guid) + ":001:" + self.base64URL(fingerprint)
    }

    /// The request body for a batch, as a client would send it (compact JSON).
    public static func requestBody(localIdentifiers: [String]) -> [UInt8] {
        var out: [UInt8] = Array(#"{"localIdentifiers":["#.utf8)
        for (index, identifier) in localIdentifiers.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: identifier.utf8)   // fixtures need no escaping
            out.append(UInt8(ascii: "\""))
        }
        out.append(contentsOf: "]}".utf8)
        return out
    }

    // MARK: - Helpers

    private static func fnv1a(_ string: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in string.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// splitmix64: cheap, well-mixed, reproducible.
    private static func randomBytes(count: Int, state: inout UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        while bytes.count < count {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            for shift in stride(from: 0, to: 64, by: 8) where bytes.count < count {
                bytes.append(UInt8(truncatingIfNeeded: z >> UInt64(shift)))
            }
        }
        return bytes
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func uuidString(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { out.append(UInt8(ascii: "-")) }
            out.append(self.hexDigits[Int(byte >> 4)])
            out.append(self.hexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static let base64URLAlphabet =
        Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Base64url without padding (32 bytes → 43 characters).
    private static func base64URL(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index < bytes.count {
            let b0 = UInt32(bytes[index])
            let b1 = index + 1 < bytes.count ? UInt32(bytes[index + 1]) : 0
            let b2 = index + 2 < bytes.count ? UInt32(bytes[index + 2]) : 0
            let triple = (b0 << 16) | (b1 << 8) | b2
            let produced = min(4, (bytes.count - index) * 4 / 3 + ((bytes.count - index) < 3 ? 1 : 0))
            for slot in 0..<produced {
                out.append(self.base64URLAlphabet[Int((triple >> UInt32(18 - 6 * slot)) & 0x3F)])
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
