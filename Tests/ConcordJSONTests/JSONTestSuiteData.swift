import Foundation
import Testing

/// Where Nicolas Seriot's JSONTestSuite (its `test_parsing/` folder) is found for the tests that
/// run it. It is public test data kept outside the repository, so a clone of the project alone
/// does not have it: those tests are then skipped, with `skipMessage` in the run's summary.
enum JSONTestSuiteData {
    /// Names the `test_parsing` folder (or the JSONTestSuite checkout that holds it).
    static let directoryVariable = "CONCORD_JSONTESTSUITE_DIR"
    /// Set to `1` (as `.ci/run` does) to make a missing suite a failure instead of a skip.
    static let requiredVariable = "CONCORD_REQUIRE_JSONTESTSUITE"

    static let skipMessage: Comment = """
        JSONTestSuite not found: the parser's y_/n_/i_ conformance cases, their mutations and the \
        writer's round trip are skipped. Get the data from https://github.com/nst/JSONTestSuite and \
        set CONCORD_JSONTESTSUITE_DIR to its test_parsing folder, or keep the project beside \
        shared/testdata/JSONTestSuite/ as .ci/run does.
        """

    /// The `test_parsing` folder: from `CONCORD_JSONTESTSUITE_DIR`, else `shared/testdata/` found
    /// walking up from this file (worktrees sit one level deeper than the main checkout).
    static let directory: URL? = locate(environment: ProcessInfo.processInfo.environment, filePath: #filePath)

    /// True when the tests run: the data is here, or CI demands it (then a missing folder fails them).
    static var shouldRun: Bool {
        directory != nil || ProcessInfo.processInfo.environment[requiredVariable] == "1"
    }

    /// The folder, or a failed test naming what is missing (only reached when `shouldRun`).
    static func requireDirectory(sourceLocation: SourceLocation = #_sourceLocation) throws -> URL {
        try #require(directory, "\(requiredVariable)=1 but JSONTestSuite's test_parsing was not found (\(skipMessage))",
                     sourceLocation: sourceLocation)
    }

    static func locate(environment: [String: String], filePath: String) -> URL? {
        if let named = environment[directoryVariable], !named.isEmpty {
            let url = URL(fileURLWithPath: named)
            for candidate in [url, url.appendingPathComponent("test_parsing")] where isDirectory(candidate) {
                if (try? FileManager.default.contentsOfDirectory(atPath: candidate.path).contains { $0.hasSuffix(".json") }) == true {
                    return candidate
                }
            }
            return nil
        }
        var folder = URL(fileURLWithPath: filePath).deletingLastPathComponent()
        while folder.path != "/" && !folder.path.isEmpty {
            let candidate = folder.appendingPathComponent("shared/testdata/JSONTestSuite/test_parsing")
            if isDirectory(candidate) { return candidate }
            folder = folder.deletingLastPathComponent()
        }
        return nil
    }

    private static func isDirectory(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test only where JSONTestSuite's data is (see `JSONTestSuiteData`).
    static var needsJSONTestSuite: Self {
        .enabled(if: JSONTestSuiteData.shouldRun, JSONTestSuiteData.skipMessage)
    }
}

/// Where the data is looked for: the variable first, then `shared/testdata/` above the file.
@Suite struct JSONTestSuiteDataTests {
    @Test func theVariableNamesTheFolderOrTheCheckoutHoldingIt() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("jsonsuite-\(UUID().uuidString)")
        let parsing = root.appendingPathComponent("test_parsing")
        try FileManager.default.createDirectory(at: parsing, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        #expect(JSONTestSuiteData.locate(environment: ["CONCORD_JSONTESTSUITE_DIR": parsing.path], filePath: "/x/y.swift") == nil,
                "a folder without .json cases is not the suite")
        try Data("[]".utf8).write(to: parsing.appendingPathComponent("y_empty.json"))
        for named in [parsing.path, root.path] {
            #expect(JSONTestSuiteData.locate(environment: ["CONCORD_JSONTESTSUITE_DIR": named], filePath: "/x/y.swift")?.path == parsing.path)
        }
        // A variable naming nothing is not overridden by the shared folder: the person asked for that one.
        #expect(JSONTestSuiteData.locate(environment: ["CONCORD_JSONTESTSUITE_DIR": root.appendingPathComponent("none").path], filePath: #filePath) == nil)
    }

    @Test func withoutTheVariableTheSharedFolderAboveTheFileIsFound() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("jsonsuite-\(UUID().uuidString)")
        let parsing = root.appendingPathComponent("shared/testdata/JSONTestSuite/test_parsing")
        try FileManager.default.createDirectory(at: parsing, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let file = root.appendingPathComponent("project/Tests/ConcordJSONTests/Some.swift").path
        #expect(JSONTestSuiteData.locate(environment: [:], filePath: file)?.standardizedFileURL.path == parsing.standardizedFileURL.path)
        #expect(JSONTestSuiteData.locate(environment: [:], filePath: "/nonexistent-\(UUID().uuidString)/Tests/A.swift") == nil)
    }
}
