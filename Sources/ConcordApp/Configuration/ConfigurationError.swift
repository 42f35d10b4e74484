/// A configuration or command-line problem: one line naming the key and what was
/// expected. The process prints it and exits with status 2.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { self.message }
}
