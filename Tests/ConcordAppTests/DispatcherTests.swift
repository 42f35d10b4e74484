import ConcordHTTP
import ConcordObservability
import Foundation
import Synchronization
import Testing

@testable import ConcordApp

private func dispatch(_ dispatcher: Dispatcher, _ method: String, _ target: String) async -> HTTPResponse {
    await withCheckedContinuation { continuation in
        dispatcher.handle(HTTPRequest(method: method, target: target)) { continuation.resume(returning: $0) }
    }
}

@Test func dispatcherDecodesQueryAndRejectsBadEncoding() async {
    let routes = [
        Route("GET", "/echo/{name}", caller: .anyone) { ctx throws(APIError) in
            .text("\(try ctx.pathParameter("name"))|\(ctx.query("q") ?? "-")|\(ctx.routePattern)")
        },
    ]
    let dispatcher = Dispatcher(routes: routes, logger: Logger(level: .error, sink: LogSink(flushInterval: 0, output: { _ in })), metrics: MetricsRegistry(), workerCount: 1)
    defer { dispatcher.shutdown(deadline: 1) }

    let ok = await dispatch(dispatcher, "GET", "/echo/a%20b?q=x+y%21&q=second")
    #expect(ok.status == 200 && String(decoding: ok.body, as: UTF8.self) == "a b|x y!|/echo/{name}")
    let bad = await dispatch(dispatcher, "GET", "/echo/a?q=%G1")
    #expect(bad.status == 400 && String(decoding: bad.body, as: UTF8.self).contains("query string"))
}

@Test func fullWorkerQueueAnswers503InsteadOfQueueingForever() async {
    let gate = DispatchSemaphore(value: 0)
    let routes = [Route("GET", "/block", caller: .anyone) { _ throws(APIError) in gate.wait(); return .text("done") }]
    let metrics = MetricsRegistry()
    let dispatcher = Dispatcher(routes: routes, logger: Logger(level: .error, sink: LogSink(flushInterval: 0, output: { _ in })),
                                metrics: metrics, workerCount: 1, maxPendingJobs: 1)
    let answers = Mutex<[Int]>([])
    // One running, one queued: both accepted. The third finds the queue full.
    dispatcher.handle(HTTPRequest(method: "GET", target: "/block")) { r in answers.withLock { $0.append(r.status) } }
    while dispatcher.workers.runningCount < 1 { usleep(1000) }
    dispatcher.handle(HTTPRequest(method: "GET", target: "/block")) { r in answers.withLock { $0.append(r.status) } }
    #expect(dispatcher.workers.depth == 2)
    let third = await dispatch(dispatcher, "GET", "/block")
    #expect(third.status == 503 && third.headers[first: "Retry-After"] == "1")
    #expect(String(decoding: third.body, as: UTF8.self).contains(#""name":"unavailable""#))
    gate.signal()
    gate.signal()
    dispatcher.shutdown(deadline: 5)
    #expect(answers.withLock { $0 } == [200, 200])
    #expect(metrics.exposition().contains(#"concord_http_requests_total{route="/block",status="503"} 1"#))
}
