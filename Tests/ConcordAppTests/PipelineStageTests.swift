import ConcordDomain
import ConcordHTTP
import ConcordObservability
import ConcordTransport
import Synchronization
import Testing

@testable import ConcordApp

/// Each stage of the request pipeline on its own, with an injected clock and no socket or storage.
@Suite struct PipelineStageTests {
    static let quiet = Logger(level: .error, sink: LogSink(flushInterval: 0, output: { _ in }))
    static let device = DeviceRef(accountID: "A1", deviceID: "D1")

    /// A clock that only moves when told.
    final class ManualClock: Sendable {
        let nanoseconds = Atomic<Int64>(1_000_000_000)
        var clock: AppClock { AppClock { [self] in self.nanoseconds.load(ordering: .relaxed) } }
        func advance(seconds: Double) { self.nanoseconds.add(Int64(seconds * 1e9), ordering: .relaxed) }
    }

    static func request(_ method: String = "POST", token: String? = nil, headers: [(String, String)] = [], body: String = "",
                        connection: ConnectionContext = ConnectionContext(), admitted: AuthenticatedCaller? = nil) -> RequestContext {
        var fields = headers.map { (name: $0.0, value: $0.1) }
        if let token { fields.append((name: "Authorization", value: "Bearer " + token)) }
        return RequestContext(request: HTTPRequest(method: method, target: "/x", headers: HTTPHeaders(fields), body: Array(body.utf8)),
                              connection: connection, admitted: admitted, routePattern: "/x", logger: Self.quiet)
    }

    static func rates(perAddress: Double = 1, perCaller: Double = 1, clock: AppClock) -> RequestRates {
        var limits = Configuration.RateLimits()
        limits.perAddress = perAddress
        limits.perCaller = perCaller
        limits.burstSeconds = 1
        return RequestRates(limits, metrics: MetricsRegistry(), clock: clock)
    }

    static let deviceRoute = Route("GET", "/x", caller: .device) { _ throws(APIError) in .noContent }
    static let serviceRoute = Route("GET", "/health", caller: .anyone) { _ throws(APIError) in .noContent }

    // MARK: 1. Address rate

    @Test func addressRateCountsAPIRoutesOncePerRequestAndRefillsWithTheClock() {
        let time = ManualClock()
        let stage = AddressRateStage(rates: Self.rates(clock: time.clock))
        let peer = ConnectionContext(remoteAddress: "10.0.0.1")
        #expect(stage.refusal(Self.deviceRoute, peer) == nil)
        #expect(stage.refusal(Self.deviceRoute, peer)?.status == 429)
        // Service endpoints and requests whose head was already counted are not counted again.
        #expect(stage.refusal(Self.serviceRoute, peer) == nil)
        #expect(stage.refusal(Self.deviceRoute, peer, admitted: true) == nil)
        time.advance(seconds: 1)
        #expect(stage.refusal(Self.deviceRoute, peer) == nil)
        #expect(AddressRateStage(rates: nil).refusal(Self.deviceRoute, peer) == nil)
    }

    // MARK: 2. Authenticate

    /// The reasons refused, in order.
    final class Refusals: Sendable { let list = Mutex<[String]>([]) }

    static func authenticate<Kind: CallerKind>(_ kind: Kind.Type, refusals: Refusals) -> AuthenticateStage<Kind> {
        AuthenticateStage(identify: { token, _ throws(APIError) in
            switch token {
            case "admin": return .admin
            case "account": return .account(accountID: "A1")
            case "device": return .device(Self.device)
            case "broken": throw APIError.unavailable()
            default: return nil
            }
        }, refused: { _, error, reason in
            refusals.list.withLock { $0.append(reason.rawValue) }
            return error
        })
    }

    @Test func authenticationHandsTheRouteItsTypedCallerOrRefuses() throws {
        let refusals = Refusals()
        let devices = Self.authenticate(DeviceCaller.self, refusals: refusals)
        #expect(try devices.handle(Self.request(token: "device")).value == Self.device)
        #expect(throws: APIError.unauthorized) { try devices.handle(Self.request()) }
        #expect(throws: APIError.unauthorized) { try devices.handle(Self.request(token: "guess")) }
        #expect(throws: APIError.forbidden) { try devices.handle(Self.request(token: "admin")) }
        #expect(throws: APIError.forbidden) { try devices.handle(Self.request(token: "account")) }
        #expect(refusals.list.withLock { $0 } == ["no token", "unknown token", "admin token", "token of another kind"])
        // Storage failing while looking the token up is its answer, not a refusal.
        #expect(throws: APIError.unavailable()) { try devices.handle(Self.request(token: "broken")) }

        let accounts = Self.authenticate(AccountCaller.self, refusals: refusals)
        #expect(try accounts.handle(Self.request(token: "account")).value == "A1")
        let admins = Self.authenticate(AdminCaller.self, refusals: refusals)
        #expect(try admins.handle(Self.request(token: "admin")).caller.kind == RouteCaller.admin)
        #expect(throws: APIError.forbidden) { try admins.handle(Self.request(token: "device")) }
    }

    // MARK: 3. Caller rate

    @Test func callerRateHasOneBucketPerDeviceAccountAndTheAdmin() {
        let time = ManualClock()
        let stage = CallerRateStage(rates: Self.rates(clock: time.clock))
        let callers: [AuthenticatedCaller] = [.device(Self.device), .account(accountID: "A1"), .admin]
        for caller in callers { #expect(throws: Never.self) { try stage.handle(caller) } }
        for caller in callers { #expect(throws: APIError.self) { try stage.handle(caller) } }
        #expect(callers.map(\.rateKey) == ["device:D1", "account:A1", "admin"])
        #expect(callers.map(\.accountID) == ["A1", "A1", nil])
        time.advance(seconds: 1)
        #expect(throws: Never.self) { try stage.handle(.admin) }
    }

    // MARK: 4. Idempotency

    /// Keys in memory, each call recorded.
    final class Keys: IdempotencyKeys {
        let calls = Mutex<[String]>([])
        let next: Mutex<IdempotencyClaim>
        init(_ claim: IdempotencyClaim) { self.next = Mutex(claim) }
        func claim(owner: [UInt8], accountID: String?, key: String, fingerprint: [UInt8]) throws(DomainError) -> IdempotencyClaim {
            self.calls.withLock { $0.append("claim \(key) \(accountID ?? "-")") }
            return self.next.withLock { $0 }
        }
        func complete(owner: [UInt8], key: String, answer: [UInt8]) throws(DomainError) {
            self.calls.withLock { $0.append("complete \(key) \(StoredAnswer.decode(answer)?.status ?? 0)") }
        }
        func release(owner: [UInt8], key: String) throws(DomainError) { self.calls.withLock { $0.append("release \(key)") } }
    }

    @Test(arguments: [
        (IdempotencyClaim.claimed, 201, ["claim k A1", "complete k 201"], 201),
        (.claimed, 503, ["claim k A1", "release k"], 503),
        (.reused, 201, ["claim k A1"], 422),
        (.inProgress, 201, ["claim k A1"], 409),
        (.answerLost, 201, ["claim k A1"], 409),
        (.replay(StoredAnswer.encode(HTTPResponse(status: 201, body: Array("kept".utf8)))), 201, ["claim k A1"], 201),
    ] as [(IdempotencyClaim, Int, [String], Int)])
    func idempotencyRunsStoresReplaysOrRefuses(_ claim: IdempotencyClaim, _ handlerStatus: Int, _ calls: [String], _ status: Int) {
        let keys = Keys(claim)
        let stage = IdempotencyStage(keys: keys)
        let ran = Atomic<Int>(0)
        let response: HTTPResponse
        do {
            response = try stage.handle(Self.request(token: "t", headers: [("Idempotency-Key", "k")]), accountID: "A1") { request throws(APIError) in
                ran.add(1, ordering: .relaxed)
                // The handler gets the key's scope, for the writes it runs.
                #expect(request.idempotency?.key == "k")
                if handlerStatus >= 500 { throw APIError.unavailable() }
                return HTTPResponse(status: handlerStatus)
            }
        } catch {
            response = error.response
        }
        #expect(response.status == status)
        #expect(keys.calls.withLock { $0 } == calls)
        #expect(ran.load(ordering: .relaxed) == (claim == .claimed ? 1 : 0))
        if case .replay = claim { #expect(response.headers[first: "Idempotent-Replayed"] == "true") }
    }

    @Test func idempotencyWithoutAKeyJustRunsAndRefusesAMalformedOne() throws {
        let keys = Keys(.claimed)
        let stage = IdempotencyStage(keys: keys)
        let unkeyed = try stage.handle(Self.request(), accountID: nil) { request throws(APIError) in
            #expect(request.idempotency == nil)
            return .noContent
        }
        #expect(unkeyed.status == 204)
        #expect(throws: APIError.self) {
            try stage.handle(Self.request(headers: [("Idempotency-Key", "with space")]), accountID: nil) { _ throws(APIError) in .noContent }
        }
        #expect(keys.calls.withLock { $0 }.isEmpty)
    }

    // MARK: 5. Timing

    struct Unexpected: Error {}

    @Test func timingObservesEveryRunAndMapsWhatItThrows() {
        let time = ManualClock()
        let histogram = Histogram()
        let stage = TimingStage(histogram: histogram, operation: "op", clock: time.clock)
        #expect(throws: Never.self) { try stage.handle(Self.request()) { time.advance(seconds: 0.25) } }
        #expect(histogram.snapshot().count == 1 && histogram.snapshot().sum == 0.25)
        #expect(throws: APIError(DomainError.accessUserDenied)) { try stage.handle(Self.request()) { throw DomainError.accessUserDenied } }
        #expect(throws: APIError.internalError()) { try stage.handle(Self.request()) { throw Unexpected() } }
        #expect(throws: APIError.notFound) { try stage.handle(Self.request()) { throw APIError.notFound } }
        #expect(histogram.snapshot().count == 4)
    }

    // MARK: The pipeline

    @Test func anAdmittedCallerIsNeitherAuthenticatedNorCountedAgain() throws {
        let refusals = Refusals()
        let time = ManualClock()
        let pipeline = RoutePipeline<DeviceCaller>(authenticate: Self.authenticate(DeviceCaller.self, refusals: refusals),
                                     callerRate: CallerRateStage(rates: Self.rates(clock: time.clock)), idempotency: nil,
                                     timing: TimingStage(histogram: Histogram(), operation: "op", clock: time.clock))
        // The head: authenticated and counted (the one request the caller may make this second).
        let admitted = try pipeline.admit(Self.request(token: "device"))
        // The whole request carries the admission, no token needed again.
        let answer = try pipeline.respond(Self.request(admitted: admitted)) { context in
            #expect(context.value == Self.device)
            return .noContent
        }
        #expect(answer.status == 204)
        // Without an admission, the caller is counted: over its rate now.
        #expect(throws: APIError.self) { try pipeline.respond(Self.request(token: "device")) { _ in .noContent } }
        // An admission of another kind is not trusted: the token decides.
        #expect(throws: APIError.unauthorized) {
            try pipeline.respond(Self.request(admitted: AuthenticatedCaller.admin)) { _ in .noContent }
        }
    }
}

extension APIError: Equatable {
    public static func == (a: APIError, b: APIError) -> Bool { a.status == b.status && a.name == b.name && a.message == b.message }
}
