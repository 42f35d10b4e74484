/// Severity of a log line, ordered from chattiest to most severe (swift-log's levels
/// without `critical`, which Concord has no use for).
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case trace = 0, debug, info, notice, warning, error

    /// The level's name as written in configuration and in each log line.
    public var name: String {
        switch self {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .notice: "notice"
        case .warning: "warning"
        case .error: "error"
        }
    }

    /// Parses a level name (case-insensitive); nil when it is not one of the six names.
    public init?(name: String) {
        guard let level = LogLevel.allCases.first(where: { $0.name == name.lowercased() }) else { return nil }
        self = level
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}
