@testable import ConcordHTTP
import Foundation
import Testing

/// Properties of the parser that a table of small inputs cannot show: cost stays linear,
/// memory stays bounded, a failed parser stays failed.
@Suite struct HTTPRequestParserLimitsTests {
    /// Drains events; returns them, or the error that stopped the parser.
    private func drain(_ parser: inout HTTPRequestParser) -> (events: [HTTPParserEvent], error: HTTPParseError?) {
        var events: [HTTPParserEvent] = []
        while true {
            do {
                guard let event = try parser.next() else { return (events, nil) }
                events.append(event)
            } catch {
                return (events, error)
            }
        }
    }

    @Test func sixteenKiBHeaderFedByteByByteIsLinear() {
        // One 16 000-byte header line plus many small ones, fed one byte at a time with a
        // `next()` after each: a parser that rescans from the line start would do ~10^8 steps.
        var text = "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + String(repeating: "v", count: 12_000) + "\r\n"
        for i in 0..<100 { text += "X-\(i): \(i)\r\n" }
        text += "\r\n"
        let bytes = Array(text.utf8)
        #expect(bytes.count > 12_000 && bytes.count < 16 * 1024)

        var parser = HTTPRequestParser()
        var events = 0
        for byte in bytes {
            parser.append([byte])
            while let _ = try? parser.next() { events += 1 }
        }
        #expect(events == 2)
        // Counted, not timed: each byte is searched once for a line end (the time of this is
        // `Benchmarks/run micro`).
        #expect(parser.scannedByteCount <= bytes.count)
    }

    @Test func megabyteOfGarbageWithoutLineEndIsRejectedAtTheRequestLineLimit() {
        var parser = HTTPRequestParser()
        let chunk = [UInt8](repeating: UInt8(ascii: "A"), count: 4096)
        var error: HTTPParseError?
        var fed = 0
        while fed < 1 << 20 && error == nil {
            parser.append(chunk)
            fed += chunk.count
            error = self.drain(&parser).error
        }
        #expect(error?.status == 414)
        #expect(fed <= 12 * 1024, "rejected only after \(fed) bytes")
        // After failing, input is dropped instead of buffered.
        for _ in 0..<256 { parser.append(chunk) }
        #expect(parser.bufferedByteCount == 0)
    }

    @Test func megabyteOfGarbageLinesIsRejectedAtTheFirstLine() {
        var parser = HTTPRequestParser()
        var garbage: [UInt8] = []
        for i in 0..<(1 << 20) { garbage.append(i % 61 == 60 ? 0x0A : UInt8(0x21 + i % 90)) }
        parser.append(garbage)
        let error = self.drain(&parser).error
        #expect(error?.status == 400)
        // Counted, not timed: the parser stops at the first line, it does not scan the megabyte
        // (the time of this is `Benchmarks/run micro`).
        #expect(parser.scannedByteCount <= 1024, "scanned \(parser.scannedByteCount) bytes")
    }

    @Test func contentLength2Pow62ErrorsWithoutAllocating() {
        var parser = HTTPRequestParser()
        parser.append(Array("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4611686018427387904\r\n\r\n".utf8))
        let (events, error) = self.drain(&parser)
        #expect(events.isEmpty)
        #expect(error == HTTPParseError(status: 413, name: "payloadTooLarge", message: "body larger than 67108864 bytes"))
    }

    @Test func failedParserStaysFailed() throws {
        var parser = HTTPRequestParser()
        parser.append(Array("GET / HTTP/9.9\r\n\r\n".utf8))
        #expect(throws: HTTPParseError.self) { try parser.next() }
        parser.append(Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        let again = self.drain(&parser)
        #expect(again.events.isEmpty)
        #expect(again.error?.status == 505)
        #expect(again.error?.name == "httpVersionNotSupported")
    }

    @Test func bufferStaysBoundedAcrossManyPipelinedRequests() {
        var parser = HTTPRequestParser()
        let one = Array("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789".utf8)
        var requests = 0
        var largest = 0
        for _ in 0..<5000 {
            parser.append(one)
            for event in self.drain(&parser).events {
                if case .request(let request, _) = event {
                    requests += 1
                    #expect(request.body.count == 10)
                }
            }
            largest = max(largest, parser.bufferedByteCount)
        }
        #expect(requests == 5000)
        #expect(largest <= 2 * one.count)
    }

    @Test func largeBodyArrivesInPiecesIntact() {
        let body = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var parser = HTTPRequestParser()
        parser.append(Array("PUT /b HTTP/1.1\r\nHost: a\r\nContent-Length: \(body.count)\r\n\r\n".utf8))
        var received: [UInt8]?
        var offset = 0
        var heads = 0
        while offset < body.count {
            let end = min(offset + 1000, body.count)
            parser.append(Array(body[offset..<end]))
            offset = end
            for event in self.drain(&parser).events {
                switch event {
                case .head: heads += 1
                case .request(let request, _): received = request.body
                }
            }
            // Body bytes are moved out as they arrive; the input buffer holds at most a piece.
            #expect(parser.bufferedByteCount <= 1000 + 128)
        }
        #expect(heads == 1)
        #expect(received == body)
    }

    @Test func hasBufferedInputTracksPartialRequests() throws {
        var parser = HTTPRequestParser()
        #expect(!parser.hasBufferedInput)
        parser.append(Array("GET / HT".utf8))
        #expect(try parser.next() == nil)
        #expect(parser.hasBufferedInput)
        parser.append(Array("TP/1.1\r\nHost: a\r\n\r\n".utf8))
        guard case .head? = try parser.next() else { Issue.record("expected a head"); return }
        #expect(parser.hasBufferedInput)   // the request is not handed out yet
        guard case .request? = try parser.next() else { Issue.record("expected a request"); return }
        #expect(try parser.next() == nil)
        #expect(!parser.hasBufferedInput)
    }

    @Test func headArrivesBeforeBodySoContinueCanBeSent() throws {
        var parser = HTTPRequestParser()
        parser.append(Array("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n".utf8))
        #expect(!parser.isReadingBody)
        guard case .head(let head)? = try parser.next() else { Issue.record("expected a head"); return }
        #expect(head.expectsContinue)
        #expect(head.contentLength == 3)
        #expect(parser.isReadingBody)
        #expect(try parser.next() == nil)
        parser.append(Array("abc".utf8))
        guard case .request(let request, let keepAlive)? = try parser.next() else { Issue.record("expected a request"); return }
        #expect(request.body == Array("abc".utf8))
        #expect(keepAlive)
        #expect(!parser.isReadingBody)
    }

    @Test func errorResponseIsTheContractJSONShape() {
        let error = HTTPParseError(status: 400, name: "badRequest", message: "bad \"quote\" \\ and\nnewline\u{1}")
        let response = error.response
        #expect(response.status == 400)
        #expect(response.headers[first: "content-type"] == "application/json")
        let text = String(decoding: response.body, as: UTF8.self)
        #expect(text == #"{"error":{"name":"badRequest","message":"bad \"quote\" \\ and\nnewline\u0001"}}"#)
        let decoded = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: [String: String]]
        #expect(decoded?["error"]?["message"] == "bad \"quote\" \\ and\nnewline\u{1}")
    }
}
