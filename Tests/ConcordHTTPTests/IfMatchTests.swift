import ConcordHTTP
import Testing

/// `If-Match` parsing (RFC 9110 §13.1.1): one table of field lines and what they mean.
@Suite struct IfMatchTests {
    enum Outcome: Equatable {
        case absent
        case field(IfMatchField)
        case invalid
    }

    static let cases: [(fields: [String], expected: Outcome)] = [
        ([], .absent),
        (["*"], .field(.any)),
        (["\"7\""], .field(.strong(["7"]))),
        (["\"7\", \"8\""], .field(.strong(["7", "8"]))),
        (["\"7\"", "\"8\""], .field(.strong(["7", "8"]))),          // two field lines are one list
        (["W/\"7\", \"8\""], .field(.strong(["8"]))),               // weak tags never match strongly
        (["W/\"7\""], .field(.strong([]))),
        ([" , \"7\" ,, "], .field(.strong(["7"]))),                 // empty list elements are ignored
        (["\"\""], .field(.strong([""]))),
        (["7"], .invalid),                                       // unquoted
        (["\"7"], .invalid),                                     // unterminated
        (["\"a b\""], .invalid),                                 // space inside
        (["*, \"7\""], .invalid),                                // "*" stands alone
        (["\"7\" x"], .invalid),
        ([","], .invalid),                                       // no element at all
    ]

    @Test(arguments: cases.indices) func parses(_ index: Int) {
        let c = Self.cases[index]
        let headers = HTTPHeaders(c.fields.map { (name: "If-Match", value: $0) })
        let outcome: Outcome
        do {
            outcome = try headers.ifMatch().map { .field($0) } ?? .absent
        } catch {
            outcome = .invalid
        }
        #expect(outcome == c.expected, "\(c.fields)")
    }
}
