import ConcordHTTP
import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing
@testable import ConcordTransport

/// End-to-end behaviour over real sockets on 127.0.0.1, port 0.
@Suite struct HTTPServerTests {
    @Test func keepAliveServesSeveralRequestsOnOneConnection() throws {
        try withServer { port, server in
            let client = try TestClient(port: port)
            for index in 0..<5 {
                let response = try #require(try client.exchange("GET /n/\(index) HTTP/1.1\r\nHost: x\r\n\r\n"))
                #expect(response.status == 200)
                #expect(response.text == "GET /n/\(index)")
                #expect(response.header("Connection") == nil)
                #expect(response.header("Date")?.hasSuffix("GMT") == true)
            }
            #expect(server.openConnections == 1)
        }
    }

    @Test func pipelinedResponsesKeepRequestOrderWhenResponderAnswersOutOfOrder() throws {
        // The first request is answered last (from another thread, after a delay).
        let responder = ClosureResponder { request, respond in
            let delay: Double = request.target.hasSuffix("a") ? 0.2 : request.target.hasSuffix("b") ? 0.1 : 0
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
                respond(HTTPResponse(status: 200, body: Array(request.target.utf8)))
            }
        }
        try withClient(responder: responder) { client in
            try client.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n")
            let bodies = try (0..<3).map { _ in try #require(try client.readResponse()).text }
            #expect(bodies == ["/a", "/b", "/c"])
        }
    }

    @Test func chunkedRequestBodyIsAssembledBeforeDispatch() throws {
        try withClient { client in
            try client.send("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
            usleep(50_000)
            let response = try #require(try client.exchange("6\r\n world\r\n0\r\n\r\n"))
            #expect(response.text == "POST /c:hello world")
        }
    }

    @Test func expectContinueGetsInterimResponseBeforeTheBody() throws {
        try withClient { client in
            let interim = try #require(try client.exchange("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"))
            #expect(interim.status == 100)
            let response = try #require(try client.exchange("abcde"))
            #expect(response.status == 200)
            #expect(response.text == "POST /e:abcde")
        }
    }

    @Test func expectContinueOverTheBodyLimitGetsTheErrorNotContinue() throws {
        try withClient({ $0.limits.maxBodyBytes = 10 }) { client in
            let response = try #require(try client.exchange("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n"))
            #expect(response.status == 413)
            #expect(errorName(response) == "payloadTooLarge")
        }
    }

    @Test func headAnswersContentLengthWithoutABody() throws {
        try withClient { client in
            try client.send("HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n")
            let head = try #require(try client.readResponse(isHead: true))
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == "7")
            // No body bytes leaked: the next response parses cleanly on the same connection.
            let get = try #require(try client.exchange("GET /h HTTP/1.1\r\nHost: x\r\n\r\n"))
            #expect(get.text == "GET /h")
        }
    }

    struct LargeBodyCase: Sendable, CustomTestStringConvertible {
        var method: String
        var status: Int
        /// Body bytes the client must see (the large body goes out beside its head, not copied behind it).
        var sent: Bool
        var testDescription: String { "\(self.method) → \(self.status)" }
    }

    @Test(arguments: [
        LargeBodyCase(method: "GET", status: 200, sent: true),
        LargeBodyCase(method: "POST", status: 200, sent: true),
        LargeBodyCase(method: "HEAD", status: 200, sent: false),
        LargeBodyCase(method: "GET", status: 204, sent: false),
        LargeBodyCase(method: "GET", status: 304, sent: false),
    ])
    func largeBodiesAreFramedLikeSmallOnes(_ testCase: LargeBodyCase) throws {
        let big = (0..<(300 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let responder = ClosureResponder { request, respond in
            respond(request.target == "/big" ? HTTPResponse(status: testCase.status, body: big) : HTTPResponse(status: 200, body: Array("small".utf8)))
        }
        try withClient(responder: responder) { client in
            let body = testCase.method == "POST" ? "Content-Length: 2\r\n\r\nab" : "\r\n"
            try client.send("\(testCase.method) /big HTTP/1.1\r\nHost: x\r\n\(body)")
            let response = try #require(try client.readResponse(isHead: testCase.method == "HEAD"))
            #expect(response.status == testCase.status)
            #expect(response.header("Content-Length") == (testCase.status == 200 ? "\(big.count)" : nil))
            #expect(response.body == (testCase.sent ? big : []))
            // Nothing more was sent for it: the next answer parses cleanly on the same connection.
            let next = try #require(try client.exchange("GET /small HTTP/1.1\r\nHost: x\r\n\r\n"))
            #expect(next.text == "small")
        }
    }

    @Test func connectionCloseIsHonoured() throws {
        try withClient { client in
            let response = try #require(try client.exchange("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
            #expect(response.header("Connection") == "close")
            #expect(client.closedByPeer())
        }
    }

    @Test func requestPipelinedAfterConnectionCloseDoesNotTurnTheAnswerIntoAReset() throws {
        try withClient { client in
            let response = try #require(try client.exchange("GET /1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n"))
            #expect(response.text == "GET /1")
            #expect(client.closedByPeer())
        }
    }

    @Test func errorAnswerReachesAClientStillSendingABody() throws {
        // 413 is decided from the head; the client keeps sending 4 MiB. Lingering (read and
        // discard after half-closing) lets it finish and read the answer instead of a reset.
        try withClient({ $0.limits.maxBodyBytes = 1000 }) { client in
            let body = [UInt8](repeating: UInt8(ascii: "x"), count: 4 << 20)
            try client.send(Array("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
            let response = try #require(try client.readResponse())
            #expect(response.status == 413)
            #expect(client.closedByPeer())
        }
    }

    @Test func http10ClosesByDefaultAndKeepsAliveWhenAsked() throws {
        try withServer { port, _ in
            let plain = try TestClient(port: port)
            try plain.send("GET / HTTP/1.0\r\n\r\n")
            let first = try #require(try plain.readResponse())
            #expect(first.status == 200)
            #expect(plain.closedByPeer())

            let keep = try TestClient(port: port)
            try keep.send("GET /1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            let one = try #require(try keep.readResponse())
            #expect(one.header("Connection")?.lowercased() == "keep-alive")
            try keep.send("GET /2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            #expect(try keep.readResponse()?.text == "GET /2")
        }
    }

    struct LimitCase: Sendable, CustomTestStringConvertible {
        var name: String
        var request: String
        var status: Int
        var errorName: String
        var testDescription: String { self.name }
    }

    static let limitCases: [LimitCase] = [
        LimitCase(name: "request line over 8 KiB → 414", request: "GET /\(String(repeating: "a", count: 9000)) HTTP/1.1\r\nHost: x\r\n\r\n", status: 414, errorName: "uriTooLong"),
        LimitCase(name: "header section over 16 KiB → 431", request: "GET / HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 17000))\r\n\r\n", status: 431, errorName: "headersTooLarge"),
        LimitCase(name: "more than 128 fields → 431", request: "GET / HTTP/1.1\r\nHost: x\r\n" + (0..<130).map { "X-\($0): v\r\n" }.joined() + "\r\n", status: 431, errorName: "headersTooLarge"),
        LimitCase(name: "Content-Length over the body limit → 413", request: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 67108865\r\n\r\n", status: 413, errorName: "payloadTooLarge"),
        LimitCase(name: "Content-Length with Transfer-Encoding (smuggling) → 400", request: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 400, errorName: "badRequest"),
        LimitCase(name: "two different Content-Lengths (smuggling) → 400", request: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde", status: 400, errorName: "badRequest"),
    ]

    @Test(arguments: limitCases)
    func limitAnswersItsStatusAndCloses(_ testCase: LimitCase) throws {
        let events = EventLog()
        try withClient(events: events) { client in
            let response = try #require(try client.exchange(testCase.request))
            #expect(response.status == testCase.status)
            #expect(errorName(response) == testCase.errorName)
            #expect(response.header("Content-Type") == "application/json")
            #expect(response.header("Connection") == "close")
            #expect(client.closedByPeer())
        }
        #expect(events.all.contains { if case .protocolError(testCase.status, testCase.errorName) = $0 { true } else { false } })
    }

    /// Answered by the configured timeout (0.3 s), not the default (10 s): the client gives up after
    /// 9 s, so an answer at all is the configured one.
    @Test func headerReadTimeoutAnswers408ThenCloses() throws {
        try withServer({ $0.headerReadTimeout = 0.3 }) { port, _ in
            let client = try TestClient(port: port, timeout: 9)
            let response = try #require(try client.exchange("GET / HTTP/1.1\r\nHost: x\r\n"))
            #expect(response.status == 408)
            #expect(errorName(response) == "requestTimeout")
            #expect(client.closedByPeer())
        }
    }

    /// A head dribbled one byte every 50 ms (each byte progress, ~6 s in all: 20× the timeout) is
    /// answered 408 while it is still dribbling: the timeout counts from the head's start.
    @Test func slowlorisDribblingDoesNotExtendTheHeaderTimeout() throws {
        try withServer({ $0.headerReadTimeout = 0.3 }) { port, _ in
            let client = try TestClient(port: port, timeout: 9)
            let head = Array("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: \(String(repeating: "s", count: 100))".utf8)
            func answered() -> Bool {
                var ready = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
                return Glibc.poll(&ready, 1, 0) > 0
            }
            var sent = 0
            while sent < head.count, !answered(), (try? client.send([head[sent]])) != nil {
                sent += 1
                usleep(50_000)
            }
            #expect(sent < head.count, "the whole head was dribbled in without an answer")
            let response = try #require(try client.readResponse())
            #expect(response.status == 408)
        }
    }

    @Test func bodyReadTimeoutAnswers408() throws {
        try withClient({ $0.bodyReadTimeout = 0.3 }) { client in
            let response = try #require(try client.exchange("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab"))
            #expect(response.status == 408)
            #expect(client.closedByPeer())
        }
    }

    /// Closed by the configured idle timeout (0.3 s), not the default (75 s): the client gives up
    /// after 9 s, so a close seen at all is the configured one.
    @Test func idleTimeoutClosesQuietly() throws {
        try withServer({ $0.idleTimeout = 0.3 }) { port, server in
            let client = try TestClient(port: port, timeout: 9)
            try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse()?.status == 200)
            #expect(client.closedByPeer())
            #expect(eventually { server.openConnections == 0 })
        }
    }

    @Test func connectionsBeyondTheLimitGet503WithRetryAfter() throws {
        let events = EventLog()
        try withServer({ $0.maxConnections = 1 }, events: events) { port, server in
            let first = try TestClient(port: port)
            try first.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try first.readResponse()?.status == 200)

            let second = try TestClient(port: port)
            try second.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            let refused = try #require(try second.readResponse())
            #expect(refused.status == 503)
            #expect(refused.header("Retry-After") == "1")
            #expect(errorName(refused) == "tooManyConnections")
            #expect(second.closedByPeer())
            #expect(server.openConnections == 1)

            // The first connection is unaffected.
            try first.send("GET /again HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try first.readResponse()?.text == "GET /again")
        }
    }

    @Test func abruptClientResetDoesNotDisturbTheServer() throws {
        try withServer { port, server in
            let client = try TestClient(port: port)
            try client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
            #expect(eventually { server.openConnections == 1 })
            client.reset()
            #expect(eventually { server.openConnections == 0 })
            let next = try TestClient(port: port)
            try next.send("GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try next.readResponse()?.text == "GET /next")
        }
    }

    @Test func clientResetWhileItsResponseIsPendingIsHarmless() throws {
        let responder = ClosureResponder { request, respond in
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { respond(HTTPResponse(status: 200, body: [1, 2, 3])) }
        }
        try withServer(responder: responder) { port, server in
            let client = try TestClient(port: port)
            try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            client.reset()
            usleep(200_000)
            #expect(eventually { server.openConnections == 0 })
            let next = try TestClient(port: port)
            try next.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try next.readResponse()?.body == [1, 2, 3])
        }
    }

    /// Answers made on another thread, large ones to a client slow to read (a 4 MiB answer does not
    /// fit the socket's buffer: the rest waits for EPOLLOUT) and small ones: the connection stays in
    /// step, pipelined or not.
    @Test func answersFromAnotherThreadStayInStepOnOneConnection() throws {
        let big = (0..<(4 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let responder = ClosureResponder { request, respond in
            DispatchQueue.global().async {
                let body = request.target.hasPrefix("/big") ? Array(request.target.utf8) + big : Array("small \(request.target)".utf8)
                respond(HTTPResponse(status: 200, body: body))
            }
        }
        try withClient(responder: responder) { client in
            for index in 0..<12 {
                let target = index % 3 == 1 ? "/big\(index)" : "/\(index)"
                try client.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
                if index % 3 == 1 { usleep(50_000) }   // the client reads late: the rest waits in the loop
                let response = try #require(try client.readResponse())
                #expect(response.status == 200)
                if index % 3 == 1 {
                    #expect(response.body.count == target.utf8.count + big.count)
                    #expect(response.body.prefix(target.utf8.count).elementsEqual(target.utf8))
                    #expect(response.body.suffix(big.count).elementsEqual(big))
                } else {
                    #expect(response.text == "small \(target)")
                }
            }
            // Pipelined behind a large answer: still in order.
            try client.send("GET /big-p HTTP/1.1\r\nHost: x\r\n\r\nGET /p HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse()?.body.count == "/big-p".utf8.count + big.count)
            #expect(try client.readResponse()?.text == "small /p")
        }
    }

    /// A client that half-closes after its request still gets the answer made on another thread,
    /// then the connection closes.
    @Test func halfClosedClientGetsAnAnswerFromAnotherThreadThenTheClose() throws {
        let responder = ClosureResponder { request, respond in
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { respond(HTTPResponse(status: 200, body: Array("late \(request.target)".utf8))) }
        }
        try withClient(responder: responder) { client in
            #expect(try client.exchange("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")?.text == "late /a")
            try client.send("GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
            shutdown(client.fd, Int32(SHUT_WR))
            #expect(try client.readResponse()?.text == "late /b")
            #expect(client.closedByPeer())
        }
    }

    @Test func responderMayAnswerFromAnotherThreadAndASecondAnswerIsIgnored() throws {
        let responder = ClosureResponder { request, respond in
            Thread.detachNewThread {
                respond(HTTPResponse(status: 200, body: Array("first \(request.target)".utf8)))
                respond(HTTPResponse(status: 500, body: Array("second".utf8)))
            }
        }
        try withClient(responder: responder) { client in
            for index in 0..<20 {
                let response = try #require(try client.exchange("GET /\(index) HTTP/1.1\r\nHost: x\r\n\r\n"))
                #expect(response.status == 200)
                #expect(response.text == "first /\(index)")
            }
        }
    }

    @Test func pipelinedLargeResponsesToAClientThatDoesNotReadAllArriveInOrder() throws {
        // 64 responses of 256 KiB: far beyond socket buffers and the 1 MiB output bound,
        // so the server must stop reading and resume as the client drains.
        let big = [UInt8](repeating: UInt8(ascii: "z"), count: 256 * 1024)
        let responder = ClosureResponder { request, respond in
            var body = Array(request.target.utf8)
            body.append(contentsOf: big)
            respond(HTTPResponse(status: 200, body: body))
        }
        try withServer(responder: responder) { port, _ in
            let client = try TestClient(port: port, timeout: 5)
            var requests = ""
            for index in 0..<64 { requests += "GET /\(String(format: "%02d", index)) HTTP/1.1\r\nHost: x\r\n\r\n" }
            try client.send(requests)
            usleep(200_000)
            for index in 0..<64 {
                let response = try #require(try client.readResponse())
                #expect(response.body.count == 256 * 1024 + 3)
                #expect(Array(response.body.prefix(3)) == Array("/\(String(format: "%02d", index))".utf8))
            }
        }
    }

    @Test func clientThatStopsReadingIsCutOffAfterTheWriteTimeout() throws {
        // 8 MiB answer to a client that never reads: the kernel buffers fill, output stays
        // pending, and the write timeout closes the connection.
        let big = [UInt8](repeating: 7, count: 8 << 20)
        let responder = ClosureResponder { _, respond in respond(HTTPResponse(status: 200, body: big)) }
        try withServer({ $0.writeTimeout = 0.3; $0.idleTimeout = 0.2 }, responder: responder) { port, server in
            let client = try TestClient(port: port)
            var size: Int32 = 4096
            setsockopt(client.fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(eventually { server.openConnections == 1 })
            // Closed by the write timeout (0.3 s), not held until the default (60 s): `eventually`
            // gives up well before that.
            #expect(eventually { server.openConnections == 0 })
        }
    }

    @Test func shutdownFromAResponderOnTheLoopThreadDoesNotDeadlock() throws {
        let box = Mutex<HTTPServer?>(nil)
        let responder = ClosureResponder { _, respond in
            respond(HTTPResponse(status: 200, body: Array("bye".utf8)))
            box.withLock { $0 }?.shutdown(gracePeriod: 1)
        }
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.eventLoopCount = 1
        let server = HTTPServer(configuration: configuration, responder: responder)
        box.withLock { $0 = server }
        let port = try server.start()
        let client = try TestClient(port: port)
        let response = try #require(try client.exchange("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(response.text == "bye")
        // Answered before the shutdown began, so kept alive; then closed as idle.
        #expect(client.closedByPeer())
        #expect(eventually { (try? TestClient(port: port)) == nil })
    }

    @Test func concurrentClientsEachGetTheirOwnAnswers() throws {
        // Half the answers come inline on the loop, half from worker threads.
        let responder = ClosureResponder { request, respond in
            let answer = HTTPResponse(status: 200, body: Array(request.target.utf8))
            if request.target.hasSuffix("0") || request.target.hasSuffix("2") || request.target.hasSuffix("4") {
                respond(answer)
            } else {
                DispatchQueue.global().async { respond(answer) }
            }
        }
        try withServer(responder: responder) { port, server in
            let failures = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: 32) { clientIndex in
                guard let client = try? TestClient(port: port) else { failures.add(1, ordering: .relaxed); return }
                for requestIndex in 0..<25 {
                    let target = "/c\(clientIndex)/r\(requestIndex)"
                    guard (try? client.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")) != nil,
                          let response = try? client.readResponse(), response.text == target
                    else { failures.add(1, ordering: .relaxed); return }
                }
            }
            #expect(failures.load(ordering: .relaxed) == 0)
            // Every client object is gone: the server sees all 32 connections close.
            #expect(eventually { server.openConnections == 0 })
        }
    }

    @Test func shutdownLetsAnInFlightRequestFinishWithConnectionClose() throws {
        let responder = ClosureResponder { _, respond in
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { respond(HTTPResponse(status: 200, body: Array("late".utf8))) }
        }
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.eventLoopCount = 2
        let server = HTTPServer(configuration: configuration, responder: responder)
        let port = try server.start()
        let idle = try TestClient(port: port)
        let client = try TestClient(port: port)
        try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(eventually { server.openConnections == 2 })
        let done = Atomic<Bool>(false)
        let shutdownThread = Thread {
            server.shutdown(gracePeriod: 5)
            done.store(true, ordering: .sequentiallyConsistent)
        }
        shutdownThread.start()
        // The idle connection is closed at once; the busy one gets its answer.
        #expect(idle.closedByPeer())
        let response = try #require(try client.readResponse())
        #expect(response.text == "late")
        #expect(response.header("Connection") == "close")
        #expect(eventually { done.load(ordering: .sequentiallyConsistent) })
        #expect(throws: TestFailure.self) { try TestClient(port: port) }
    }

    /// A request held by the responder learns that its client went: by a half-close (EOF on
    /// read), and by the connection closing; an answered request is not told.
    @Test(arguments: [true, false])
    func aHeldRequestIsToldWhenItsClientGoes(_ halfClose: Bool) throws {
        let signals = Mutex<[ClientGoneSignal]>([])
        let told = Atomic<Int>(0)
        let responder = ClosureResponder(withContext: { request, context, respond in
            guard let gone = context.clientGone else { return }
            if request.path == "/answered" { respond(HTTPResponse(status: 204)) }
            gone.onGone { told.add(1, ordering: .sequentiallyConsistent) }
            signals.withLock { $0.append(gone) }
        })
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.eventLoopCount = 1
        let server = HTTPServer(configuration: configuration, responder: responder)
        let port = try server.start()
        defer { server.shutdown(gracePeriod: 0.1) }
        let answered = try TestClient(port: port)
        try answered.send("GET /answered HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try answered.readResponse()?.status == 204)
        let client = try TestClient(port: port)
        try client.send("GET /held HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(eventually { signals.withLock { $0.count } == 2 })
        #expect(told.load(ordering: .sequentiallyConsistent) == 0)
        if halfClose {
            Glibc.shutdown(client.fd, Int32(SHUT_WR))
        } else {
            client.closeNow()
        }
        #expect(eventually { told.load(ordering: .sequentiallyConsistent) == 1 })
        _ = answered
    }

    @Test func shutdownForceClosesAfterTheGracePeriod() throws {
        // A responder that never answers.
        let dispatched = Atomic<Bool>(false)
        let responder = ClosureResponder { _, _ in dispatched.store(true, ordering: .sequentiallyConsistent) }
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.eventLoopCount = 1
        let server = HTTPServer(configuration: configuration, responder: responder)
        let port = try server.start()
        let client = try TestClient(port: port)
        try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        // Wait for the request to reach the responder: a request still unread in the socket when
        // the shutdown begins is not one in flight (its connection is closed at once).
        #expect(eventually { server.openConnections == 1 && dispatched.load(ordering: .sequentiallyConsistent) })
        let start = Date()
        server.shutdown(gracePeriod: 0.3)
        // Not before the grace; after it the connection is forced closed (a responder that never
        // answers would otherwise hold `shutdown` for ever: that it returned is the point).
        let elapsed = Date().timeIntervalSince(start)
        #expect(elapsed >= 0.25)
        #expect(client.closedByPeer())
        #expect(server.openConnections == 0)
        // A second shutdown is a no-op.
        server.shutdown(gracePeriod: 0)
    }

    @Test func startFailsWithAOneLineMessageWhenThePortIsTaken() throws {
        try withServer { port, _ in
            let second = HTTPServer(configuration: ServerConfiguration(host: "127.0.0.1", port: port), responder: echoResponder)
            #expect {
                try second.start()
            } throws: { error in
                guard let error = error as? TransportError else { return false }
                return error.message == "cannot listen on 127.0.0.1:\(port): address already in use"
            }
        }
    }

    @Test(arguments: ["::", "localhost", "0.0.0.0", "::1"])
    func listensOnIPv4AndIPv6Hosts(_ host: String) throws {
        let events = EventLog()
        try withServer({ $0.host = host }, events: events) { port, _ in
            let clientHost = host == "::1" ? "::1" : "127.0.0.1"
            let client = try TestClient(port: port, host: clientHost)
            try client.send("GET /v HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse()?.text == "GET /v")
            if host == "::" {
                let v6 = try TestClient(port: port, host: "::1")
                try v6.send("GET /v6 HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try v6.readResponse()?.text == "GET /v6")
            }
        }
        #expect(events.all.contains { if case .listening(host, _) = $0 { true } else { false } })
    }
}
