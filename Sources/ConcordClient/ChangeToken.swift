/// A point in a change history (a device's library, or an account's journals), like
/// PhotoKit's `PHPersistentChangeToken`: opaque. Store its `rawValue` and build it back with
/// `init(rawValue:)`; never parse it.
public struct ChangeToken: Sendable, Hashable, Codable, RawRepresentable, CustomStringConvertible {
    /// The token as the server wrote it.
    public let rawValue: String

    /// Rebuilds a token stored earlier.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public var description: String { self.rawValue }

    /// Decodes the bare string the API carries.
    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    /// Encodes as the bare string the API carries.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self.rawValue)
    }
}
