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

    // Codable as the bare string the API carries: the standard library's coding of a
    // `RawRepresentable` whose raw value is a `String`.
}
