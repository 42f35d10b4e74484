import ConcordJSON
import Testing

@testable import ConcordApp

// Regressions found by black-box probing of the real server (RFC 9110/9112):
// each test is named after the case it guards.

@Test func absoluteFormTargetIsRoutedByItsPath() throws {
    let server = try APIServer()
    // RFC 9112 §3.2.2: a server MUST accept the absolute-form; it was answered 404.
    let health = try rawRequest(port: server.port, "GET", "http://127.0.0.1/health")
    #expect(health.status == 200 && health.body == "ok")
    let devices = try rawRequest(port: server.port, "GET", "http://127.0.0.1:\(server.port)/v1/devices?x=1")
    #expect(devices.status == 401)
}

@Test func unknownOrLowercaseMethodIsNotImplemented() throws {
    let server = try APIServer()
    // RFC 9110 §9.1/§15.6.2: methods are case-sensitive; an unrecognised one is 501, not 405.
    for (method, path) in [("FOO", "/health"), ("get", "/health"), ("TRACE", "/v1/devices"), ("FOO", "/nothing"), ("CONNECT", "127.0.0.1:443")] {
        let response = try rawRequest(port: server.port, method, path)
        #expect(response.status == 501, "\(method) \(path)")
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.header("Content-Length") != nil && response.header("Date") != nil)
        let error = try JSONValue.parse(Array(response.body.utf8))
        guard case .object(let root) = error, case .object(let inner)? = root["error"] else {
            Issue.record("not the error shape: \(response.body)")
            continue
        }
        #expect(inner["name"] == .string("notImplemented"))
    }
    // A method the server implements, on a path without it, stays 405 with Allow.
    let wrong = try rawRequest(port: server.port, "POST", "/health", headers: ["Content-Length: 0"])
    #expect(wrong.status == 405 && wrong.header("Allow") == "GET, HEAD, OPTIONS")
    // PATCH is served (webhooks): on every other route it is such a method, 405 with Allow, not 501.
    let patch = try rawRequest(port: server.port, "PATCH", "/v1/devices", headers: ["Content-Length: 0"])
    #expect(patch.status == 405 && patch.header("Allow") == "GET, HEAD, OPTIONS, POST")
}

@Test func optionsAnswersAllowForAPathAndForTheServer() throws {
    let server = try APIServer()
    let path = try rawRequest(port: server.port, "OPTIONS", "/v1/devices")
    #expect(path.status == 200 && path.header("Allow") == "GET, HEAD, OPTIONS, POST")
    #expect(path.header("Content-Length") == "0" && path.body.isEmpty)
    let star = try rawRequest(port: server.port, "OPTIONS", "*")
    #expect(star.status == 200 && star.header("Allow") == "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT")
    let unknown = try rawRequest(port: server.port, "OPTIONS", "/nothing")
    #expect(unknown.status == 404)
}
