import ConcordClient
import ConcordHTTP
import ConcordTransport
import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Answers a scripted sequence of responses over a real socket (the last one repeats) and
/// records what it was asked.
final class ScriptedResponder: HTTPResponder {
    let script: [HTTPResponse]
    private let seen = Mutex<[HTTPRequest]>([])

    init(_ script: [HTTPResponse]) { self.script = script }

    func handle(_ request: HTTPRequest, context: ConnectionContext, respond: @escaping @Sendable (HTTPResponse) -> Void) {
        let n = self.seen.withLock { seen in
            seen.append(request)
            return seen.count
        }
        respond(self.script[min(n, self.script.count) - 1])
    }

    var requests: [HTTPRequest] { self.seen.withLock { $0 } }
}

/// A JSON response.
func reply(_ status: Int, _ body: String, headers: [(String, String)] = []) -> HTTPResponse {
    HTTPResponse(status: status, headers: HTTPHeaders([("Content-Type", "application/json")] + headers.map { (name: $0.0, value: $0.1) }), body: Array(body.utf8))
}

func unavailable(retryAfter: String?) -> HTTPResponse {
    reply(503, #"{"error":{"name":"unavailable","message":"Busy."}}"#, headers: retryAfter.map { [("Retry-After", $0)] } ?? [])
}

/// A transport server on 127.0.0.1 (port 0 unless given) with `responder`; shut down on deinit.
final class ScriptedServer: Sendable {
    let server: HTTPServer
    let port: Int
    let responder: ScriptedResponder

    init(_ script: [HTTPResponse], port: Int = 0) throws {
        var configuration = ServerConfiguration(host: "127.0.0.1", port: port)
        configuration.eventLoopCount = 1
        self.responder = ScriptedResponder(script)
        self.server = HTTPServer(configuration: configuration, responder: self.responder)
        self.port = try self.server.start()
    }

    deinit { self.server.shutdown(gracePeriod: 1) }

    func client(_ policy: RetryPolicy = RetryPolicy(maxAttempts: 4, initialDelay: 0.01, maxDelay: 0.05), maxBatch: Int = 10_000) -> ConcordClient {
        ConcordClient(
            baseURL: URL(string: "http://127.0.0.1:\(self.port)")!, token: "device-token",
            configuration: ConcordClient.Configuration(maxBatch: maxBatch, batchConcurrency: 1, retryPolicy: policy))
    }
}

@Test func serviceUnavailableIsRetriedUntilItAnswers() async throws {
    let server = try ScriptedServer([unavailable(retryAfter: "0"), unavailable(retryAfter: "0"), reply(200, #"{"changeToken":"t1"}"#)])
    #expect(try await server.client().currentChangeToken() == ChangeToken(rawValue: "t1"))
    #expect(server.responder.requests.count == 3)
    #expect(server.responder.requests.allSatisfy { $0.method == "GET" && $0.target == "/v1/library/token" })
}

@Test func retryAfterSecondsIsWaitedFor() async throws {
    let server = try ScriptedServer([unavailable(retryAfter: "1"), reply(200, #"{"changeToken":"t1"}"#)])
    let start = Date()
    _ = try await server.client().currentChangeToken()
    #expect(Date().timeIntervalSince(start) >= 0.95)
    #expect(server.responder.requests.count == 2)
}

@Test func serviceUnavailableIsRetriedForNonIdempotentRequestsToo() async throws {
    // A 503 means the server did not act on the request: creating twice cannot happen.
    let server = try ScriptedServer([unavailable(retryAfter: nil), reply(201, #"{"accountID":"a1","accountToken":"tok"}"#)])
    let created = try await server.client().createAccount(name: "Person")
    #expect(created.accountID == "a1" && created.accountToken == "tok")
    #expect(server.responder.requests.count == 2)
    // Both attempts carry one Idempotency-Key: had the first been applied, the second would replay it.
    let keys = server.responder.requests.map { $0.headers[first: "Idempotency-Key"] }
    #expect(keys[0] != nil && keys[0] == keys[1])
}

@Test func idempotencyKeyInUseIsWaitedForAndEveryPostCarriesAFreshKey() async throws {
    let inUse = reply(409, #"{"error":{"name":"idempotencyKeyInUse","message":"Still running."}}"#, headers: [("Retry-After", "0")])
    let server = try ScriptedServer([inUse, reply(201, #"{"journalID":"J","title":"T","version":"1"}"#),
                                     reply(201, #"{"journalID":"K","title":"T","version":"1"}"#)])
    let client = server.client()
    #expect(try await client.createJournal(title: "T").journalID == "J")
    #expect(try await client.createJournal(title: "T").journalID == "K")
    let keys = server.responder.requests.map { $0.headers[first: "Idempotency-Key"] }
    #expect(keys.count == 3 && keys[0] != nil && keys[0] == keys[1] && keys[2] != nil && keys[2] != keys[0])
}

@Test func anAnswerLostIsThrownNotRetried() async throws {
    let lost = reply(409, #"{"error":{"name":"idempotencyKeyAnswerLost","message":"Applied; answer lost."}}"#)
    let server = try ScriptedServer([lost, reply(201, #"{"journalID":"J","title":"T","version":"1"}"#)])
    let error = await thrown(ConcordError.self) { _ = try await server.client().createJournal(title: "T") }
    #expect(error?.status == 409 && error?.name == "idempotencyKeyAnswerLost")
    #expect(server.responder.requests.count == 1)
}

@Test func retriesAreBoundedAndTheLast503IsThrown() async throws {
    let server = try ScriptedServer([unavailable(retryAfter: nil)])
    let error = await thrown(ConcordError.self) {
        _ = try await server.client(RetryPolicy(maxAttempts: 3, initialDelay: 0.01)).currentChangeToken()
    }
    #expect(error?.status == 503 && error?.name == "unavailable" && error?.retryAfter == nil)
    #expect(server.responder.requests.count == 3)
}

@Test func retryAfterBeyondTheBoundIsThrownAtOnce() async throws {
    let server = try ScriptedServer([unavailable(retryAfter: "120"), reply(200, #"{"changeToken":"t1"}"#)])
    let error = await thrown(ConcordError.self) { _ = try await server.client().currentChangeToken() }
    #expect(error?.status == 503 && error?.retryAfter == 120)
    #expect(server.responder.requests.count == 1)
}

@Test func otherErrorsAreNotRetried() async throws {
    let server = try ScriptedServer([reply(500, #"{"error":{"name":"internalError","message":"Oops."}}"#), reply(200, #"{"changeToken":"t1"}"#)])
    let error = await thrown(ConcordError.self) { _ = try await server.client().currentChangeToken() }
    #expect(error?.status == 500 && error?.name == "internalError")
    #expect(server.responder.requests.count == 1)
}

@Test func batchTooLargeWithoutASmallerSizeIsThrownNotLooped() async throws {
    let server = try ScriptedServer([reply(413, #"{"error":{"name":"batchTooLarge","message":"No.","maxBatch":10}}"#)])
    let client = server.client(maxBatch: 5)
    let error = await thrown(ConcordError.self) {
        _ = try await client.orderedCloudIdentifierMappings(forLocalIdentifiers: ["a", "b", "c"])
    }
    #expect(error?.name == "batchTooLarge" && error?.maxBatch == 10)
    #expect(server.responder.requests.count == 1 && client.effectiveMaxBatch == 5)
}

@Test func answersWithTheWrongItemCountAreRejected() async throws {
    let server = try ScriptedServer([reply(200, #"{"mappings":[{"localIdentifier":"a","cloudIdentifier":"x"}]}"#)])
    let error = await thrown(ConcordError.self) { _ = try await server.client().orderedCloudIdentifierMappings(forLocalIdentifiers: ["a", "b"]) }
    #expect(error?.name == "invalidResponse")
}

@Test func requestsCarryTokenEncodedPathsAndQuotedVersions() async throws {
    let server = try ScriptedServer([reply(200, #"{"journalID":"j/1","title":"T","version":"v2"}"#)])
    let client = server.client(.never)
    _ = try await client.renameJournal("j/1", title: "T", ifMatch: "v1")
    _ = try? await client.object(withLocalIdentifier: "A B/L0/001")
    _ = try? await client.fetchPersistentChangePage(since: ChangeToken(rawValue: "a+b=="), limit: 7)
    let requests = server.responder.requests
    try #require(requests.count == 3)
    #expect(requests[0].method == "PUT" && requests[0].target == "/v1/journals/j%2F1")
    #expect(requests[0].headers[first: "If-Match"] == "\"v1\"")
    #expect(requests[0].headers[first: "Authorization"] == "Bearer device-token")
    #expect(requests[0].headers[first: "Content-Type"] == "application/json")
    #expect(String(decoding: requests[0].body, as: UTF8.self) == #"{"title":"T"}"#)
    #expect(requests[1].target == "/v1/library/objects/A%20B%2FL0%2F001")
    #expect(requests[2].target == "/v1/library/changes?since=a%2Bb%3D%3D&limit=7")
}

@Test func refusedConnectionsAreRetriedUntilTheServerListens() async throws {
    // A port that was just free: the first attempts are refused, then a server comes up on it.
    let port: Int
    do {
        let probe = try ScriptedServer([reply(200, "{}")])
        port = probe.port
    }
    let policy = RetryPolicy(maxAttempts: 8, initialDelay: 0.2, maxDelay: 0.4)
    let refused = await thrown(URLError.self) {
        _ = try await ConcordClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!, token: "t", configuration: .init(retryPolicy: .never))
            .currentChangeToken()
    }
    #expect(refused?.code == .cannotConnectToHost)

    let client = ConcordClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!, token: "t", configuration: .init(retryPolicy: policy))
    // createAccount is not idempotent: a refused connection never reached the server, so it is retried anyway.
    let task = Task { try await client.createAccount(name: "Person") }
    try await Task.sleep(nanoseconds: 150_000_000)
    let late = try ScriptedServer([reply(201, #"{"accountID":"a","accountToken":"t"}"#)], port: port)
    #expect(try await task.value.accountID == "a")
    #expect(late.responder.requests.count == 1)
}
