@testable import ConcordHTTP
import Testing

/// One parser case: the input, and the events and error it must produce however it is fed.
struct ParserCase: Sendable, CustomTestStringConvertible {
    var name: String
    var input: String
    var limits = HTTPLimits()
    var events: [String] = []
    var error: String?

    var testDescription: String { self.name }
}

private func head(
    _ method: String, _ target: String, version: String = "1.1", keepAlive: Bool = true,
    expectsContinue: Bool = false, length: String = "0", chunked: Bool = false
) -> String {
    "head \(method) \(target) HTTP/\(version) keepAlive=\(keepAlive) continue=\(expectsContinue) length=\(length) chunked=\(chunked)"
}

private func request(_ method: String, _ target: String, headers: String = "Host=a", body: String = "", keepAlive: Bool = true) -> String {
    "request \(method) \(target) [\(headers)] body=\(body) keepAlive=\(keepAlive)"
}

/// The events of a bodyless request.
private func requestEvents(_ method: String, _ target: String, headers: String = "Host=a") -> [String] {
    [head(method, target), request(method, target, headers: headers)]
}

private func getRequest(_ target: String = "/", headers: String = "Host=a") -> [String] {
    requestEvents("GET", target, headers: headers)
}

/// The head of the chunked POSTs below: body errors come after it.
private let chunkedHead = head("POST", "/", length: "nil", chunked: true)

private let small = HTTPLimits(maxRequestLineBytes: 24, maxHeaderBytes: 40, maxHeaderCount: 3, maxBodyBytes: 8)

let parserCases: [ParserCase] = [
    // MARK: Well-formed requests
    ParserCase(name: "simpleGet", input: "GET / HTTP/1.1\r\nHost: a\r\n\r\n", events: getRequest()),
    ParserCase(
        name: "postWithContentLength",
        input: "POST /v1/x?y=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
        events: [head("POST", "/v1/x?y=1", length: "5"), request("POST", "/v1/x?y=1", headers: "Host=a|Content-Length=5", body: "hello")]
    ),
    ParserCase(name: "bareLFLineEndingsAccepted", input: "GET / HTTP/1.1\nHost: a\n\n", events: getRequest()),
    ParserCase(name: "leadingEmptyLinesIgnored", input: "\r\n\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", events: getRequest()),
    ParserCase(
        name: "tooManyLeadingEmptyLines",
        input: String(repeating: "\r\n", count: 17) + "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
        error: "400 badRequest"
    ),
    ParserCase(
        name: "headerValueOptionalWhitespaceStripped",
        input: "GET / HTTP/1.1\r\nHost:a\r\nX-A: \t v  w \t \r\nX-B:\r\n\r\n",
        events: getRequest(headers: "Host=a|X-A=v  w|X-B=")
    ),
    ParserCase(name: "headerNamesKeepTheirCase", input: "GET / HTTP/1.1\r\nhOsT: a\r\n\r\n", events: getRequest(headers: "hOsT=a")),
    ParserCase(
        name: "obsTextInHeaderValueAccepted",
        input: "GET / HTTP/1.1\r\nHost: a\r\nX: caf\u{e9}\r\n\r\n",
        events: getRequest(headers: "Host=a|X=caf\u{e9}")
    ),
    ParserCase(
        name: "pipelinedRequestsInOrder",
        input: "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"
            + "POST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"
            + "POST /3 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n0\r\n\r\n"
            + "GET /4 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        events: getRequest("/1") + [
            head("POST", "/2", length: "3"), request("POST", "/2", headers: "Host=a|Content-Length=3", body: "abc"),
            head("POST", "/3", length: "nil", chunked: true),
            request("POST", "/3", headers: "Host=a|Transfer-Encoding=chunked", body: "xy"),
            head("GET", "/4", keepAlive: false), request("GET", "/4", headers: "Host=a|Connection=close", keepAlive: false),
        ]
    ),
    ParserCase(
        name: "pipelinedRequestThenGarbageFailsAfterFirst",
        input: "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nBROKEN\r\n\r\n",
        events: getRequest("/1"),
        error: "400 badRequest"
    ),
    ParserCase(
        name: "emptyLineAfterBodyBeforeNextRequestIgnored",
        input: "POST /1 HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
        events: [head("POST", "/1", length: "1"), request("POST", "/1", headers: "Host=a|Content-Length=1", body: "x")]
            + getRequest("/2")
    ),

    // MARK: Request line (RFC 9112 §3)
    ParserCase(name: "bareCRInRequestLine", input: "GET / HTTP/1.1\rHost: a\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "doubleSpaceInRequestLine", input: "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "spaceInTarget", input: "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "controlCharInTarget", input: "GET /a\u{1}b HTTP/1.1\r\nHost: a\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "tabInTarget", input: "GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "nonASCIIInTarget", input: "GET /caf\u{e9} HTTP/1.1\r\nHost: a\r\n\r\n", error: "400 badRequest"),
    // RFC 9112 §3.2: a request-target has no fragment (it was routed as part of the path).
    ParserCase(name: "fragmentInTargetIs400", input: "GET /health#x HTTP/1.1\r\nHost: a\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "fragmentAfterQueryIs400", input: "GET /a?b=1#x HTTP/1.1\r\nHost: a\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "invalidMethodChar", input: "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "emptyMethod", input: " / HTTP/1.1\r\nHost: a\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "missingVersion", input: "GET /\r\nHost: a\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "trailingSpaceAfterVersion", input: "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "lowercaseVersionIsGarbage", input: "GET / http/1.1\r\nHost: a\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "twoDigitVersionIsGarbage", input: "GET / HTTP/11\r\nHost: a\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "http2VersionNotSupported505", input: "GET / HTTP/2.0\r\nHost: a\r\n\r\n", error: "505 httpVersionNotSupported"),
    // RFC 9110 §2.5: a higher minor version is processed as HTTP/1.1 (it was 505).
    ParserCase(name: "http12ProcessedAsHTTP11", input: "GET / HTTP/1.2\r\nHost: a\r\n\r\n", events: getRequest()),
    ParserCase(name: "http19WithoutHostIs400LikeHTTP11", input: "GET / HTTP/1.9\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "http09VersionNotSupported505", input: "GET / HTTP/0.9\r\n\r\n", error: "505 httpVersionNotSupported"),
    ParserCase(name: "asteriskFormForOptions", input: "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", events: requestEvents("OPTIONS", "*")),
    ParserCase(name: "asteriskFormOnlyForOptions", input: "GET * HTTP/1.1\r\nHost: a\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "absoluteFormAccepted", input: "GET http://a/b?c HTTP/1.1\r\nHost: a\r\n\r\n", events: requestEvents("GET", "http://a/b?c")),
    // CONNECT's authority-form parses, so the app answers 501 (it was a 400 "malformed").
    ParserCase(name: "authorityFormParsedForConnect", input: "CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n", events: requestEvents("CONNECT", "a:443")),
    ParserCase(name: "authorityFormRejectedForGet", input: "GET a:443 HTTP/1.1\r\nHost: a\r\n\r\n", error: "400 badRequest"),
    ParserCase(
        name: "requestLineAtLimitAccepted",
        input: "GET /" + String(repeating: "a", count: 10) + " HTTP/1.1\r\nHost: a\r\n\r\n",   // 24 bytes
        limits: small,
        events: getRequest("/" + String(repeating: "a", count: 10))
    ),
    ParserCase(
        name: "requestLineTooLong414",
        input: "GET /" + String(repeating: "a", count: 11) + " HTTP/1.1\r\nHost: a\r\n\r\n",   // 25 bytes
        limits: small,
        error: "414 uriTooLong"
    ),
    ParserCase(
        name: "requestLineTooLong414BeforeLineEnds",
        input: "GET /" + String(repeating: "a", count: 100),
        limits: small,
        error: "414 uriTooLong"
    ),
    ParserCase(
        name: "requestLineTooLongWinsOverGarbage",
        input: String(repeating: "\u{1}", count: 30) + "\r\n",
        limits: small,
        error: "414 uriTooLong"
    ),

    // MARK: Header fields (RFC 9112 §5)
    ParserCase(name: "smuggling_obsFold", input: "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "smuggling_obsFoldWithTab", input: "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n\tb\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "smuggling_whitespaceBeforeFirstField", input: "GET / HTTP/1.1\r\n Host: a\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "smuggling_spaceBeforeColon", input: "GET / HTTP/1.1\r\nHost : a\r\n\r\n", error: "400 badRequest"),
    ParserCase(
        name: "smuggling_tabBeforeColonOnContentLength",
        input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length\t: 1\r\n\r\nx",
        error: "400 badRequest"
    ),
    ParserCase(name: "smuggling_bareCRInHeaderValue", input: "GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "smuggling_bareCRAsEmptyLine", input: "GET / HTTP/1.1\r\nHost: a\r\n\r\r\n", error: "400 badRequest"),
    ParserCase(name: "nulInHeaderValue", input: "GET / HTTP/1.1\r\nHost: a\r\nX: a\u{0}b\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "delInHeaderValue", input: "GET / HTTP/1.1\r\nHost: a\r\nX: a\u{7f}b\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "invalidCharInHeaderName", input: "GET / HTTP/1.1\r\nHost: a\r\nX(y): b\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "emptyHeaderName", input: "GET / HTTP/1.1\r\nHost: a\r\n: b\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "headerLineWithoutColon", input: "GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "missingHostOnHTTP11", input: "GET / HTTP/1.1\r\nX: a\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "duplicateHost", input: "GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "hostWithUserinfoRejected", input: "GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "hostWithPathRejected", input: "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "hostWithSpaceRejected", input: "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", error: "400 badRequest"),
    // RFC 9112 §3.2: an invalid Host is 400 — a second ":" or a port that is not digits.
    ParserCase(name: "hostWithTwoPortsRejected", input: "GET / HTTP/1.1\r\nHost: example.invalid:80:80\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "hostWithNamedPortRejected", input: "GET / HTTP/1.1\r\nHost: example.invalid:port\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "hostWithBadPercentRejected", input: "GET / HTTP/1.1\r\nHost: a%zz\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "hostIPv6WithoutCloseRejected", input: "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "hostIPv6ThenJunkRejected", input: "GET / HTTP/1.1\r\nHost: [::1]x\r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "hostWithPortAccepted", input: "GET / HTTP/1.1\r\nHost: example.com:8080\r\n\r\n", events: getRequest(headers: "Host=example.com:8080")),
    ParserCase(
        name: "hostWithEmptyPortAndPercentAccepted",
        input: "GET / HTTP/1.1\r\nHost: ex%41mple:\r\n\r\n",
        events: getRequest(headers: "Host=ex%41mple:")
    ),
    ParserCase(name: "hostWithPortAndIPv6Accepted", input: "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", events: getRequest(headers: "Host=[::1]:8080")),
    ParserCase(name: "emptyHostAccepted", input: "GET / HTTP/1.1\r\nHost:\r\n\r\n", events: getRequest(headers: "Host=")),
    ParserCase(name: "duplicateHostOnHTTP10", input: "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", error: "400 badRequest"),
    ParserCase(
        name: "http10WithoutHostAccepted",
        input: "GET / HTTP/1.0\r\n\r\n",
        events: [head("GET", "/", version: "1.0", keepAlive: false), request("GET", "/", headers: "", keepAlive: false)]
    ),
    ParserCase(
        name: "headerSectionAtLimitAccepted",
        input: "GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "b", count: 24) + "\r\n\r\n",   // 9 + 29 + 2 = 40 bytes
        limits: small,
        events: [head("GET", "/"), request("GET", "/", headers: "Host=a|X=" + String(repeating: "b", count: 24))]
    ),
    ParserCase(
        name: "headerSectionTooLarge431",
        input: "GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "b", count: 25) + "\r\n\r\n",
        limits: small,
        error: "431 headersTooLarge"
    ),
    ParserCase(
        name: "headerSectionTooLarge431BeforeLineEnds",
        input: "GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "b", count: 200),
        limits: small,
        error: "431 headersTooLarge"
    ),
    ParserCase(
        name: "tooManyHeaderFields431",
        input: "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n",
        limits: small,
        error: "431 headersTooLarge"
    ),

    // MARK: Framing (RFC 9112 §6)
    ParserCase(
        name: "noFramingMeansNoBody",
        input: "POST / HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
        events: [head("POST", "/"), request("POST", "/")] + getRequest("/2")
    ),
    ParserCase(
        name: "smuggling_contentLengthAndTransferEncoding",
        input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        error: "400 badRequest"
    ),
    ParserCase(
        name: "smuggling_transferEncodingThenContentLength",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
        error: "400 badRequest"
    ),
    ParserCase(
        name: "smuggling_chunkedNotFinalCoding",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        error: "400 badRequest"
    ),
    ParserCase(
        name: "smuggling_transferEncodingWithoutChunked",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
        error: "400 badRequest"
    ),
    ParserCase(
        name: "smuggling_emptyTransferEncoding",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \r\n\r\n",
        error: "400 badRequest"
    ),
    ParserCase(
        name: "smuggling_chunkedTwice",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        error: "400 badRequest"
    ),
    ParserCase(
        name: "smuggling_transferEncodingOnHTTP10",
        input: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        error: "400 badRequest"
    ),
    ParserCase(
        name: "otherTransferCodingBeforeChunked501",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        error: "501 notImplemented"
    ),
    ParserCase(
        name: "transferEncodingCaseInsensitive",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
        events: [head("POST", "/", length: "nil", chunked: true), request("POST", "/", headers: "Host=a|Transfer-Encoding=Chunked", body: "x")]
    ),
    ParserCase(
        name: "duplicateDifferingContentLength",
        input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy",
        error: "400 badRequest"
    ),
    ParserCase(
        name: "differingContentLengthList",
        input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 2\r\n\r\nxy",
        error: "400 badRequest"
    ),
    ParserCase(
        name: "identicalContentLengthsAccepted",
        input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2, 2\r\ncontent-length: 2\r\n\r\nxy",
        events: [
            head("POST", "/", length: "2"),
            request("POST", "/", headers: "Host=a|Content-Length=2, 2|content-length=2", body: "xy"),
        ]
    ),
    ParserCase(name: "contentLengthPlusSign", input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\nx", error: "400 badRequest"),
    ParserCase(name: "contentLengthNegative", input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\nx", error: "400 badRequest"),
    ParserCase(name: "contentLengthSpaceInside", input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 1\r\n\r\nx", error: "400 badRequest"),
    ParserCase(name: "contentLengthEmpty", input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n", error: "400 badRequest"),
    ParserCase(name: "contentLengthHex", input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x1\r\n\r\nx", error: "400 badRequest"),
    ParserCase(name: "contentLengthEmptyListElement", input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1,\r\n\r\nx", error: "400 badRequest"),
    ParserCase(
        name: "contentLengthOverflow",
        input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\nx",
        error: "400 badRequest"
    ),
    ParserCase(
        name: "contentLength2Pow62Is413WithoutAllocating",
        input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4611686018427387904\r\n\r\nx",
        error: "413 payloadTooLarge"
    ),
    ParserCase(
        name: "missingHostCheckedBeforeBodyLimit",
        input: "POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\n123456789",
        limits: HTTPLimits(maxBodyBytes: 8),
        error: "400 badRequest"   // no Host: the head is checked before framing
    ),
    ParserCase(
        name: "bodyTooLarge413",
        input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9\r\n\r\n",
        limits: HTTPLimits(maxBodyBytes: 8),
        error: "413 payloadTooLarge"
    ),
    ParserCase(
        name: "bodyAtLimitAccepted",
        input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 8\r\n\r\n12345678",
        limits: HTTPLimits(maxBodyBytes: 8),
        events: [head("POST", "/", length: "8"), request("POST", "/", headers: "Host=a|Content-Length=8", body: "12345678")]
    ),

    // MARK: Chunked (RFC 9112 §7.1)
    ParserCase(
        name: "chunkedWithExtensionsAndTrailers",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;a=b ; c = \"x \\\" y\";flag\r\nhello\r\n0006\r\n world\r\n0;last\r\nTrailer-A: t\r\nTrailer-B: u\r\n\r\n",
        events: [
            head("POST", "/", length: "nil", chunked: true),
            request("POST", "/", headers: "Host=a|Transfer-Encoding=chunked", body: "hello world"),
        ]
    ),
    ParserCase(
        name: "chunkedUpperCaseHex",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n",
        events: [
            head("POST", "/", length: "nil", chunked: true),
            request("POST", "/", headers: "Host=a|Transfer-Encoding=chunked", body: "0123456789"),
        ]
    ),
    ParserCase(
        name: "chunkSizeOverflow",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1FFFFFFFFFFFFFFFF\r\n",
        events: [chunkedHead],
        error: "400 badRequest"
    ),
    ParserCase(
        name: "chunkSizeHugeIs413",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n4000000000000000\r\n",
        events: [chunkedHead],
        error: "413 payloadTooLarge"
    ),
    ParserCase(
        name: "chunkSizeWith0xPrefix",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n",
        events: [chunkedHead],
        error: "400 badRequest"
    ),
    ParserCase(
        name: "chunkSizeEmpty",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n;a=b\r\n",
        events: [chunkedHead],
        error: "400 badRequest"
    ),
    ParserCase(
        name: "chunkSizeNegative",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n",
        events: [chunkedHead],
        error: "400 badRequest"
    ),
    ParserCase(
        name: "chunkExtensionUnterminatedQuote",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1;a=\"x\r\nx\r\n0\r\n\r\n",
        events: [chunkedHead],
        error: "400 badRequest"
    ),
    ParserCase(
        name: "chunkExtensionTooLong",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1;a=" + String(repeating: "b", count: 5000),
        events: [chunkedHead],
        error: "400 badRequest"
    ),
    ParserCase(
        name: "smuggling_chunkDataWithoutCRLF",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n",
        events: [chunkedHead],
        error: "400 badRequest"
    ),
    ParserCase(
        name: "smuggling_chunkDataFollowedByBareLF",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\n0\r\n\r\n",
        events: [chunkedHead],
        error: "400 badRequest"
    ),
    ParserCase(
        name: "smuggling_chunkSizeLineWithBareLF",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n",
        events: [chunkedHead],
        error: "400 badRequest"
    ),
    ParserCase(
        name: "chunkedTotalTooLarge413",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n4\r\nfghi\r\n0\r\n\r\n",
        limits: HTTPLimits(maxBodyBytes: 8),
        events: [chunkedHead],
        error: "413 payloadTooLarge"
    ),
    ParserCase(
        name: "trailerWithObsFoldRejected",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: a\r\n b\r\n\r\n",
        events: [chunkedHead],
        error: "400 badRequest"
    ),
    ParserCase(
        name: "trailersTooLarge431",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: " + String(repeating: "t", count: 100),
        limits: HTTPLimits(maxHeaderBytes: 64),
        events: [chunkedHead],
        error: "431 headersTooLarge"
    ),
    // Found by Fuzz/: whole, the bare LF was 400; split, the line passed the budget
    // before its LF arrived, 431.
    ParserCase(
        name: "trailerLineOverBudgetEndingInBareLF431",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: " + String(repeating: "t", count: 100) + "\n\r\n",
        limits: HTTPLimits(maxHeaderBytes: 64),
        events: [chunkedHead],
        error: "431 headersTooLarge"
    ),
    ParserCase(
        name: "tooManyTrailerFields431",
        input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n",
        limits: HTTPLimits(maxHeaderCount: 3),
        events: [chunkedHead],
        error: "431 headersTooLarge"
    ),

    // MARK: Connection and Expect
    ParserCase(
        name: "http10KeepAliveOnlyWhenAsked",
        input: "GET /1 HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\nGET /2 HTTP/1.0\r\n\r\n",
        events: [
            head("GET", "/1", version: "1.0", keepAlive: true), request("GET", "/1", headers: "Connection=Keep-Alive", keepAlive: true),
            head("GET", "/2", version: "1.0", keepAlive: false), request("GET", "/2", headers: "", keepAlive: false),
        ]
    ),
    ParserCase(
        name: "http11ConnectionCloseInTokenList",
        input: "GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade, CLOSE\r\n\r\n",
        events: [head("GET", "/", keepAlive: false), request("GET", "/", headers: "Host=a|Connection=upgrade, CLOSE", keepAlive: false)]
    ),
    ParserCase(
        name: "http11CloseWinsOverKeepAlive",
        input: "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n",
        events: [
            head("GET", "/", keepAlive: false),
            request("GET", "/", headers: "Host=a|Connection=keep-alive|Connection=close", keepAlive: false),
        ]
    ),
    ParserCase(
        name: "expectContinueOnHTTP11",
        input: "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\nok",
        events: [
            head("POST", "/", expectsContinue: true, length: "2"),
            request("POST", "/", headers: "Host=a|Expect=100-Continue|Content-Length=2", body: "ok"),
        ]
    ),
    ParserCase(
        name: "expectContinueIgnoredOnHTTP10",
        input: "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok",
        events: [
            head("POST", "/", version: "1.0", keepAlive: false, length: "2"),
            request("POST", "/", headers: "Expect=100-continue|Content-Length=2", body: "ok", keepAlive: false),
        ]
    ),
    ParserCase(
        name: "unknownExpectationIgnored",
        input: "GET / HTTP/1.1\r\nHost: a\r\nExpect: something\r\n\r\n",
        events: getRequest(headers: "Host=a|Expect=something")
    ),
]

@Suite struct HTTPRequestParserTests {
    @Test(arguments: parserCases)
    func parsesTheSameWayHoweverTheInputIsSplit(_ testCase: ParserCase) {
        expectSameOutcomeInEveryFeeding(
            Array(testCase.input.utf8), limits: testCase.limits,
            expected: ParseOutcome(events: testCase.events, error: testCase.error)
        )
    }
}
