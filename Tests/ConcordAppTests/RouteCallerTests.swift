import Foundation
import Testing

@testable import ConcordApp

/// Every route says who may call it, and says what docs/openapi.yaml says; over a real socket, a
/// route refuses a missing token with 401 and every token of another kind with 403.
@Suite struct RouteCallerTests {
    /// `security` of each operation in docs/openapi.yaml: `[]` is anyone, else the scheme listed
    /// (`accountToken` and `deviceToken` both listed: either, the API's successor).
    static func documentedCallers(yaml: String) -> [OpenAPIRouteAgreementTests.Operation: RouteCaller] {
        var callers: [OpenAPIRouteAgreementTests.Operation: RouteCaller] = [:]
        var inSecurity = false
        let schemes: [String: RouteCaller] = ["adminToken": .admin, "accountToken": .account, "deviceToken": .device]
        OpenAPIRouteAgreementTests.forEachOperationLine(yaml: yaml) { current, line in
            if line == "      security: []" { callers[current] = .anyone; inSecurity = false; return }
            if line == "      security:" { inSecurity = true; return }
            if inSecurity {
                let item = line.trimmingCharacters(in: .whitespaces)
                guard item.hasPrefix("- "), let scheme = item.dropFirst(2).split(separator: ":").first, let caller = schemes[String(scheme)] else {
                    inSecurity = false
                    return
                }
                callers[current] = callers[current] == .account && caller == .device ? .accountOrDevice : caller
            }
        }
        return callers
    }

    /// The token kinds a route of `caller` takes.
    static func takes(_ caller: RouteCaller, _ kind: RouteCaller) -> Bool {
        kind == caller || (caller == .accountOrDevice && (kind == .account || kind == .device))
    }

    @Test func everyRouteCallerMatchesTheDocumentsSecurity() throws {
        let yaml = try String(contentsOf: OpenAPIRouteAgreementTests.root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        let documented = Self.documentedCallers(yaml: yaml)
        let server = try APIServer()
        let routes = server.app.dispatcher.router.routes
        #expect(routes.count > 20)
        for route in routes {
            let operation = OpenAPIRouteAgreementTests.Operation(method: route.method, path: OpenAPIRouteAgreementTests.template(route.pattern))
            #expect(documented[operation] == route.caller, "\(operation): routed for \(route.caller), documented for \(String(describing: documented[operation]))")
        }
    }

    /// Each API route over the socket: no token 401, an unknown token 401, each other kind's token
    /// 403, its own kind's token neither.
    @Test func routesRefuseMissingAndOtherKindsOfTokens() throws {
        let server = try APIServer()
        for route in server.app.dispatcher.router.routes where route.caller != .anyone {
            // Fresh tokens per route: some routes (rotating or deleting the account) end them.
            let account = try server.account()
            let device = try server.device(account.token)
            let tokens: [RouteCaller: String] = [.admin: testAdminToken, .account: account.token, .device: device.token]
            // A device token names only its own device where either kind may call.
            let target = route.pattern
                .replacingOccurrences(of: "{localIdentifier...}", with: "X/L0/001")
                .replacingOccurrences(of: "{deviceID}", with: route.caller == .accountOrDevice ? device.id : UUID().uuidString)
                .replacingOccurrences(of: "{journalID}", with: UUID().uuidString)
                .replacingOccurrences(of: "{entryID}", with: "e1")
                .replacingOccurrences(of: "{accountID}", with: UUID().uuidString)
                .replacingOccurrences(of: "{webhookID}", with: UUID().uuidString)
                .replacingOccurrences(of: "{eventID}", with: UUID().uuidString)
                + (route.pattern.hasSuffix("/changes") && route.method == "GET" ? "?since=x" : "")
            let body = ["POST", "PUT", "PATCH"].contains(route.method) ? "{}" : nil
            let label = "\(route.method) \(route.pattern)"
            #expect(try server.call(route.method, target, token: nil, body: body).status == 401, "\(label) without a token")
            #expect(try server.call(route.method, target, token: "cdt_unknown", body: body).status == 401, "\(label) with an unknown token")
            // Its own kind last: that call may end the account (DELETE /v1/account).
            let order = { (kind: RouteCaller) in (Self.takes(route.caller, kind) ? 1 : 0, kind.rawValue) }
            for (kind, token) in tokens.sorted(by: { order($0.key) < order($1.key) }) {
                let status = try server.call(route.method, target, token: token, body: body).status
                if Self.takes(route.caller, kind) {
                    #expect(status != 401 && status != 403, "\(label) with its own kind of token answered \(status)")
                } else {
                    #expect(status == 403, "\(label) with a \(kind) token answered \(status)")
                }
            }
        }
    }
}
