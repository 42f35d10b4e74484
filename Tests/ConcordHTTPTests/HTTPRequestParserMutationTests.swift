@testable import ConcordHTTP
import Testing

/// A cheap, deterministic stand-in for fuzzing: valid requests with random byte edits must
/// never crash the parser, and must give the same outcome however the bytes are split.
@Suite struct HTTPRequestParserMutationTests {
    private struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            self.state = self.state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return self.state >> 33
        }
        mutating func below(_ n: Int) -> Int { Int(self.next() % UInt64(n)) }
    }

    private static let seeds: [String] = [
        "GET /a?b=c HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n\r\n",
        "POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\nbody",
        "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;x=\"y\"\r\nabc\r\n0\r\nT: v\r\n\r\n",
        "GET /1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
        // Exactly at the limits used below, so one inserted byte crosses them.
        "GET /" + String(repeating: "a", count: 50) + " HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "b", count: 112) + "\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\n\r\n",
    ]

    /// Bytes that matter to framing, so edits hit the interesting branches often.
    private static let alphabet: [UInt8] = Array("\r\n :;,\t\"\\0123456789aAfFxX-+/".utf8) + [0x00, 0x7F, 0xFF]

    @Test func randomEditsNeverCrashAndDoNotDependOnSplitting() {
        var random = Generator(state: 0xC0FFEE)
        let limits = HTTPLimits(maxRequestLineBytes: 64, maxHeaderBytes: 128, maxHeaderCount: 6, maxBodyBytes: 32)
        var statuses: Set<String> = []
        var completed = 0
        for round in 0..<3000 {
            var input = Array(Self.seeds[round % Self.seeds.count].utf8)
            for _ in 0..<(1 + random.below(3)) {
                let position = random.below(input.count + 1)
                switch random.below(3) {
                case 0 where position < input.count:
                    input[position] = Self.alphabet[random.below(Self.alphabet.count)]
                case 1:
                    input.insert(Self.alphabet[random.below(Self.alphabet.count)], at: position)
                default:
                    if position < input.count { input.remove(at: position) }
                }
            }
            let whole = feed([input], limits: limits)
            let bytewise = feed(input.map { [$0] }, limits: limits)
            let a = random.below(input.count + 1)
            let b = a + random.below(input.count - a + 1)
            let threeWay = feed([Array(input[..<a]), Array(input[a..<b]), Array(input[b...])], limits: limits)
            #expect(whole == bytewise, "round \(round): \(String(decoding: input, as: UTF8.self).debugDescription)")
            #expect(whole == threeWay, "round \(round) split \(a),\(b): \(String(decoding: input, as: UTF8.self).debugDescription)")
            if whole != bytewise || whole != threeWay { return }
            if let error = whole.error { statuses.insert(error) }
            if whole.events.contains(where: { $0.hasPrefix("request") }) { completed += 1 }
        }
        // The edits must reach both outcomes and several error branches, or this proves little.
        #expect(completed > 100)
        #expect(statuses.count >= 5, "\(statuses)")
    }
}
