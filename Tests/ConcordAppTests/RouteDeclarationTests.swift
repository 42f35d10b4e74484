import Foundation
import Testing

@testable import ConcordApp

/// Every declared route's policy, held in one table against the declarations and against
/// docs/openapi.yaml: who may call it (`security`), whether it honours `Idempotency-Key` (the
/// operation lists the `IdempotencyKey` parameter), and its body class (the server's body limits).
@Suite struct RouteDeclarationTests {
    struct Declared: Hashable, CustomStringConvertible {
        var method: String
        var pattern: String
        var caller: RouteCaller
        var body: Route.BodyClass
        var idempotent: Bool
        var description: String { "\(self.method) \(self.pattern) \(self.caller) \(self.body) \(self.idempotent ? "idempotent" : "-")" }
    }

    static let table: [Declared] = [
        .init(method: "GET", pattern: "/health", caller: .anyone, body: .small, idempotent: false),
        .init(method: "GET", pattern: "/ready", caller: .anyone, body: .small, idempotent: false),
        .init(method: "GET", pattern: "/metrics", caller: .anyone, body: .small, idempotent: false),
        .init(method: "POST", pattern: "/v1/accounts", caller: .admin, body: .small, idempotent: true),
        .init(method: "DELETE", pattern: "/v1/accounts/{accountID}", caller: .admin, body: .small, idempotent: false),
        .init(method: "POST", pattern: "/v1/devices", caller: .account, body: .small, idempotent: true),
        .init(method: "GET", pattern: "/v1/devices", caller: .account, body: .small, idempotent: false),
        .init(method: "DELETE", pattern: "/v1/devices/{deviceID}", caller: .account, body: .small, idempotent: false),
        .init(method: "POST", pattern: "/v1/account/token", caller: .account, body: .small, idempotent: true),
        .init(method: "POST", pattern: "/v1/devices/{deviceID}/token", caller: .account, body: .small, idempotent: true),
        .init(method: "POST", pattern: "/v1/devices/{deviceID}/successor", caller: .accountOrDevice, body: .small, idempotent: true),
        .init(method: "DELETE", pattern: "/v1/account", caller: .account, body: .small, idempotent: false),
        .init(method: "POST", pattern: "/v1/library/changes", caller: .device, body: .manifest, idempotent: true),
        .init(method: "PUT", pattern: "/v1/library", caller: .device, body: .manifest, idempotent: false),
        .init(method: "POST", pattern: "/v1/library/uploads", caller: .device, body: .small, idempotent: true),
        .init(method: "PUT", pattern: "/v1/library/uploads/{uploadID}/parts/{n}", caller: .device, body: .manifest, idempotent: false),
        .init(method: "POST", pattern: "/v1/library/uploads/{uploadID}/commit", caller: .device, body: .small, idempotent: true),
        .init(method: "DELETE", pattern: "/v1/library/uploads/{uploadID}", caller: .device, body: .small, idempotent: false),
        .init(method: "GET", pattern: "/v1/library/objects/{localIdentifier...}", caller: .device, body: .small, idempotent: false),
        .init(method: "GET", pattern: "/v1/library/objects", caller: .device, body: .small, idempotent: false),
        .init(method: "PUT", pattern: "/v1/library/authorization", caller: .device, body: .small, idempotent: false),
        .init(method: "POST", pattern: "/v1/library/cloud-identifiers", caller: .device, body: .batch, idempotent: false),
        .init(method: "POST", pattern: "/v1/library/local-identifiers", caller: .device, body: .batch, idempotent: false),
        .init(method: "POST", pattern: "/v1/library/links", caller: .device, body: .small, idempotent: true),
        .init(method: "GET", pattern: "/v1/library/token", caller: .device, body: .small, idempotent: false),
        .init(method: "GET", pattern: "/v1/library/wanted", caller: .device, body: .small, idempotent: false),
        .init(method: "POST", pattern: "/v1/library/adopt", caller: .device, body: .small, idempotent: true),
        .init(method: "GET", pattern: "/v1/library/status", caller: .device, body: .small, idempotent: false),
        .init(method: "GET", pattern: "/v1/library/changes", caller: .device, body: .small, idempotent: false),
        .init(method: "POST", pattern: "/v1/journals", caller: .device, body: .small, idempotent: true),
        .init(method: "GET", pattern: "/v1/journals", caller: .device, body: .small, idempotent: false),
        .init(method: "GET", pattern: "/v1/journals/token", caller: .device, body: .small, idempotent: false),
        .init(method: "GET", pattern: "/v1/journals/changes", caller: .device, body: .small, idempotent: false),
        .init(method: "GET", pattern: "/v1/journals/{journalID}", caller: .device, body: .small, idempotent: false),
        .init(method: "PUT", pattern: "/v1/journals/{journalID}", caller: .device, body: .small, idempotent: false),
        .init(method: "DELETE", pattern: "/v1/journals/{journalID}", caller: .device, body: .small, idempotent: false),
        .init(method: "PUT", pattern: "/v1/journals/{journalID}/entries/{entryID}", caller: .device, body: .batch, idempotent: false),
        .init(method: "GET", pattern: "/v1/journals/{journalID}/entries/{entryID}", caller: .device, body: .small, idempotent: false),
        .init(method: "DELETE", pattern: "/v1/journals/{journalID}/entries/{entryID}", caller: .device, body: .small, idempotent: false),
        .init(method: "POST", pattern: "/v1/journals/{journalID}/entries/{entryID}/selection", caller: .device, body: .batch, idempotent: true),
        .init(method: "POST", pattern: "/v1/account/webhooks", caller: .account, body: .small, idempotent: true),
        .init(method: "GET", pattern: "/v1/account/webhooks", caller: .account, body: .small, idempotent: false),
        .init(method: "GET", pattern: "/v1/account/webhooks/{webhookID}", caller: .account, body: .small, idempotent: false),
        .init(method: "PATCH", pattern: "/v1/account/webhooks/{webhookID}", caller: .account, body: .small, idempotent: false),
        .init(method: "DELETE", pattern: "/v1/account/webhooks/{webhookID}", caller: .account, body: .small, idempotent: false),
        .init(method: "POST", pattern: "/v1/account/webhooks/{webhookID}/rotate-secret", caller: .account, body: .small, idempotent: true),
        .init(method: "POST", pattern: "/v1/account/webhooks/{webhookID}/ping", caller: .account, body: .small, idempotent: true),
        .init(method: "GET", pattern: "/v1/account/webhooks/{webhookID}/deliveries", caller: .account, body: .small, idempotent: false),
        .init(method: "GET", pattern: "/v1/account/webhooks/{webhookID}/deliveries/{eventID}", caller: .account, body: .small, idempotent: false),
        .init(method: "POST", pattern: "/v1/account/webhooks/{webhookID}/deliveries/{eventID}/redeliver", caller: .account, body: .small, idempotent: true),
        .init(method: "POST", pattern: "/v1/webhooks", caller: .admin, body: .small, idempotent: true),
        .init(method: "GET", pattern: "/v1/webhooks", caller: .admin, body: .small, idempotent: false),
        .init(method: "GET", pattern: "/v1/webhooks/{webhookID}", caller: .admin, body: .small, idempotent: false),
        .init(method: "PATCH", pattern: "/v1/webhooks/{webhookID}", caller: .admin, body: .small, idempotent: false),
        .init(method: "DELETE", pattern: "/v1/webhooks/{webhookID}", caller: .admin, body: .small, idempotent: false),
        .init(method: "POST", pattern: "/v1/webhooks/{webhookID}/rotate-secret", caller: .admin, body: .small, idempotent: true),
        .init(method: "POST", pattern: "/v1/webhooks/{webhookID}/ping", caller: .admin, body: .small, idempotent: true),
        .init(method: "GET", pattern: "/v1/webhooks/{webhookID}/deliveries", caller: .admin, body: .small, idempotent: false),
        .init(method: "GET", pattern: "/v1/webhooks/{webhookID}/deliveries/{eventID}", caller: .admin, body: .small, idempotent: false),
        .init(method: "POST", pattern: "/v1/webhooks/{webhookID}/deliveries/{eventID}/redeliver", caller: .admin, body: .small, idempotent: true),
    ]

    /// Operations of docs/openapi.yaml that list the `IdempotencyKey` parameter.
    static func documentedIdempotent(yaml: String) -> Set<OpenAPIRouteAgreementTests.Operation> {
        var result = Set<OpenAPIRouteAgreementTests.Operation>()
        OpenAPIRouteAgreementTests.forEachOperationLine(yaml: yaml) { operation, line in
            if line.contains(##"$ref: "#/components/parameters/IdempotencyKey""##) { result.insert(operation) }
        }
        return result
    }

    @Test func everyDeclarationIsInTheTable() throws {
        let server = try APIServer()
        let declared = server.app.dispatcher.router.routes.map {
            Declared(method: $0.method, pattern: $0.pattern, caller: $0.caller, body: $0.body, idempotent: $0.idempotent)
        }
        let missing = Set(Self.table).subtracting(declared).map(\.description).sorted()
        let extra = Set(declared).subtracting(Self.table).map(\.description).sorted()
        #expect(missing.isEmpty, "in the table, not declared: \(missing)")
        #expect(extra.isEmpty, "declared, not in the table: \(extra)")
        #expect(declared.count == Self.table.count)
    }

    @Test func theTableAgreesWithTheDocument() throws {
        let yaml = try String(contentsOf: OpenAPIRouteAgreementTests.root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        let callers = RouteCallerTests.documentedCallers(yaml: yaml)
        let idempotent = Self.documentedIdempotent(yaml: yaml)
        #expect(idempotent.count >= 5, "the reader lost track of docs/openapi.yaml's IdempotencyKey parameters")
        for route in Self.table {
            let operation = OpenAPIRouteAgreementTests.Operation(method: route.method, path: OpenAPIRouteAgreementTests.template(route.pattern))
            #expect(callers[operation] == route.caller, "\(operation): documented for \(String(describing: callers[operation]))")
            #expect(idempotent.contains(operation) == route.idempotent, "\(operation): Idempotency-Key documented \(idempotent.contains(operation))")
            // A body class above `small` only where the document takes a request body.
            if route.body != .small { #expect(["POST", "PUT", "PATCH"].contains(route.method), "\(operation) has no body to be \(route.body)") }
        }
    }

    /// The per-route tables come from the declarations: body limits by class, the per-core turn
    /// only for the two lookups, event-loop handlers only for the service endpoints that never block.
    @Test func perRouteTablesAreDerivedFromTheDeclarations() throws {
        let server = try APIServer()
        let limits = BodyLimits(server.app.context.configuration.server.limits)
        for route in server.app.dispatcher.router.routes {
            #expect(route.maxBodyBytes == limits.limit(route.body), "\(route.method) \(route.pattern)")
            #expect(route.metricsIndex >= 0)
        }
        let onCore = server.app.dispatcher.router.routes.filter(\.onCore).map(\.pattern).sorted()
        #expect(onCore == ["/v1/library/cloud-identifiers", "/v1/library/local-identifiers"])
        let onLoop = server.app.dispatcher.router.routes.filter(\.onLoop).map(\.pattern).sorted()
        #expect(onLoop == ["/health", "/metrics"])
    }
}
