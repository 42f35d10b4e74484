import Foundation
import Testing

@testable import ConcordApp

/// docs/openapi.yaml and the router describe the same API: the same (method, path template)
/// pairs, no more, no fewer. HEAD is in neither: the router answers it for every GET route
/// itself, and the document says so once instead of listing it per path.
@Suite struct OpenAPIRouteAgreementTests {
    /// One operation: `GET /v1/devices`.
    struct Operation: Hashable, Comparable, CustomStringConvertible {
        var method: String
        var path: String
        var description: String { "\(self.method) \(self.path)" }
        static func < (a: Operation, b: Operation) -> Bool { (a.path, a.method) < (b.path, b.method) }
    }

    /// The repository root (this file is Tests/ConcordAppTests/…).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// OpenAPI's path template for a router pattern: a rest capture `{name...}` is `{name}`
    /// (the document says the parameter may hold `/`, raw or as `%2F`).
    static func template(_ pattern: String) -> String {
        pattern.replacingOccurrences(of: "...}", with: "}")
    }

    /// The operations of an OpenAPI document in the shape docs/openapi.yaml keeps: under a
    /// column-0 `paths:`, each path a key indented by two spaces, each method a key indented
    /// by four. Anything else under `paths:` is deeper. A path or method listed twice is an
    /// error (YAML would silently keep only the last).
    static func operations(yaml: String) throws -> [Operation] {
        var operations: [Operation] = []
        var inPaths = false
        var path: String?
        var seenPaths = Set<String>()
        let methods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]
        for raw in yaml.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw
            if line.trimmingCharacters(in: .whitespaces).isEmpty || line.trimmingCharacters(in: .whitespaces).hasPrefix("#") { continue }
            if !line.hasPrefix(" ") {
                inPaths = line == "paths:"
                path = nil
                continue
            }
            guard inPaths else { continue }
            if line.hasPrefix("  /") {
                guard line.hasSuffix(":") else { throw ShapeError(line: String(line)) }
                let key = String(line.dropFirst(2).dropLast())
                guard seenPaths.insert(key).inserted else { throw ShapeError(line: "duplicate path \(key)") }
                path = key
            } else if line.hasPrefix("    "), !line.hasPrefix("     ") {
                let key = line.dropFirst(4)
                guard key.hasSuffix(":"), let path else { continue }
                let method = String(key.dropLast())
                guard methods.contains(method) else { continue }   // `parameters:`, `summary:` of a path item
                let operation = Operation(method: method.uppercased(), path: path)
                guard !operations.contains(operation) else { throw ShapeError(line: "duplicate operation \(operation)") }
                operations.append(operation)
            } else if line.hasPrefix("  "), !line.hasPrefix("   ") {
                // A two-space key that is not a path: the document left the expected shape.
                throw ShapeError(line: String(line))
            }
        }
        return operations
    }

    /// Calls `body` with each line inside an operation of docs/openapi.yaml (a two-space path key,
    /// then a four-space method key) and the operation it belongs to.
    static func forEachOperationLine(yaml: String, _ body: (Operation, String) -> Void) {
        var path: String?
        var operation: Operation?
        for raw in yaml.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(raw)
            if line.isEmpty { continue }   // a blank line inside a description's block
            if !line.hasPrefix(" ") { path = nil; operation = nil; continue }
            if line.hasPrefix("  /"), !line.hasPrefix("   ") { path = String(line.dropFirst(2).dropLast()); operation = nil; continue }
            if line.hasPrefix("    "), !line.hasPrefix("     "), let path, line.hasSuffix(":") {
                operation = Operation(method: String(line.dropFirst(4).dropLast()).uppercased(), path: path)
                continue
            }
            if let operation { body(operation, line) }
        }
    }

    struct ShapeError: Error, CustomStringConvertible {
        var line: String
        var description: String { "docs/openapi.yaml is not in the shape the test reads: \(self.line)" }
    }

    @Test func documentAndRouterListTheSameOperations() throws {
        let url = Self.root.appendingPathComponent("docs/openapi.yaml")
        let yaml = try String(contentsOf: url, encoding: .utf8)
        let documented = try Self.operations(yaml: yaml)
        #expect(documented.count > 10, "docs/openapi.yaml lists only \(documented.count) operations; the reader lost track of its shape")

        let server = try APIServer()
        let routed = server.app.dispatcher.router.routes.map { Operation(method: $0.method, path: Self.template($0.pattern)) }

        let inDocumentOnly = Set(documented).subtracting(routed).sorted()
        let inRouterOnly = Set(routed).subtracting(documented).sorted()
        #expect(inDocumentOnly.isEmpty, "documented but not routed: \(inDocumentOnly)")
        #expect(inRouterOnly.isEmpty, "routed but not in docs/openapi.yaml: \(inRouterOnly)")
    }

    /// The reader itself, on the shapes it must accept and refuse.
    @Test(arguments: [
        (
            "paths:\n  /a:\n    get:\n      summary: x\n    post:\n      responses: {}\n  /b/{id}:\n    parameters:\n      - name: id\n    delete:\n      x: 1\ncomponents:\n  schemas:\n    get:\n",
            ["GET /a", "POST /a", "DELETE /b/{id}"]
        ),
        ("info:\n  title: t\n# a comment\npaths:\n\n  /x:\n    # note\n    put:\n", ["PUT /x"]),
    ])
    func readerFindsPathsAndMethods(yaml: String, expected: [String]) throws {
        #expect(try Self.operations(yaml: yaml).map(\.description) == expected)
    }

    @Test(arguments: [
        "paths:\n  /a:\n    get:\n  /a:\n    post:\n",     // a path twice: YAML would keep one
        "paths:\n  /a:\n    get:\n    get:\n",              // a method twice
        "paths:\n  /a: {get: {}}\n",                        // flow style
        "paths:\n  x-extension:\n    get:\n",               // a key that is not a path
    ])
    func readerRefusesOtherShapes(yaml: String) {
        #expect(throws: ShapeError.self) { try Self.operations(yaml: yaml) }
    }

    @Test func restCapturesBecomePlainTemplates() {
        #expect(Self.template("/v1/library/objects/{localIdentifier...}") == "/v1/library/objects/{localIdentifier}")
        #expect(Self.template("/v1/devices/{deviceID}") == "/v1/devices/{deviceID}")
    }
}
