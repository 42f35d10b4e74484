@testable import ConcordHTTP
import Testing

/// What a parser produced for one input: events (rendered as text so cases compare by value)
/// up to the first error, and that error's status and name.
struct ParseOutcome: Equatable, CustomStringConvertible {
    var events: [String] = []
    var error: String?

    var description: String { "events: \(self.events), error: \(self.error ?? "none")" }
}

func render(_ event: HTTPParserEvent) -> String {
    switch event {
    case .head(let head):
        let cl = head.contentLength.map(String.init) ?? "nil"
        return "head \(head.method) \(head.target) HTTP/\(head.version.major).\(head.version.minor)"
            + " keepAlive=\(head.keepAlive) continue=\(head.expectsContinue) length=\(cl) chunked=\(head.isChunked)"
    case .request(let request, let keepAlive):
        let headers = request.headers.map { "\($0.name)=\($0.value)" }.joined(separator: "|")
        return "request \(request.method) \(request.target) [\(headers)] body=\(String(decoding: request.body, as: UTF8.self))"
            + " keepAlive=\(keepAlive)"
    }
}

/// Feeds `pieces` in order, draining events after each append; stops at the first error.
func feed(_ pieces: [[UInt8]], limits: HTTPLimits) -> ParseOutcome {
    var parser = HTTPRequestParser(limits: limits)
    var outcome = ParseOutcome()
    for piece in pieces {
        parser.append(piece)
        while true {
            do {
                guard let event = try parser.next() else { break }
                outcome.events.append(render(event))
            } catch {
                outcome.error = "\(error.status) \(error.name)"
                return outcome
            }
        }
    }
    return outcome
}

/// Asserts that `input` gives the same outcome fed whole, one byte at a time, and split in
/// two at every index — the parser's result must not depend on how TCP cut the stream —
/// and that this outcome is `expected`.
func expectSameOutcomeInEveryFeeding(
    _ input: [UInt8], limits: HTTPLimits, expected: ParseOutcome,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let whole = feed([input], limits: limits)
    #expect(whole == expected, "fed whole", sourceLocation: sourceLocation)

    let bytewise = feed(input.map { [$0] }, limits: limits)
    #expect(bytewise == expected, "fed byte by byte", sourceLocation: sourceLocation)

    for split in 0...input.count {
        let outcome = feed([Array(input[..<split]), Array(input[split...])], limits: limits)
        if outcome != expected {
            Issue.record("split at \(split): \(outcome), expected \(expected)", sourceLocation: sourceLocation)
            return   // one report per case is enough
        }
    }
}
