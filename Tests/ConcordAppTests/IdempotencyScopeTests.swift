import Foundation
import Testing

/// The idempotency scope reaches the domain as an argument (`RequestContext.idempotency` →
/// the service's `idempotency:`), not implicitly: a handler of an `idempotent` route that did not
/// pass it would lose the "applied" mark, and a resend after a crash would run twice. Each such
/// handler is read from the route files and must pass it.
@Suite struct IdempotencyScopeTests {
    /// (Webhook routes are declared once for both scopes, `scope.route(`; their admin scope's writes
    /// are server transactions, which mark no key, as for `POST /v1/accounts`.)
    /// Idempotent routes whose write marks no key: `POST /v1/accounts` creates the account in a
    /// server transaction (there is no account yet to scope it to), and its answer, a token, is never kept.
    static let unscoped: Set<String> = ["\"POST\", \"/v1/accounts\""]

    @Test func everyIdempotentHandlerPassesItsScopeToTheService() throws {
        let folder = repositoryRoot.appendingPathComponent("Sources/ConcordApp/Routes")
        var checked = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where name.hasSuffix("Routes.swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            // Each declaration runs from its `app.<kind>Route(` to the next one.
            let starts = try Regex(#"app\.[a-zA-Z]+Route\(|scope\.route\("#)
            let bounds = text.ranges(of: starts).map(\.lowerBound) + [text.endIndex]
            let declarations = zip(bounds, bounds.dropFirst()).map { text[$0..<$1] }
            for declaration in declarations where declaration.contains("idempotent: true") {
                let head = String(declaration.prefix(while: { $0 != "\n" }))
                if Self.unscoped.contains(where: { head.contains($0) }) { continue }
                checked += 1
                #expect(declaration.contains("idempotency: request.idempotency"), "\(name): \(head)")
            }
        }
        #expect(checked == 15)
    }
}
