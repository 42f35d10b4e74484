@testable import ConcordStorage
import Testing

/// What both engines' batch writes keep of a list naming a row twice (`RowByRow`).
struct RowByRowTests {
    /// A list of (row, value) pairs and the pairs a batch keeps of it.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var pairs: [[String]]
        var kept: [[String]]
        var testDescription: String { self.name }
    }

    static let fillCases: [Case] = [
        Case(name: "none", pairs: [], kept: []),
        Case(name: "distinct records keep their order", pairs: [["B", "f1"], ["A", "f2"]], kept: [["B", "f1"], ["A", "f2"]]),
        Case(name: "the first fill of a record wins", pairs: [["A", "f1"], ["B", "f2"], ["A", "f3"]], kept: [["A", "f1"], ["B", "f2"]]),
        Case(name: "an empty fingerprint fills nothing, and does not hide a later fill", pairs: [["A", ""], ["A", "f1"]], kept: [["A", "f1"]]),
    ]

    @Test(arguments: RowByRowTests.fillCases) func firstFillPerRecord(_ c: Case) {
        let kept = RowByRow.firstFillPerRecord(c.pairs.map { ($0[0], $0[1]) })
        #expect(kept.map { [$0.guid, $0.fingerprint] } == c.kept)
    }

    static let linkCases: [Case] = [
        Case(name: "none", pairs: [], kept: []),
        Case(name: "distinct objects keep their order", pairs: [["b", "G1"], ["a", "G2"]], kept: [["b", "G1"], ["a", "G2"]]),
        Case(name: "the last link of an object wins, in its place", pairs: [["a", "G1"], ["b", "G2"], ["a", "G3"]], kept: [["b", "G2"], ["a", "G3"]]),
        Case(name: "NFC and NFD spellings are two objects", pairs: [["\u{E9}", "G1"], ["e\u{301}", "G2"]], kept: [["\u{E9}", "G1"], ["e\u{301}", "G2"]]),
    ]

    @Test(arguments: RowByRowTests.linkCases) func lastLinkPerObject(_ c: Case) {
        let kept = RowByRow.lastLinkPerObject(c.pairs.map { ($0[0], $0[1]) })
        #expect(kept.map { [$0.localIdentifier, $0.guid] } == c.kept)
    }
}
