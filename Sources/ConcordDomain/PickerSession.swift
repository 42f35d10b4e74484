import Foundation

/// How a photo picker's result changes an entry (`"mode"` of a selection).
public enum SelectionMode: String, Sendable, Equatable, CaseIterable {
    /// The picker showed the entry's photos and answers the whole selection: it replaces them.
    case replace
    /// The picker answers only what was just chosen (the limited-library picker): it is appended.
    case add
}

/// One step of a continuous picker session (`"session"` and `"sequence"`): the client's name for
/// the session and the step's place in it. Requests of one session may overtake each other on the
/// way, so the server applies a step only when its sequence is above every one applied before.
public struct PickerSessionStep: Sendable, Equatable {
    public var session: String
    public var sequence: Int64

    /// Longest session name, in characters.
    public static let maxSessionLength = 64
    /// Largest sequence: 2^53 − 1, the largest integer every JSON reader holds exactly.
    public static let maxSequence: Int64 = (1 << 53) - 1
    /// How long a session is remembered after its last applied selection: a day.
    public static let lifetime: Double = 24 * 3600

    /// The step, or `badRequest` naming the field: a session is 1–64 characters of `A-Z a-z 0-9 - _`,
    /// a sequence 0 to 2^53 − 1, and neither comes without the other.
    public init(session: String, sequence: Int64) throws(DomainError) {
        guard Self.isValidSession(session) else {
            throw DomainError.badRequest(message: "session must be 1 to \(Self.maxSessionLength) characters of A-Z, a-z, 0-9, - and _.", field: "session")
        }
        guard (0...Self.maxSequence).contains(sequence) else {
            throw DomainError.badRequest(message: "sequence must be an integer from 0 to 2^53 - 1 (\(Self.maxSequence)).", field: "sequence")
        }
        self.session = session
        self.sequence = sequence
    }

    /// The step of a selection that carries `session` and `sequence`, nil when it carries neither;
    /// one without the other is `badRequest` naming the one missing.
    public static func from(session: String?, sequence: Int64?) throws(DomainError) -> PickerSessionStep? {
        switch (session, sequence) {
        case (nil, nil): return nil
        case (let s?, let n?): return try PickerSessionStep(session: s, sequence: n)
        case (nil, _?): throw DomainError.badRequest(message: "The field \"session\" is required with \"sequence\".", field: "session")
        case (_?, nil): throw DomainError.badRequest(message: "The field \"sequence\" is required with \"session\".", field: "sequence")
        }
    }

    static func isValidSession(_ s: String) -> Bool {
        let bytes = s.utf8
        guard (1...Self.maxSessionLength).contains(bytes.count) else { return false }
        return bytes.allSatisfy { b in
            (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z")) || (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z"))
                || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
        }
    }
}

/// What a selection answers: the entry as it stands afterwards and, for a selection of a picker
/// session, whether it was applied (`false`: cancelled, or overtaken by a later step of its session).
public struct SelectionOutcome: Sendable, Equatable {
    public var entry: JournalEntryView
    /// nil for a selection without a session (its answer has no `"applied"`).
    public var applied: Bool?
}
