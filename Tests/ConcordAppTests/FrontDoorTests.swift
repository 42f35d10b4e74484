import ConcordTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@testable import ConcordApp

/// The head is checked before the body is read: a client waiting with
/// `Expect: 100-continue`, or sending a large body, learns of a bad token, the wrong kind of
/// token or a body over the route's limit without sending (or having read) the body, and gets
/// no `100 Continue`; a good head gets `100 Continue` and its answer. Over a real socket, on
/// both engines (the token is a storage read).
@Suite struct FrontDoorTests {
    /// Sends a head, reads what the server says before any body is sent (up to 2 s), then, if
    /// `body` is given and the connection is still open, sends the body and reads to the end.
    static func exchange(port: Int, head: String, body: String? = nil) throws -> (beforeBody: String, all: String) {
        let fd = try connectLoopback(port: port, receiveTimeout: 2)
        defer { close(fd) }
        // Before the body: one interim or final head is what we wait for.
        func headArrived(_ text: String) -> Bool {
            guard text.contains("\r\n\r\n") else { return false }
            if text.hasPrefix("HTTP/1.1 100 ") { return true }
            guard let split = text.range(of: "\r\n\r\n"), let length = text[..<split.lowerBound].components(separatedBy: "\r\n")
                .first(where: { $0.lowercased().hasPrefix("content-length:") })?.split(separator: ":").last
                .flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }) else { return false }
            return text.utf8.count - text[..<split.upperBound].utf8.count >= length
        }
        sendAll(fd, head)
        let before = receive(fd, until: headArrived)
        guard let body, before.hasPrefix("HTTP/1.1 100 ") else { return (before, before) }
        sendAll(fd, body)
        return (before, before + receiveUntilClosed(fd))
    }

    static func head(_ method: String, _ path: String, token: String?, length: Int, expect: Bool = true) -> String {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n"
        if let token { text += "Authorization: Bearer \(token)\r\n" }
        if expect { text += "Expect: 100-continue\r\n" }
        return text + "Content-Length: \(length)\r\n\r\n"
    }

    @Test(arguments: TestEngine.available)
    func aBadOrWrongTokenIsRefusedBeforeTheBodyWithoutContinue(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine)
        let account = try server.account()
        let device = try server.device(account.token)
        let cases: [(token: String?, status: Int, name: String)] = [
            (nil, 401, "unauthorized"),
            ("not-a-token", 401, "unauthorized"),
            (account.token, 403, "forbidden"),       // an account token on a device route
            (testAdminToken, 403, "forbidden"),
        ]
        for c in cases {
            let (before, _) = try Self.exchange(port: server.port, head: Self.head("POST", "/v1/library/cloud-identifiers", token: c.token, length: 1_000_000))
            #expect(!before.contains("100 Continue"), "\(c.status): \(before)")
            let response = try parseResponse(before)
            #expect(response.status == c.status)
            #expect(response.body.contains(#""name":"\#(c.name)""#))
            #expect(response.header("Connection")?.lowercased() == "close")
        }
        // A large body sent right away (no Expect) with a bad token: answered without reading it.
        let (early, _) = try Self.exchange(port: server.port, head: Self.head("PUT", "/v1/library", token: "nope", length: 40 << 20, expect: false))
        #expect(try parseResponse(early).status == 401)
        // The right token: 100 Continue, then the answer to the body.
        let body = #"{"localIdentifiers":["a/L0/001"]}"#
        let (interim, all) = try Self.exchange(port: server.port, head: Self.head("POST", "/v1/library/cloud-identifiers", token: device.token, length: body.utf8.count), body: body)
        #expect(interim.hasPrefix("HTTP/1.1 100 Continue"))
        let final = try parseResponse(String(all.dropFirst(interim.count)))
        #expect(final.status == 200)
        #expect(final.body.contains("identifierNotFound"))
    }

    @Test(arguments: TestEngine.available)
    func eachRouteHasItsOwnBodyLimit(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine)
        let account = try server.account()
        let device = try server.device(account.token)
        let small = try #require(server.app.context.maxBodyBytes("POST", "/v1/devices"))
        #expect(small == 256 * 1024)
        #expect(server.app.context.maxBodyBytes("PUT", "/v1/library") == nil)
        #expect(try #require(server.app.context.maxBodyBytes("POST", "/v1/library/local-identifiers")) >= 10_000 * 255)
        // Over the limit, told from the head: 413 and no 100 Continue.
        let (before, _) = try Self.exchange(port: server.port, head: Self.head("POST", "/v1/devices", token: account.token, length: small + 1))
        #expect(!before.contains("100 Continue"))
        #expect(try parseResponse(before).status == 413)
        // Over the limit but small enough to arrive whole with the head: refused all the same.
        let padded = #"{"name":"x","platform":"\#(String(repeating: "p", count: small))"}"#
        let r = try rawRequest(port: server.port, "POST", "/v1/devices", headers: ["Authorization: Bearer \(account.token)"], body: padded)
        #expect(r.status == 413)
        #expect(r.body.contains("payloadTooLarge"))
        // A manifest far over the small limit is still taken where manifests go.
        let assets = (0..<3000).map { #"{"localIdentifier":"id-\#($0)/L0/001","fingerprint":"\#(String(repeating: "A", count: 43))"}"# }
        let manifest = #"{"assets":[\#(assets.joined(separator: ","))]}"#
        #expect(manifest.utf8.count > small)
        let put = try rawRequest(port: server.port, "PUT", "/v1/library", headers: ["Authorization: Bearer \(device.token)", "Content-Type: application/json"], body: manifest)
        #expect(put.status == 200, "\(put.body.prefix(300))")
    }

    /// A client trickling its body (a byte every half second, each well within `bodyRead`) is
    /// answered 408 and closed once the grace has passed, instead of holding its connection.
    @Test func aTricklingBodyIsCutOff() throws {
        let server = try APIServer { c in
            c.server.timeouts.minBodyRate = 1000
            c.server.timeouts.bodyRateGrace = 1
        }
        let fd = try connectLoopback(port: server.port, receiveTimeout: 0.5)
        defer { close(fd) }
        let head = "POST /v1/accounts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(testAdminToken)\r\nContent-Length: 1000\r\n\r\n{"
        _ = head.utf8CString.withUnsafeBufferPointer { send(fd, $0.baseAddress, $0.count - 1, Int32(MSG_NOSIGNAL)) }
        let started = Date()
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        var closed = false
        var sent = 1
        // Give up after 30 s (the body is 1000 bytes: trickled whole it would take minutes).
        while Date().timeIntervalSince(started) < 30 {
            _ = send(fd, " ", 1, Int32(MSG_NOSIGNAL))   // one byte per wait: far below 1000 B/s
            sent += 1
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { received.append(contentsOf: chunk[0..<n]) }
            if n == 0 { closed = true; break }   // closed after the answer
        }
        let response = try parseResponse(String(decoding: received, as: UTF8.self))
        #expect(response.status == 408)
        #expect(response.body.contains("requestTimeout"))
        // Cut off, not held: the server closed the connection before the body was complete.
        #expect(closed && sent < 1000, "closed: \(closed) after \(sent) bytes of the body")
    }

    /// Bodies in flight share one budget: while one large body is admitted and unanswered,
    /// another that would pass the budget is refused from its head (503, Retry-After, no 100
    /// Continue); once the first is answered, the next is taken.
    @Test func bodiesInFlightShareABudget() throws {
        let server = try APIServer { c in c.server.limits.bodyBytesInFlight = 150_000 }
        let account = try server.account()
        let device = try server.device(account.token)
        let ids = (0..<5000).map { #""id-\#($0)/L0/001""# }.joined(separator: ",")
        let body = #"{"localIdentifiers":[\#(ids)]}"#
        #expect(body.utf8.count > 75_000 && body.utf8.count < 150_000)

        // The first body is admitted (100 Continue) and held back by its client.
        let fd = try connectLoopback(port: server.port, receiveTimeout: 5)
        defer { close(fd) }
        sendAll(fd, Self.head("POST", "/v1/library/cloud-identifiers", token: device.token, length: body.utf8.count))
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        #expect(String(decoding: chunk[0..<max(0, n)], as: UTF8.self).hasPrefix("HTTP/1.1 100 Continue"))

        // A second one would pass the budget: refused from its head.
        let (refused, _) = try Self.exchange(port: server.port, head: Self.head("POST", "/v1/library/cloud-identifiers", token: device.token, length: body.utf8.count))
        #expect(!refused.contains("100 Continue"))
        let answer = try parseResponse(refused)
        #expect(answer.status == 503)
        #expect(answer.header("Retry-After") == "1")
        #expect(answer.body.contains(#""name":"unavailable""#))

        // The first body sent and answered: its bytes are given back, and the next is admitted.
        sendAll(fd, body)
        #expect(try parseResponse(receiveUntilClosed(fd)).status == 200)
        let (interim, all) = try Self.exchange(port: server.port, head: Self.head("POST", "/v1/library/cloud-identifiers", token: device.token, length: body.utf8.count), body: body)
        #expect(interim.hasPrefix("HTTP/1.1 100 Continue"))
        #expect(try parseResponse(String(all.dropFirst(interim.count))).status == 200)
    }
}

/// Bodies of many tiny values are refused while they are parsed, and a manifest may list at most
/// `libraryItems` objects.
@Test func elementAndItemLimitsAnswer413() throws {
    let server = try APIServer { c in
        c.server.limits.maxBatch = 10
        c.server.limits.libraryItems = 5
    }
    let account = try server.account()
    let device = try server.device(account.token)
    let numbers = [String](repeating: "1", count: 10 * 3 + 1025).joined(separator: ",")
    let flood = try server.call("POST", "/v1/library/cloud-identifiers", token: device.token, body: #"{"localIdentifiers":[\#(numbers)]}"#)
    #expect(flood.status == 413)
    #expect(flood.raw.body.contains("JSON elements"))
    let objects = (0..<6).map { #"{"localIdentifier":"o\#($0)/L0/001","fingerprint":"\#(String(repeating: "B", count: 43))"}"# }
    let manifest = try server.call("PUT", "/v1/library", token: device.token, body: #"{"assets":[\#(objects.joined(separator: ","))]}"#)
    #expect(manifest.status == 413)
    #expect(manifest.raw.body.contains("at most 5 objects"))
    let five = try server.call("PUT", "/v1/library", token: device.token, body: #"{"assets":[\#(objects.prefix(5).joined(separator: ","))]}"#)
    #expect(five.status == 200)
}
