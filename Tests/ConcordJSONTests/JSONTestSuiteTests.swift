import ConcordJSON
import Foundation
import Testing

/// Runs Nicolas Seriot's JSONTestSuite (test_parsing/) against the parser:
/// `y_` files must parse, `n_` files must be rejected, `i_` files may go either way but must not crash.
@Suite struct JSONTestSuiteTests {
    /// The suite lives in `shared/testdata/` beside the repository (not copied in). Worktrees sit
    /// one level deeper than the main checkout, so walk up from this file until it appears.
    static func testParsingDirectory(from filePath: String = #filePath) -> URL? {
        var directory = URL(fileURLWithPath: filePath).deletingLastPathComponent()
        while directory.path != "/" && !directory.path.isEmpty {
            let candidate = directory.appendingPathComponent("shared/testdata/JSONTestSuite/test_parsing")
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), isDirectory.boolValue {
                return candidate
            }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }

    @Test func everyJSONTestSuiteParsingCaseHasTheExpectedOutcome() throws {
        let directory = try #require(Self.testParsingDirectory(), "shared/testdata/JSONTestSuite/test_parsing not found above \(#filePath)")
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
        let directory = try #require(Self.testParsingDirectory())
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
