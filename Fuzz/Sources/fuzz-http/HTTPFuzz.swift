import ConcordHTTP
import FuzzSupport

// HTTPRequestParser on arbitrary bytes (one connection's stream: pipelined requests, chunked
// bodies, garbage). Besides "no crash, no sanitizer report", each input checks:
//  - the outcome (events up to the first error, and that error) does not depend on how the
//    stream was cut: whole vs byte by byte (default limits), whole vs pieces of 1–7 bytes
//    (small limits, plus `limitBody` after each head as the transport calls it);
//  - each `.request` follows its own `.head` (same method, target, version, keepAlive);
//  - a body is never longer than the input, all bodies together neither, a fixed body has
//    exactly its Content-Length, a body-less head gives an empty body, no body passes a limit;
//  - the method is a token, the target visible ASCII; after an error `next()` throws it again;
//  - `bodyIsBuffered` right after a head means its `.request` comes without more input;
//  - every request parsed, written out again (request line, its fields as parsed, its body as
//    one chunk when chunked), parses to the same request.

let smallLimits = HTTPLimits(maxRequestLineBytes: 64, maxHeaderBytes: 160, maxHeaderCount: 6, maxBodyBytes: 96)
let bodyLimitAfterHead = 40

struct Outcome: Equatable {
    var events: [String] = []
    var error: String?
    var requests: [HTTPRequest] = []
    var chunked: [Bool] = []

    static func == (a: Outcome, b: Outcome) -> Bool { a.events == b.events && a.error == b.error }
}

/// `request` as a client would send it again: canonical request line, the fields as parsed (so
/// the same framing fields), the body as is or as one chunk.
func serialized(_ request: HTTPRequest, chunked: Bool) -> [UInt8] {
    var out = Array("\(request.method) \(request.target) HTTP/\(request.version.major).\(request.version.minor)\r\n".utf8)
    for field in request.headers { out += Array("\(field.name): \(field.value)\r\n".utf8) }
    out += [0x0D, 0x0A]
    if chunked {
        if !request.body.isEmpty { out += Array("\(String(request.body.count, radix: 16))\r\n".utf8) + request.body + [0x0D, 0x0A] }
        out += Array("0\r\n\r\n".utf8)
    } else {
        out += request.body
    }
    return out
}

func render(_ event: HTTPParserEvent) -> String {
    switch event {
    case .head(let h):
        return "head \(h.method) \(h.target) \(h.version.major).\(h.version.minor) ka=\(h.keepAlive) "
            + "100=\(h.expectsContinue) cl=\(h.contentLength.map(String.init) ?? "-") chunked=\(h.isChunked)"
    case .request(let r, let keepAlive):
        let headers = r.headers.map { "\($0.name)=\($0.value)" }.joined(separator: "|")
        return "request \(r.method) \(r.target) [\(headers)] body=\(describe(r.body)) ka=\(keepAlive)"
    }
}

func isToken(_ s: String) -> Bool {
    !s.isEmpty && s.utf8.allSatisfy { c in
        (c >= 0x30 && c <= 0x39) || (c | 0x20 >= 0x61 && c | 0x20 <= 0x7A) || "!#$%&'*+-.^_`|~".utf8.contains(c)
    }
}

/// Feeds `input` in pieces of the given sizes (cycled), draining after each append, and checks
/// the per-event properties on the way.
func feed(_ input: [UInt8], pieces: [Int], limits: HTTPLimits, limitBody: Int?) -> Outcome {
    var parser = HTTPRequestParser(limits: limits)
    var outcome = Outcome()
    var offset = 0
    var piece = 0
    var lastHead: HTTPRequestHead?
    var bodyTotal = 0
    var expectRequestNow = false
    while offset < input.count {
        let size = min(pieces[piece % pieces.count], input.count - offset)
        piece += 1
        input[offset..<(offset + size)].withUnsafeBytes { parser.append($0) }
        offset += size
        while true {
            let event: HTTPParserEvent?
            do {
                event = try parser.next()
            } catch {
                outcome.error = "\(error.status) \(error.name)"  // as the tests compare (message aside)
                // Once failed, the same error on every later call, whatever arrives.
                parser.append([0x47, 0x45, 0x54, 0x20, 0x2F, 0x0D, 0x0A])
                do {
                    _ = try parser.next()
                    propertyFailed("next() succeeded after an error")
                } catch let again {
                    check(again == error, "a different error after the first: \(again) vs \(error)")
                }
                return outcome
            }
            guard let event else {
                check(!expectRequestNow, "bodyIsBuffered after the head, but no request without more input")
                break
            }
            outcome.events.append(render(event))
            if expectRequestNow, case .head = event { propertyFailed("bodyIsBuffered after the head, but another head came") }
            expectRequestNow = false
            switch event {
            case .head(let head):
                check(lastHead == nil, "two heads without a request between")
                check(isToken(head.method), "method is not a token: \(head.method)")
                check(!head.target.isEmpty && head.target.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "target not visible ASCII: \(head.target)")
                check(!(head.isChunked && head.contentLength != nil), "chunked with a Content-Length")
                if let length = head.contentLength { check(length >= 0 && length <= limits.maxBodyBytes, "Content-Length \(length) passed the limit") }
                lastHead = head
                check(parser.isReadingBody || parser.bodyIsBuffered, "after a head: neither reading a body nor complete")
                expectRequestNow = parser.bodyIsBuffered
                if let limitBody {
                    do {
                        try parser.limitBody(limitBody)
                    } catch {
                        outcome.events.append("limitBody: \(error.status) \(error.name)")
                        check((head.contentLength ?? 0) > limitBody, "limitBody failed on a head within it")
                        outcome.error = "\(error.status) \(error.name)"  // as the tests compare (message aside)
                        return outcome
                    }
                }
            case .request(let request, let keepAlive):
                guard let head = lastHead else { propertyFailed("a request without its head") }
                check(request.method == head.method && request.target == head.target && request.version == head.version,
                      "request differs from its head")
                check(keepAlive == head.keepAlive, "keepAlive differs from the head's")
                check(request.body.count <= input.count, "body of \(request.body.count) bytes from \(input.count) bytes of input")
                bodyTotal += request.body.count
                check(bodyTotal <= input.count, "bodies total \(bodyTotal) bytes from \(input.count) bytes of input")
                check(request.body.count <= limits.maxBodyBytes, "body passed maxBodyBytes")
                if let limitBody { check(request.body.count <= limitBody, "body passed limitBody") }
                if let length = head.contentLength { check(request.body.count == length, "body \(request.body.count) != Content-Length \(length)") }
                if head.contentLength == nil && !head.isChunked { check(request.body.isEmpty, "a body without framing") }
                outcome.requests.append(request)
                outcome.chunked.append(head.isChunked)
                lastHead = nil
            }
        }
    }
    return outcome
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = inputBytes(data, size)
    let whole = feed(input, pieces: [max(input.count, 1)], limits: HTTPLimits(), limitBody: nil)
    let bytewise = feed(input, pieces: [1], limits: HTTPLimits(), limitBody: nil)
    check(whole == bytewise, "fed whole vs byte by byte:\n  \(whole.events) \(whole.error ?? "")\n  \(bytewise.events) \(bytewise.error ?? "")")
    for (index, request) in whole.requests.enumerated() {
        let again = serialized(request, chunked: whole.chunked[index])
        let reparsed = feed(again, pieces: [again.count], limits: HTTPLimits(), limitBody: nil)
        let expected = whole.events[(2 * index)...(2 * index + 1)]
        check(reparsed.error == nil && reparsed.events == Array(expected),
              "request \(index) written out (\(describe(again))) parses to \(reparsed.events) \(reparsed.error ?? ""), not \(Array(expected))")
    }
    let smallWhole = feed(input, pieces: [max(input.count, 1)], limits: smallLimits, limitBody: bodyLimitAfterHead)
    // Piece sizes from the input itself, so the fuzzer explores the cuts too.
    let cuts = input.prefix(4).map { Int($0 % 7) + 1 }
    let smallCut = feed(input, pieces: cuts.isEmpty ? [1] : cuts, limits: smallLimits, limitBody: bodyLimitAfterHead)
    check(smallWhole == smallCut, "small limits, fed whole vs in pieces \(cuts):\n  \(smallWhole.events) \(smallWhole.error ?? "")\n  \(smallCut.events) \(smallCut.error ?? "")")
    return 0
}

// The entry point SwiftPM links as `main` (see FuzzSupport's runFuzzer).
@_cdecl("fuzz_http_main")
func fuzzMain(_ argc: Int32, _ argv: FuzzArguments) -> Int32 { runFuzzer(argc, argv, testOneInput: fuzzHTTP) }
