import ConcordJSON
import ConcordTestSupport
import Foundation
import Testing

/// Runs Nicolas Seriot's JSONTestSuite (test_parsing/) against the parser:
/// `y_` files must parse, `n_` files must be rejected, `i_` files may go either way but must not crash.
@Suite(.needsJSONTestSuite) struct JSONTestSuiteTests {
    @Test func everyJSONTestSuiteParsingCaseHasTheExpectedOutcome() throws {
        let directory = try JSONTestSuiteData.requireDirectory()
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".json") }
            .sorted()
        var yesPassed = 0, yesTotal = 0, noPassed = 0, noTotal = 0
        var implementationAccepted: [String] = [], implementationRejected: [String] = []
        for name in names {
            let bytes = try [UInt8](Data(contentsOf: directory.appendingPathComponent(name)))
            let accepted: Bool
            do {
                _ = try JSONValue.parse(bytes)
                accepted = true
            } catch {
                accepted = false
            }
            switch name.first {
            case "y":
                yesTotal += 1
                if accepted { yesPassed += 1 }
                #expect(accepted, "\(name) must parse")
            case "n":
                noTotal += 1
                if !accepted { noPassed += 1 }
                #expect(!accepted, "\(name) must be rejected")
            default:
                if accepted { implementationAccepted.append(name) } else { implementationRejected.append(name) }
            }
        }
        print("JSONTestSuite: y_ \(yesPassed)/\(yesTotal) parsed, n_ \(noPassed)/\(noTotal) rejected, i_ \(implementationAccepted.count) accepted + \(implementationRejected.count) rejected")
        print("JSONTestSuite i_ accepted: \(implementationAccepted.joined(separator: " "))")
        #expect(yesTotal > 90 && noTotal > 180, "suite looks incomplete: \(yesTotal) y_, \(noTotal) n_")
    }

    @Test func jsonTestSuiteInputsParseIdenticallyFromEveryEntryPoint() throws {
        let directory = try JSONTestSuiteData.requireDirectory()
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }
        for name in names {
            let bytes = try [UInt8](Data(contentsOf: directory.appendingPathComponent(name)))
            let fromArray = Result { () throws(JSONParseError) in try JSONValue.parse(bytes) }
            let fromRaw = bytes.withUnsafeBytes { raw in Result { () throws(JSONParseError) in try JSONValue.parse(raw) } }
            // A non-contiguous collection takes the copying path.
            let fromLazy = Result { () throws(JSONParseError) in try JSONValue.parse(bytes.lazy.map { $0 }) }
            #expect(Self.same(fromArray, fromRaw), "\(name): array vs raw buffer")
            #expect(Self.same(fromArray, fromLazy), "\(name): array vs generic collection")
        }
    }

    static func same(_ a: Result<JSONValue, JSONParseError>, _ b: Result<JSONValue, JSONParseError>) -> Bool {
        switch (a, b) {
        case (.success(let x), .success(let y)):
            // NaN cannot occur (parser rejects non-finite), so == is a fair comparison.
            return x == y
        case (.failure(let x), .failure(let y)):
            return x == y
        default:
            return false
        }
    }
}

/// Crash resistance beyond the suite: every prefix and many single-byte mutations of each small
/// suite document must parse or throw, never trap.
@Suite(.needsJSONTestSuite) struct JSONMutationTests {
    @Test func truncatedAndMutatedSuiteDocumentsNeverCrash() throws {
        let directory = try JSONTestSuiteData.requireDirectory()
        var generator = SeededGenerator(state: 7)
        let interesting: [UInt8] = [0x00, 0x22, 0x5C, 0x5B, 0x5D, 0x7B, 0x7D, 0x2C, 0x3A, 0x2D, 0x30, 0x65, 0x75, 0x80, 0xBF, 0xC0, 0xED, 0xF0, 0xF4, 0xFF]
        var attempts = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasSuffix(".json") {
            let bytes = try [UInt8](Data(contentsOf: directory.appendingPathComponent(name)))
            guard bytes.count <= 2048 else { continue }
            for end in 0..<bytes.count {
                _ = try? JSONValue.parse(bytes[..<end])
                attempts += 1
            }
            for _ in 0..<min(64, bytes.count * 4) {
                var mutated = bytes
                let position = Int(generator.next() % UInt64(mutated.count))
                mutated[position] = interesting[Int(generator.next() % UInt64(interesting.count))]
                _ = try? JSONValue.parse(mutated)
                attempts += 1
            }
        }
        #expect(attempts > 1000)
    }

    @Test func slicesAndDataParseWithOffsetsRelativeToTheirStart() throws {
        let bytes = Array("xx[1,2]yy".utf8)
        #expect(try JSONValue.parse(bytes[2..<7]) == .array([.number(1), .number(2)]))
        #expect(try JSONValue.parse(Data(bytes[2..<7])) == .array([.number(1), .number(2)]))
        #expect {
            try JSONValue.parse(bytes[2..<8])
        } throws: { error in
            (error as? JSONParseError)?.offset == 5
        }
    }
}
