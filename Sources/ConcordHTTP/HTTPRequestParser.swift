/// An incremental HTTP/1.1 request parser (RFC 9112): bytes in with `append`, events out with
/// `next()`. Pure: no I/O, no clock.
///
/// Cost is linear in the input: a scan position remembers how far the current line has been
/// searched, so feeding one byte at a time never rescans. Memory is bounded: consumed bytes
/// are dropped from the buffer, body bytes are copied out as they arrive, and no buffer is
/// ever sized from a length the client declared (Content-Length, chunk size).
///
/// Choices where RFC 9112 leaves room (each cited at its branch below):
/// - Head lines may end in CRLF or a bare LF (§2.2 allows accepting LF); a bare CR is 400.
///   Chunked framing lines (chunk sizes, the CRLF after chunk data, trailers) must end in
///   CRLF: that is where LF-vs-CRLF disagreements between hops have been used for smuggling.
/// - Up to 16 empty lines before a request line are ignored (§2.2 says at least one).
/// - The request-target must be visible ASCII (no space, control or raw non-ASCII byte):
///   origin-form, absolute-form (kept as sent), or "*" for OPTIONS; authority-form is 400.
/// - Host is required on HTTP/1.1, at most one, and must look like uri-host [":" port].
/// - Content-Length as a list of equal values ("5, 5") is accepted (§6.3 item 5).
/// - Transfer-Encoding with Content-Length is rejected (§6.1 allows rejecting).
/// - Transfer-Encoding whose final coding is not chunked is 400 (§6.3 item 4, a MUST);
///   chunked as final coding preceded by any other coding (gzip, …) is 501.
/// - `Expect: 100-continue` (HTTP/1.1 only, RFC 9110 §10.1.1) sets `expectsContinue`;
///   other expectations are ignored rather than answered with 417.
public struct HTTPRequestParser: Sendable {
    private enum State: Sendable {
        case requestLine
        case headerLines
        case fixedBody(remaining: Int)
        case chunkSizeLine
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailerLines
        case complete
        case failed(HTTPParseError)
    }

    /// Longest chunk-size line (size + extensions) accepted; extensions carry nothing we use.
    static let maxChunkLineBytes = 4096
    /// Empty lines tolerated before a request line (RFC 9112 §2.2 asks for at least one).
    static let maxLeadingEmptyLines = 16

    private let limits: HTTPLimits
    private var state: State = .requestLine
    private var buffer: [UInt8] = []
    /// First unconsumed byte of `buffer`.
    private var cursor = 0
    /// Where the search for the current line's LF resumes (never before `cursor`).
    private var scan = 0

    // Per-request state, reset after each request.
    private var leadingEmptyLines = 0
    private var sectionBytes = 0      // bytes of header (or trailer) lines consumed so far
    private var sectionFields = 0     // fields in the header (or trailer) section so far
    private var method = ""
    private var target = ""
    private var version = HTTPVersion.http1_1
    private var headers = HTTPHeaders()
    private var hostCount = 0
    private var contentLength: Int?
    private var transferCodings: [String] = []
    private var sawTransferEncoding = false
    private var connectionClose = false
    private var connectionKeepAlive = false
    private var expectContinue = false
    /// Framing-relevant fields, interpreted once the head is complete.
    private var pendingChecks: [(FieldKind, String)] = []
    private var head: HTTPRequestHead?
    /// This request's body limit when the layer above set one after the head (`limitBody`).
    private var bodyLimit: Int?
    private var body: [UInt8] = []

    /// Creates a parser enforcing `limits`.
    public init(limits: HTTPLimits = HTTPLimits()) {
        self.limits = limits
    }

    /// Buffers `bytes` for `next()`. Call `next()` until it returns nil after each append:
    /// limits are enforced there, so input appended without draining stays buffered.
    /// After a parse error input is discarded (the connection is closing anyway), which keeps
    /// memory bounded against a client that keeps sending.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if case .failed = self.state { return }
        self.compact()
        self.buffer.append(contentsOf: bytes)
    }

    /// Convenience for tests and callers holding an array.
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { self.append($0) }
    }

    /// True while a request is partly received or unread bytes are buffered: the transport
    /// uses it to choose between the header/body read timeouts and the idle timeout.
    public var hasBufferedInput: Bool {
        if self.cursor < self.buffer.count { return true }
        switch self.state {
        case .requestLine: return self.leadingEmptyLines > 0
        case .failed: return false
        default: return true
        }
    }

    /// The next event, or nil when more bytes are needed. Once it has thrown, it throws the
    /// same error on every later call.
    public mutating func next() throws(HTTPParseError) -> HTTPParserEvent? {
        do {
            return try self.step()
        } catch {
            self.state = .failed(error)
            self.buffer = []
            self.cursor = 0
            self.scan = 0
            throw error
        }
    }

    /// True between a `.head` and its `.request`: the body is being read (the transport picks
    /// the body read timeout rather than the header read timeout).
    public var isReadingBody: Bool {
        switch self.state {
        case .fixedBody, .chunkSizeLine, .chunkData, .chunkDataEnd, .trailerLines: return true
        case .requestLine, .headerLines, .complete, .failed: return false
        }
    }

    /// Bytes held in the input buffer, consumed or not (tests check memory stays bounded).
    var bufferedByteCount: Int { self.buffer.count }
    /// Bytes examined while searching for line ends, over the parser's life (tests check that
    /// feeding byte by byte never rescans).
    private(set) var scannedByteCount = 0

    // MARK: - State machine

    private mutating func step() throws(HTTPParseError) -> HTTPParserEvent? {
        while true {
            switch self.state {
            case .failed(let error):
                throw error

            case .requestLine:
                guard let line = self.nextLine() else {
                    // RFC 9112 §3: the request line is bounded; detect an overlong one before its
                    // end arrives. +1 leaves room for the CR of a CRLF not yet completed.
                    if self.buffer.count - self.cursor > self.limits.maxRequestLineBytes + 1 {
                        throw .uriTooLong("request line longer than \(self.limits.maxRequestLineBytes) bytes")
                    }
                    return nil
                }
                if line.start == line.end {
                    // RFC 9112 §2.2: ignore empty lines received before the request line.
                    self.leadingEmptyLines += 1
                    if self.leadingEmptyLines > HTTPRequestParser.maxLeadingEmptyLines {
                        throw .badRequest("too many empty lines before the request line")
                    }
                    continue
                }
                if line.end - line.start > self.limits.maxRequestLineBytes {
                    throw .uriTooLong("request line longer than \(self.limits.maxRequestLineBytes) bytes")
                }
                try self.parseRequestLine(line.start, line.end)
                self.state = .headerLines

            case .headerLines:
                guard let line = self.nextLine() else {
                    if self.sectionBytes + (self.buffer.count - self.cursor) > self.limits.maxHeaderBytes {
                        throw .headersTooLarge("header section larger than \(self.limits.maxHeaderBytes) bytes")
                    }
                    return nil
                }
                self.sectionBytes += line.consumed
                if self.sectionBytes > self.limits.maxHeaderBytes {
                    throw .headersTooLarge("header section larger than \(self.limits.maxHeaderBytes) bytes")
                }
                if line.start == line.end {
                    let head = try self.finishHead()
                    return .head(head)
                }
                self.sectionFields += 1
                if self.sectionFields > self.limits.maxHeaderCount {
                    throw .headersTooLarge("more than \(self.limits.maxHeaderCount) header fields")
                }
                let field = try self.parseFieldLine(line.start, line.end)
                self.record(field)

            case .fixedBody(let remaining):
                guard self.takeBodyBytes(remaining, waiting: { .fixedBody(remaining: $0) }, then: .complete) else { return nil }

            case .chunkSizeLine:
                guard let line = try self.nextChunkedLine() else { return nil }
                let size = try self.parseChunkSizeLine(line.start, line.end)
                if size == 0 {
                    // RFC 9112 §7.1: last-chunk, then the trailer section and the final CRLF.
                    self.sectionBytes = 0
                    self.sectionFields = 0
                    self.state = .trailerLines
                } else {
                    // RFC 9112 §7.1: the total is bounded before any of this chunk is read.
                    let limit = min(self.limits.maxBodyBytes, self.bodyLimit ?? .max)
                    if size > limit - self.body.count { throw self.bodyTooLarge(limit) }
                    self.state = .chunkData(remaining: size)
                }

            case .chunkData(let remaining):
                guard self.takeBodyBytes(remaining, waiting: { .chunkData(remaining: $0) }, then: .chunkDataEnd) else { return nil }

            case .chunkDataEnd:
                // RFC 9112 §7.1: chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF.
                let available = self.buffer.count - self.cursor
                if available == 0 { return nil }
                if self.buffer[self.cursor] != cr {
                    throw .badRequest("chunk data not followed by CRLF")
                }
                if available == 1 { return nil }
                if self.buffer[self.cursor + 1] != lf {
                    throw .badRequest("chunk data not followed by CRLF")
                }
                self.cursor += 2
                self.scan = self.cursor
                self.state = .chunkSizeLine

            case .trailerLines:
                // RFC 9112 §7.1.2: trailer fields are parsed like header fields, then discarded
                // (nothing here needs them), under the same size limits as the header section.
                guard let line = try self.nextChunkedLine(sectionLimited: true) else { return nil }
                self.sectionBytes += line.consumed
                if self.sectionBytes > self.limits.maxHeaderBytes {
                    throw .headersTooLarge("trailer section larger than \(self.limits.maxHeaderBytes) bytes")
                }
                if line.start == line.end {
                    self.state = .complete
                    continue
                }
                self.sectionFields += 1
                if self.sectionFields > self.limits.maxHeaderCount {
                    throw .headersTooLarge("more than \(self.limits.maxHeaderCount) trailer fields")
                }
                _ = try self.parseFieldLine(line.start, line.end)

            case .complete:
                guard let head = self.head else {
                    // Unreachable: `.complete` is only entered after `finishHead` set `head`.
                    throw .badRequest("internal parser state")
                }
                let request = HTTPRequest(
                    method: head.method,
                    target: head.target,
                    version: head.version,
                    headers: head.headers,
                    body: self.body
                )
                self.resetRequest()
                return .request(request, keepAlive: head.keepAlive)
            }
        }
    }

    /// Moves up to `remaining` buffered body bytes (of a fixed body or a chunk) into `body`. All
    /// taken: the state becomes `done` (true); else `waiting(stillToCome)` (false: wait for bytes).
    private mutating func takeBodyBytes(_ remaining: Int, waiting: (Int) -> State, then done: State) -> Bool {
        let take = min(self.buffer.count - self.cursor, remaining)
        if take > 0 {
            self.body.append(contentsOf: self.buffer[self.cursor..<(self.cursor + take)])
            self.cursor += take
            self.scan = self.cursor
        }
        let left = remaining - take
        self.state = left == 0 ? done : waiting(left)
        return left == 0
    }

    private mutating func resetRequest() {
        self.state = .requestLine
        self.leadingEmptyLines = 0
        self.sectionBytes = 0
        self.sectionFields = 0
        self.method = ""
        self.target = ""
        self.version = .http1_1
        self.headers = HTTPHeaders()
        self.hostCount = 0
        self.contentLength = nil
        self.transferCodings = []
        self.sawTransferEncoding = false
        self.connectionClose = false
        self.connectionKeepAlive = false
        self.expectContinue = false
        self.pendingChecks = []
        self.head = nil
        self.body = []
        self.bodyLimit = nil
    }

    /// Right after a `.head`: whether its whole body is already buffered (a chunked body counts
    /// as not: its end is known only once parsed).
    public var bodyIsBuffered: Bool {
        switch self.state {
        case .complete: return true
        case .fixedBody(let remaining): return self.buffer.count - self.cursor >= remaining
        default: return false
        }
    }

    /// `413` for a body over `limit` bytes; over the server's own limit, with its advice.
    private func bodyTooLarge(_ limit: Int) -> HTTPParseError {
        guard limit == self.limits.maxBodyBytes, let advice = self.limits.bodyLimitAdvice else {
            return .payloadTooLarge("body larger than \(limit) bytes")
        }
        return .payloadTooLarge("body larger than \(limit) bytes; \(advice)")
    }

    /// Lowers the current request's body limit (a route's own, decided from the head). A
    /// Content-Length over it fails at once; a chunked body fails when its chunks pass it.
    public mutating func limitBody(_ bytes: Int) throws(HTTPParseError) {
        self.bodyLimit = bytes
        if let length = self.head?.contentLength, length > bytes {
            self.state = .failed(.payloadTooLarge("body larger than \(bytes) bytes"))
            throw .payloadTooLarge("body larger than \(bytes) bytes")
        }
        if self.body.count > bytes {
            self.state = .failed(.payloadTooLarge("body larger than \(bytes) bytes"))
            throw .payloadTooLarge("body larger than \(bytes) bytes")
        }
    }

    /// Drops consumed bytes. Only moves data when at least half the buffer is consumed (or all
    /// of it), so the bytes moved never exceed the bytes consumed: compaction stays linear.
    private mutating func compact() {
        guard self.cursor > 0 else { return }
        if self.cursor == self.buffer.count {
            // Give back a large buffer (one big read) instead of keeping it per connection.
            if self.buffer.capacity > 64 * 1024 {
                self.buffer = []
            } else {
                self.buffer.removeAll(keepingCapacity: true)
            }
            self.cursor = 0
            self.scan = 0
        } else if self.cursor >= self.buffer.count / 2 {
            self.buffer.removeSubrange(0..<self.cursor)
            self.scan -= self.cursor
            self.cursor = 0
        }
    }

    // MARK: - Lines

    private struct Line {
        var start: Int      // first content byte
        var end: Int        // one past the last content byte (CR and LF excluded)
        var consumed: Int   // content plus line ending
    }

    /// The next LF-terminated line of the head, consumed; nil when no LF has arrived yet.
    /// A CR directly before the LF is stripped; any other CR stays in the content, where
    /// the line's own validation rejects it (RFC 9112 §2.2: a bare CR is invalid).
    private mutating func nextLine() -> Line? {
        let count = self.buffer.count
        let from = max(self.scan, self.cursor)
        var i = from
        let found: Int? = self.buffer.withUnsafeBufferPointer { p -> Int? in
            while i < count {
                if p[i] == lf { return i }
                i += 1
            }
            return nil
        }
        self.scannedByteCount &+= (found ?? count) - from
        guard let lfIndex = found else {
            self.scan = count
            return nil
        }
        let start = self.cursor
        var end = lfIndex
        if end > start && self.buffer[end - 1] == cr { end -= 1 }
        let line = Line(start: start, end: end, consumed: lfIndex + 1 - start)
        self.cursor = lfIndex + 1
        self.scan = self.cursor
        return line
    }

    /// A line of chunked framing: must end in CRLF (see the type's notes). Bounded by
    /// `maxChunkLineBytes`, or by the trailer section budget when `sectionLimited`.
    private mutating func nextChunkedLine(sectionLimited: Bool = false) throws(HTTPParseError) -> Line? {
        guard let line = self.nextLine() else {
            let pending = self.buffer.count - self.cursor
            if sectionLimited {
                if self.sectionBytes + pending > self.limits.maxHeaderBytes {
                    throw .headersTooLarge("trailer section larger than \(self.limits.maxHeaderBytes) bytes")
                }
            } else if pending > HTTPRequestParser.maxChunkLineBytes + 1 {
                throw .badRequest("chunk size line too long")
            }
            return nil
        }
        // The budget first: had the line arrived without its LF, its bytes so far (CR included)
        // would have failed it above, so it fails the same way whole (found by Fuzz/).
        if sectionLimited && self.sectionBytes + line.consumed - 1 > self.limits.maxHeaderBytes {
            throw .headersTooLarge("trailer section larger than \(self.limits.maxHeaderBytes) bytes")
        }
        if line.consumed - (line.end - line.start) != 2 {
            throw .badRequest("chunked framing line not terminated by CRLF")
        }
        if !sectionLimited && line.end - line.start > HTTPRequestParser.maxChunkLineBytes {
            throw .badRequest("chunk size line too long")
        }
        return line
    }

    // MARK: - Request line (RFC 9112 §3)

    private mutating func parseRequestLine(_ start: Int, _ end: Int) throws(HTTPParseError) {
        // request-line = method SP request-target SP HTTP-version
        var i = start
        while i < end && isTokenChar(self.buffer[i]) { i += 1 }
        guard i > start, i < end, self.buffer[i] == sp else {
            throw .badRequest("malformed request line")
        }
        let methodEnd = i
        i += 1
        let targetStart = i
        // RFC 9112 §3.2: the target is a URI reference — visible ASCII only; a space, a control
        // character or a raw non-ASCII byte means the line cannot be split reliably.
        while i < end && self.buffer[i] > 0x20 && self.buffer[i] < 0x7F { i += 1 }
        guard i > targetStart, i < end, self.buffer[i] == sp else {
            throw .badRequest("malformed request line")
        }
        let targetEnd = i
        i += 1
        // RFC 9112 §2.3: HTTP-version = "HTTP/" DIGIT "." DIGIT, case-sensitive.
        guard end - i == 8,
              self.buffer[i] == UInt8(ascii: "H"), self.buffer[i + 1] == UInt8(ascii: "T"),
              self.buffer[i + 2] == UInt8(ascii: "T"), self.buffer[i + 3] == UInt8(ascii: "P"),
              self.buffer[i + 4] == UInt8(ascii: "/"), isDigit(self.buffer[i + 5]),
              self.buffer[i + 6] == UInt8(ascii: "."), isDigit(self.buffer[i + 7])
        else {
            throw .badRequest("malformed request line")
        }
        let major = Int(self.buffer[i + 5] - UInt8(ascii: "0"))
        let minor = Int(self.buffer[i + 7] - UInt8(ascii: "0"))
        guard major == 1 else {
            throw .versionNotSupported("HTTP/\(major).\(minor) is not supported")
        }
        let method = String(decoding: self.buffer[start..<methodEnd], as: UTF8.self)
        let first = self.buffer[targetStart]
        if first == UInt8(ascii: "/") {
            // RFC 9112 §3.2.1 origin-form: the usual case.
        } else if first == UInt8(ascii: "*") && targetEnd - targetStart == 1 {
            // RFC 9112 §3.2.4 asterisk-form: only for a server-wide OPTIONS.
            guard method == "OPTIONS" else { throw .badRequest("asterisk-form target is only valid for OPTIONS") }
        } else if method == "CONNECT" {
            // RFC 9112 §3.2.3 authority-form: kept so the router answers 501 (CONNECT is not served).
        } else if !self.isAbsoluteForm(targetStart, targetEnd) {
            // Authority-form is only for CONNECT.
            throw .badRequest("malformed request target")
        }
        // RFC 9112 §3.2: no form of request-target has a fragment (clients strip it); a '#'
        // would otherwise end up inside a path segment or query value.
        if self.buffer[targetStart..<targetEnd].contains(UInt8(ascii: "#")) {
            throw .badRequest("fragment in request target")
        }
        // RFC 9112 §3.2.2 absolute-form is accepted (a server MUST accept it) and kept as sent.
        self.method = method
        self.target = String(decoding: self.buffer[targetStart..<targetEnd], as: UTF8.self)
        // RFC 9110 §2.5: a higher minor version of a major version we implement is processed
        // as the highest minor we conform to (HTTP/1.2 is served as HTTP/1.1).
        self.version = HTTPVersion(major: major, minor: min(minor, 1))
    }

    /// scheme ":" "//" … (RFC 3986 §3.1: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )).
    private func isAbsoluteForm(_ start: Int, _ end: Int) -> Bool {
        var i = start
        guard i < end, isAlpha(self.buffer[i]) else { return false }
        i += 1
        while i < end {
            let c = self.buffer[i]
            if isAlpha(c) || isDigit(c) || c == UInt8(ascii: "+") || c == UInt8(ascii: "-") || c == UInt8(ascii: ".") {
                i += 1
            } else {
                break
            }
        }
        return end - i >= 3 && self.buffer[i] == UInt8(ascii: ":")
            && self.buffer[i + 1] == UInt8(ascii: "/") && self.buffer[i + 2] == UInt8(ascii: "/")
    }

    // MARK: - Fields (RFC 9112 §5)

    private struct Field {
        var nameStart: Int, nameEnd: Int, valueStart: Int, valueEnd: Int
    }

    private func parseFieldLine(_ start: Int, _ end: Int) throws(HTTPParseError) -> Field {
        let first = self.buffer[start]
        if first == sp || first == htab {
            // RFC 9112 §5.2: obs-fold is rejected with 400 (also covers whitespace before the
            // first field).
            throw .badRequest("obsolete line folding is not accepted")
        }
        var i = start
        while i < end && isTokenChar(self.buffer[i]) { i += 1 }
        guard i < end, i > start else { throw .badRequest("malformed header field") }
        let c = self.buffer[i]
        if c != UInt8(ascii: ":") {
            if c == sp || c == htab {
                // RFC 9112 §5.1: no whitespace between field name and colon; MUST reject with 400.
                throw .badRequest("whitespace between header field name and colon")
            }
            throw .badRequest("invalid character in header field name")
        }
        let nameEnd = i
        // RFC 9112 §5.1: field-line = field-name ":" OWS field-value OWS.
        var valueStart = i + 1
        var valueEnd = end
        while valueStart < valueEnd && (self.buffer[valueStart] == sp || self.buffer[valueStart] == htab) { valueStart += 1 }
        while valueEnd > valueStart && (self.buffer[valueEnd - 1] == sp || self.buffer[valueEnd - 1] == htab) { valueEnd -= 1 }
        // RFC 9110 §5.5: field-value chars are VCHAR, SP, HTAB, obs-text; CR, LF, NUL and other
        // controls are invalid (a recipient MUST reject CR/LF/NUL or replace them; we reject).
        var j = valueStart
        while j < valueEnd {
            let b = self.buffer[j]
            if (b < 0x20 && b != htab) || b == 0x7F {
                throw .badRequest("invalid character in header field value")
            }
            j += 1
        }
        return Field(nameStart: start, nameEnd: nameEnd, valueStart: valueStart, valueEnd: valueEnd)
    }

    /// Adds a field to the head and notes the ones that decide framing and connection handling.
    private mutating func record(_ field: Field) {
        let name = String(decoding: self.buffer[field.nameStart..<field.nameEnd], as: UTF8.self)
        let value = String(decoding: self.buffer[field.valueStart..<field.valueEnd], as: UTF8.self)
        self.headers.add(name: name, value: value)
        self.pendingChecks.append((self.nameKind(field), value))
    }

    private enum FieldKind { case host, contentLength, transferEncoding, connection, expect, other }

    private func nameKind(_ field: Field) -> FieldKind {
        let length = field.nameEnd - field.nameStart
        func matches(_ lower: StaticString) -> Bool {
            guard lower.utf8CodeUnitCount == length else { return false }
            let p = lower.utf8Start
            for k in 0..<length where self.buffer[field.nameStart + k] | 0x20 != p[k] {
                // `| 0x20` lowercases letters; the other bytes of these names ('-') are unaffected.
                return false
            }
            return true
        }
        switch length {
        case 4: return matches("host") ? .host : .other
        case 6: return matches("expect") ? .expect : .other
        case 10: return matches("connection") ? .connection : .other
        case 14: return matches("content-length") ? .contentLength : .other
        case 17: return matches("transfer-encoding") ? .transferEncoding : .other
        default: return .other
        }
    }

    // MARK: - Head completion: framing (RFC 9112 §6) and connection semantics

    private mutating func finishHead() throws(HTTPParseError) -> HTTPRequestHead {
        for (kind, value) in self.pendingChecks {
            switch kind {
            case .host:
                self.hostCount += 1
                // RFC 9112 §3.2: a Host with an invalid value is answered 400 as well.
                if !isValidHost(value) { throw .badRequest("invalid Host header field") }
            case .contentLength:
                try self.recordContentLength(value)
            case .transferEncoding:
                self.sawTransferEncoding = true
                for element in listElements(value) {
                    self.transferCodings.append(element.lowercased())
                }
            case .connection:
                // RFC 9110 §7.6.1: a comma-separated list of case-insensitive tokens.
                for element in listElements(value) {
                    let token = element.lowercased()
                    if token == "close" { self.connectionClose = true }
                    if token == "keep-alive" { self.connectionKeepAlive = true }
                }
            case .expect:
                // RFC 9110 §10.1.1: "100-continue" is the only expectation defined.
                if value.lowercased() == "100-continue" { self.expectContinue = true }
            case .other:
                break
            }
        }
        self.pendingChecks = []

        // RFC 9112 §3.2: a server MUST respond 400 to an HTTP/1.1 request without Host, and
        // to any request with more than one Host field.
        if self.hostCount > 1 { throw .badRequest("more than one Host header field") }
        if self.version == .http1_1 && self.hostCount == 0 { throw .badRequest("missing Host header field") }

        var isChunked = false
        var nextState: State = .complete
        if self.sawTransferEncoding {
            // RFC 9112 §6.1: Transfer-Encoding in HTTP/1.0 means faulty framing.
            if self.version == .http1_0 {
                throw .badRequest("Transfer-Encoding is not allowed in HTTP/1.0")
            }
            // RFC 9112 §6.1: a server MAY reject a request with both; we do (smuggling).
            if self.contentLength != nil {
                throw .badRequest("both Transfer-Encoding and Content-Length")
            }
            // RFC 9112 §6.3 item 4: chunked not final → MUST answer 400 and close.
            guard let last = self.transferCodings.last, last == "chunked" else {
                throw .badRequest("chunked is not the final transfer coding")
            }
            // RFC 9112 §6.1: a sender MUST NOT apply chunked more than once.
            if self.transferCodings.filter({ $0 == "chunked" }).count > 1 {
                throw .badRequest("chunked applied more than once")
            }
            // RFC 9112 §6.1: an unknown transfer coding SHOULD get 501.
            if self.transferCodings.count > 1 {
                throw .notImplemented("only the chunked transfer coding is supported")
            }
            isChunked = true
            nextState = .chunkSizeLine
        } else if let length = self.contentLength {
            // RFC 9112 §6.3 item 6: Content-Length gives the body length; refuse before reading.
            if length > self.limits.maxBodyBytes { throw self.bodyTooLarge(self.limits.maxBodyBytes) }
            nextState = length == 0 ? .complete : .fixedBody(remaining: length)
        }
        // RFC 9112 §6.3 item 7: no framing on a request means no body.

        // RFC 9112 §9.3: HTTP/1.1 persists unless "close"; HTTP/1.0 only with "keep-alive".
        let keepAlive: Bool
        if self.version == .http1_1 {
            keepAlive = !self.connectionClose
        } else {
            keepAlive = self.connectionKeepAlive && !self.connectionClose
        }
        // RFC 9110 §10.1.1: a server MUST ignore a 100-continue expectation in HTTP/1.0.
        let expectsContinue = self.expectContinue && self.version == .http1_1

        let head = HTTPRequestHead(
            method: self.method,
            target: self.target,
            version: self.version,
            headers: self.headers,
            keepAlive: keepAlive,
            expectsContinue: expectsContinue,
            contentLength: isChunked ? nil : (self.contentLength ?? 0),
            isChunked: isChunked
        )
        self.head = head
        self.state = nextState
        return head
    }

    /// RFC 9112 §6.3 item 5 / RFC 9110 §8.6: Content-Length = 1*DIGIT. A list of identical
    /// values (several fields or "5, 5") is accepted as that value; anything else is 400.
    private mutating func recordContentLength(_ value: String) throws(HTTPParseError) {
        let elements = value.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
        for element in elements {
            var digits = element[...]
            while let f = digits.first, f == sp || f == htab { digits = digits.dropFirst() }
            while let l = digits.last, l == sp || l == htab { digits = digits.dropLast() }
            guard !digits.isEmpty else { throw .badRequest("invalid Content-Length") }
            var n = 0
            for d in digits {
                guard isDigit(d) else { throw .badRequest("invalid Content-Length") }
                let (times10, o1) = n.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(Int(d - UInt8(ascii: "0")))
                if o1 || o2 { throw .badRequest("Content-Length out of range") }
                n = sum
            }
            if let existing = self.contentLength, existing != n {
                throw .badRequest("conflicting Content-Length values")
            }
            self.contentLength = n
        }
    }

    // MARK: - Chunked (RFC 9112 §7.1)

    /// chunk-size [ chunk-ext ]: 1*HEXDIG, then *( BWS ";" BWS name [ BWS "=" BWS value ] ).
    /// Extensions are validated and ignored.
    private func parseChunkSizeLine(_ start: Int, _ end: Int) throws(HTTPParseError) -> Int {
        var i = start
        var size = 0
        while i < end, let v = hexValue(self.buffer[i]) {
            // Reject before shifting out of range: a size that does not fit is never honoured.
            if size > (Int.max >> 4) { throw .badRequest("chunk size out of range") }
            size = size << 4 | v
            i += 1
        }
        if i == start { throw .badRequest("missing chunk size") }
        while true {
            while i < end && (self.buffer[i] == sp || self.buffer[i] == htab) { i += 1 }
            if i == end { return size }
            guard self.buffer[i] == UInt8(ascii: ";") else { throw .badRequest("malformed chunk size line") }
            i += 1
            while i < end && (self.buffer[i] == sp || self.buffer[i] == htab) { i += 1 }
            let nameStart = i
            while i < end && isTokenChar(self.buffer[i]) { i += 1 }
            if i == nameStart { throw .badRequest("malformed chunk extension") }
            while i < end && (self.buffer[i] == sp || self.buffer[i] == htab) { i += 1 }
            if i < end && self.buffer[i] == UInt8(ascii: "=") {
                i += 1
                while i < end && (self.buffer[i] == sp || self.buffer[i] == htab) { i += 1 }
                if i < end && self.buffer[i] == UInt8(ascii: "\"") {
                    // RFC 9110 §5.6.4 quoted-string with quoted-pair.
                    i += 1
                    var closed = false
                    while i < end {
                        let c = self.buffer[i]
                        if c == UInt8(ascii: "\"") { closed = true; i += 1; break }
                        if c == UInt8(ascii: "\\") {
                            i += 1
                            guard i < end, isQuotedPairChar(self.buffer[i]) else { throw .badRequest("malformed chunk extension") }
                            i += 1
                            continue
                        }
                        guard isQDText(c) else { throw .badRequest("malformed chunk extension") }
                        i += 1
                    }
                    if !closed { throw .badRequest("malformed chunk extension") }
                } else {
                    let valueStart = i
                    while i < end && isTokenChar(self.buffer[i]) { i += 1 }
                    if i == valueStart { throw .badRequest("malformed chunk extension") }
                }
            }
        }
    }
}

/// A request head: everything before the body, plus the framing and connection decisions the
/// transport needs (whether to send `100 Continue`, whether the connection persists).
public struct HTTPRequestHead: Sendable {
    /// The method token as sent.
    public var method: String
    /// The request-target as sent (origin-form, absolute-form, or "*" for OPTIONS).
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    /// Whether the connection may serve another request after this one (RFC 9112 §9.3).
    public var keepAlive: Bool
    /// HTTP/1.1 request with `Expect: 100-continue`: send `HTTPResponseWriter.continueResponse`
    /// before reading the body, unless answering right away.
    public var expectsContinue: Bool
    /// The body length when framed by Content-Length (0 when the request has no body);
    /// nil when chunked.
    public var contentLength: Int?
    /// The body is chunked; its length is known only at the end.
    public var isChunked: Bool
}

/// What the parser produces, in order: for each request a `.head`, then a `.request`.
public enum HTTPParserEvent: Sendable {
    /// A head is complete and valid; its body (if any) follows.
    case head(HTTPRequestHead)
    /// The head and the whole body; `keepAlive` repeats `head.keepAlive`.
    case request(HTTPRequest, keepAlive: Bool)
}

// MARK: - Byte classes

private let cr: UInt8 = 0x0D
private let lf: UInt8 = 0x0A
private let sp: UInt8 = 0x20
private let htab: UInt8 = 0x09

/// tchar (RFC 9110 §5.6.2): "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
/// "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA — as two 64-bit masks (bytes 0-63, 64-127),
/// so the hot loop needs no table lookup behind a lazy global.
@inline(__always) func isTokenChar(_ c: UInt8) -> Bool {
    if c < 64 { return (0x03FF_6CFA_0000_0000 as UInt64) >> UInt64(c) & 1 == 1 }
    if c < 128 { return (0x57FF_FFFF_C7FF_FFFE as UInt64) >> UInt64(c - 64) & 1 == 1 }
    return false
}

@inline(__always) private func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
@inline(__always) private func isAlpha(_ c: UInt8) -> Bool { (c | 0x20) >= UInt8(ascii: "a") && (c | 0x20) <= UInt8(ascii: "z") }

@inline(__always) private func hexValue(_ c: UInt8) -> Int? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return Int(c - UInt8(ascii: "0"))
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return Int(c - UInt8(ascii: "a") + 10)
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return Int(c - UInt8(ascii: "A") + 10)
    default: return nil
    }
}

/// qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text (RFC 9110 §5.6.4).
@inline(__always) private func isQDText(_ c: UInt8) -> Bool {
    c == htab || c == sp || c == 0x21 || (c >= 0x23 && c <= 0x5B) || (c >= 0x5D && c <= 0x7E) || c >= 0x80
}

/// quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text ).
@inline(__always) private func isQuotedPairChar(_ c: UInt8) -> Bool {
    c == htab || c == sp || (c >= 0x21 && c <= 0x7E) || c >= 0x80
}

/// Host = uri-host [ ":" port ] (RFC 9110 §7.2, RFC 3986 §3.2.2). uri-host is an IP literal in
/// brackets (hex digits, ":" and "." — or "v" and unreserved/sub-delims for IPvFuture) or a
/// reg-name of unreserved, pct-encoded and sub-delims characters (no ":"); port is digits only.
/// Empty is allowed (RFC 9112 §3.2, a target without authority). So userinfo ("@"), paths,
/// spaces, non-ASCII, a second ":" (`a:80:80`) and a port that is not digits (`a:port`) are 400.
private func isValidHost(_ value: String) -> Bool {
    let b = Array(value.utf8)
    var i = 0
    if b.first == UInt8(ascii: "[") {
        guard let close = b.firstIndex(of: UInt8(ascii: "]")), close > 1 else { return false }
        for c in b[1..<close] {
            guard isHexDigit(c) || c == UInt8(ascii: ":") || c == UInt8(ascii: ".") || isUnreservedOrSubDelim(c) else { return false }
        }
        i = close + 1
    } else {
        while i < b.count, b[i] != UInt8(ascii: ":") {
            if b[i] == UInt8(ascii: "%") {
                guard i + 2 < b.count, isHexDigit(b[i + 1]), isHexDigit(b[i + 2]) else { return false }
                i += 3
                continue
            }
            guard isUnreservedOrSubDelim(b[i]) else { return false }
            i += 1
        }
    }
    if i == b.count { return true }
    guard b[i] == UInt8(ascii: ":") else { return false }
    return b[(i + 1)...].allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
}

@inline(__always) private func isHexDigit(_ c: UInt8) -> Bool {
    (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "f"))
        || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "F"))
}

/// RFC 3986 unreserved ("-._~", letters, digits) and sub-delims ("!$&'()*+,;=").
@inline(__always) private func isUnreservedOrSubDelim(_ c: UInt8) -> Bool {
    switch c {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): return true
    default: return "-._~!$&'()*+,;=".utf8.contains(c)
    }
}

/// The non-empty elements of a comma-separated list, OWS trimmed (RFC 9110 §5.6.1: empty
/// elements are ignored by recipients).
private func listElements(_ value: String) -> [Substring] {
    value.split(separator: ",").compactMap { element -> Substring? in
        let trimmed = element.drop(while: { $0 == " " || $0 == "\t" })
        var end = trimmed.endIndex
        while end > trimmed.startIndex {
            let before = trimmed.index(before: end)
            if trimmed[before] == " " || trimmed[before] == "\t" { end = before } else { break }
        }
        let result = trimmed[trimmed.startIndex..<end]
        return result.isEmpty ? nil : result
    }
}
