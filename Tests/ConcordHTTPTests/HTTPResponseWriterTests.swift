@testable import ConcordHTTP
import Foundation
import Glibc
import Testing

@Suite struct HTTPResponseWriterTests {
    private let date = "Sun, 06 Nov 1994 08:49:37 GMT"

    private func text(
        _ response: HTTPResponse, keepAlive: Bool = true, version: HTTPVersion = .http1_1, isHead: Bool = false
    ) -> String {
        var buffer: [UInt8] = []
        HTTPResponseWriter.write(response, keepAlive: keepAlive, requestVersion: version, isHead: isHead, date: self.date, into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    @Test func okWithBodyHasLengthDateAndBody() {
        let response = HTTPResponse(status: 200, headers: HTTPHeaders([(name: "Content-Type", value: "application/json")]), body: Array("{}".utf8))
        #expect(self.text(response) == "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: \(self.date)\r\nContent-Length: 2\r\n\r\n{}")
    }

    @Test func headAnnouncesTheLengthButSendsNoBody() {
        let response = HTTPResponse(status: 200, body: Array("hello".utf8))
        #expect(self.text(response, isHead: true) == "HTTP/1.1 200 OK\r\nDate: \(self.date)\r\nContent-Length: 5\r\n\r\n")
    }

    @Test func closeAddsConnectionClose() {
        #expect(self.text(HTTPResponse(status: 404), keepAlive: false)
            == "HTTP/1.1 404 Not Found\r\nDate: \(self.date)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    }

    @Test func http10KeepAliveIsConfirmed() {
        #expect(self.text(HTTPResponse(status: 200), version: .http1_0)
            == "HTTP/1.1 200 OK\r\nDate: \(self.date)\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n")
        #expect(self.text(HTTPResponse(status: 200), keepAlive: false, version: .http1_0)
            == "HTTP/1.1 200 OK\r\nDate: \(self.date)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    }

    @Test(arguments: [204, 304, 101])
    func bodylessStatusesHaveNoLengthAndNoBody(_ status: Int) {
        let out = self.text(HTTPResponse(status: status, body: Array("ignored".utf8)))
        #expect(!out.contains("Content-Length"))
        #expect(!out.contains("ignored"))
        #expect(out.hasSuffix("\r\n\r\n"))
    }

    @Test func responseSplittingInHeaderValuesIsNeutralised() {
        let response = HTTPResponse(status: 200, headers: HTTPHeaders([
            (name: "X-Evil", value: "a\r\nSet-Cookie: x=1\r\n\r\nHTTP/1.1 200 OK"),
            (name: "X-Nul", value: "a\u{0}b\tc"),
            (name: "Bad Name", value: "dropped"),
            (name: "X\r\nInjected", value: "dropped"),
        ]))
        let out = self.text(response)
        #expect(out.contains("X-Evil: a  Set-Cookie: x=1    HTTP/1.1 200 OK\r\n"))
        #expect(out.contains("X-Nul: a b\tc\r\n"))
        #expect(!out.contains("dropped"))
        // Exactly one empty line: the end of the head.
        #expect(out.components(separatedBy: "\r\n\r\n").count == 2)
    }

    @Test func writerOwnsFramingHeaders() {
        let response = HTTPResponse(status: 200, headers: HTTPHeaders([
            (name: "content-length", value: "999"),
            (name: "Transfer-Encoding", value: "chunked"),
            (name: "Connection", value: "keep-alive"),
            (name: "DATE", value: "yesterday"),
        ]), body: Array("abc".utf8))
        #expect(self.text(response, keepAlive: false)
            == "HTTP/1.1 200 OK\r\nDate: \(self.date)\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
    }

    @Test func appendsAfterExistingBytes() {
        var buffer = Array("prefix".utf8)
        HTTPResponseWriter.write(HTTPResponse(status: 201), keepAlive: true, isHead: false, date: self.date, into: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == "prefixHTTP/1.1 201 Created\r\nDate: \(self.date)\r\nContent-Length: 0\r\n\r\n")
    }

    @Test(arguments: [
        (400, "Bad Request"), (401, "Unauthorized"), (403, "Forbidden"), (408, "Request Timeout"), (409, "Conflict"),
        (410, "Gone"), (412, "Precondition Failed"), (413, "Content Too Large"), (414, "URI Too Long"),
        (422, "Unprocessable Content"), (431, "Request Header Fields Too Large"), (500, "Internal Server Error"),
        (501, "Not Implemented"), (503, "Service Unavailable"), (505, "HTTP Version Not Supported"), (599, "Unknown"),
    ])
    func statusLineCarriesTheStandardReason(_ status: Int, _ reason: String) {
        #expect(self.text(HTTPResponse(status: status)).hasPrefix("HTTP/1.1 \(status) \(reason)\r\n"))
    }

    @Test func outOfRangeStatusBecomes500() {
        #expect(self.text(HTTPResponse(status: 42)).hasPrefix("HTTP/1.1 500 Internal Server Error\r\n"))
    }

    @Test func continueResponseBytes() {
        #expect(HTTPResponseWriter.continueResponse == Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
    }

    @Test func parseErrorResponseSerialises() {
        let error = HTTPParseError(status: 431, name: "headersTooLarge", message: "too big")
        let out = self.text(error.response, keepAlive: false)
        let body = #"{"error":{"name":"headersTooLarge","message":"too big"}}"#
        #expect(out == "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: application/json\r\nDate: \(self.date)\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
    }
}

@Suite struct HTTPDateTests {
    @Test(arguments: [
        (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),   // RFC 9110 §5.6.7's example
        (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
        (-1, "Wed, 31 Dec 1969 23:59:59 GMT"),
        (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
        (4_133_980_799, "Fri, 31 Dec 2100 23:59:59 GMT"),
    ])
    func formatsKnownInstants(_ seconds: Int, _ expected: String) {
        #expect(HTTPDate.format(epochSeconds: seconds) == expected)
    }

    @Test func agreesWithStrftimeAcrossCenturies() {
        // Deterministic sample from 1900 to 2200, compared with the C library in the C locale.
        var x: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<5000 {
            x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let seconds = Int(x >> 33) % 9_467_280_000 - 2_208_988_800
            var t = time_t(seconds)
            var parts = tm()
            gmtime_r(&t, &parts)
            var out = [CChar](repeating: 0, count: 64)
            let n = strftime(&out, out.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
            let expected = String(decoding: out[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            #expect(HTTPDate.format(epochSeconds: seconds) == expected, "\(seconds)")
            if HTTPDate.format(epochSeconds: seconds) != expected { return }
        }
    }

    @Test func cacheFormatsOncePerSecond() {
        var cache = HTTPDate.Cache()
        #expect(cache.string(epochSeconds: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(cache.string(epochSeconds: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(cache.string(epochSeconds: 1) == "Thu, 01 Jan 1970 00:00:01 GMT")
    }
}

@Suite struct TokenCharTests {
    @Test func tokenMaskMatchesRFC9110Definition() {
        let tchar = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        for byte in UInt8.min...UInt8.max {
            #expect(isTokenChar(byte) == tchar.contains(byte), "byte \(byte)")
        }
    }
}
