/// Serialises responses (RFC 9112 §4): status line, the app's headers, then the framing
/// headers the writer owns (`Date`, `Content-Length`, `Connection`), then the body — all in
/// one contiguous buffer so the transport needs one write.
public enum HTTPResponseWriter {
    /// `HTTP/1.1 100 Continue` (RFC 9110 §15.2.1), sent before reading an expected body.
    public static let continueResponse: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// Appends `response` to `buffer`.
    ///
    /// - `keepAlive`: false adds `Connection: close` (the transport closes after writing).
    /// - `requestVersion`: when answering an HTTP/1.0 request with `keepAlive`, the writer adds
    ///   `Connection: keep-alive`, because HTTP/1.0 persistence must be confirmed (RFC 9112 §9.3
    ///   and Appendix C.2.2). Defaults to HTTP/1.1, where persistence is the default.
    /// - `isHead`: the body is not sent, but `Content-Length` still announces the length a GET
    ///   would have (RFC 9110 §9.3.2).
    /// - `date`: the IMF-fixdate for `Date` (see `HTTPDate`), usually cached per second.
    ///
    /// The writer owns framing: app-supplied `Content-Length`, `Transfer-Encoding`, `Date` and
    /// `Connection` fields are dropped. Fields with an invalid name are dropped, and CR, LF,
    /// NUL and other control characters in values become spaces, so nothing the app puts in
    /// a header can split the response (RFC 9110 §5.5).
    /// 1xx, 204 and 304 get neither `Content-Length` nor a body (RFC 9110 §8.6, §15.3.5,
    /// §15.4.5; RFC 9112 §6.3 item 1).
    /// Whether `write` sends the body of a response with `status` (an out-of-range status is
    /// written as 500, with its body): not for HEAD, 1xx, 204 or 304.
    public static func sendsBody(status: Int, isHead: Bool) -> Bool {
        let status = (100...999).contains(status) ? status : 500
        return !isHead && !(100..<200).contains(status) && status != 204 && status != 304
    }

    public static func write(
        _ response: HTTPResponse,
        keepAlive: Bool,
        requestVersion: HTTPVersion = .http1_1,
        isHead: Bool,
        date: String,
        into buffer: inout [UInt8]
    ) {
        let status = (100...999).contains(response.status) ? response.status : 500
        let bodyless = !Self.sendsBody(status: status, isHead: false)   // no Content-Length either
        let sendBody = !bodyless && !isHead

        buffer.reserveCapacity(buffer.count + 128 + response.headers.fields.count * 48 + (sendBody ? response.body.count : 0))
        buffer.append(contentsOf: "HTTP/1.1 ".utf8)
        appendStatusCode(status, to: &buffer)
        buffer.append(sp)
        appendUTF8(reasonPhrase(status), to: &buffer)
        buffer.append(contentsOf: crlf)

        for field in response.headers.fields {
            guard isValidFieldName(field.name), !isWriterOwned(field.name) else { continue }
            appendUTF8(field.name, to: &buffer)
            buffer.append(contentsOf: ": ".utf8)
            appendNeutralisedValue(field.value, to: &buffer)
            buffer.append(contentsOf: crlf)
        }

        buffer.append(contentsOf: "Date: ".utf8)
        appendNeutralisedValue(date, to: &buffer)
        buffer.append(contentsOf: crlf)

        if !bodyless {
            buffer.append(contentsOf: "Content-Length: ".utf8)
            appendDecimal(response.body.count, to: &buffer)
            buffer.append(contentsOf: crlf)
        }
        if !keepAlive {
            buffer.append(contentsOf: "Connection: close\r\n".utf8)
        } else if requestVersion == .http1_0 {
            buffer.append(contentsOf: "Connection: keep-alive\r\n".utf8)
        }
        buffer.append(contentsOf: crlf)
        if sendBody {
            buffer.append(contentsOf: response.body)
        }
    }

    /// The response as a new buffer; see `write(_:keepAlive:requestVersion:isHead:date:into:)`.
    public static func serialize(
        _ response: HTTPResponse, keepAlive: Bool, requestVersion: HTTPVersion = .http1_1, isHead: Bool, date: String
    ) -> [UInt8] {
        var buffer: [UInt8] = []
        self.write(response, keepAlive: keepAlive, requestVersion: requestVersion, isHead: isHead, date: date, into: &buffer)
        return buffer
    }

    /// The standard reason phrase (RFC 9110 §15, plus 429/431 from RFC 6585); "Unknown" else.
    /// Clients must ignore it (RFC 9112 §4), so this only helps humans reading traces.
    public static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 101: return "Switching Protocols"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 203: return "Non-Authoritative Information"
        case 204: return "No Content"
        case 205: return "Reset Content"
        case 206: return "Partial Content"
        case 300: return "Multiple Choices"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 402: return "Payment Required"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 406: return "Not Acceptable"
        case 407: return "Proxy Authentication Required"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 411: return "Length Required"
        case 412: return "Precondition Failed"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 416: return "Range Not Satisfiable"
        case 417: return "Expectation Failed"
        case 421: return "Misdirected Request"
        case 422: return "Unprocessable Content"
        case 426: return "Upgrade Required"
        case 428: return "Precondition Required"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default: return "Unknown"
        }
    }
}

private let sp: UInt8 = 0x20
private let crlf: [UInt8] = [0x0D, 0x0A]

/// The bytes of `string` in one copy.
private func appendUTF8(_ string: String, to buffer: inout [UInt8]) {
    var string = string
    string.withUTF8 { buffer.append(contentsOf: $0) }
}

/// A non-negative count in decimal, without building a String.
private func appendDecimal(_ value: Int, to buffer: inout [UInt8]) {
    var v = UInt(max(0, value))
    var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)   // 24 bytes ≥ the 20 digits of UInt64.max
    withUnsafeMutableBytes(of: &digits) { raw in
        var i = raw.count
        repeat {
            i -= 1
            raw[i] = UInt8(ascii: "0") &+ UInt8(v % 10)
            v /= 10
        } while v > 0
        buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[i...]))
    }
}

private func appendStatusCode(_ status: Int, to buffer: inout [UInt8]) {
    buffer.append(UInt8(ascii: "0") + UInt8(status / 100))
    buffer.append(UInt8(ascii: "0") + UInt8(status / 10 % 10))
    buffer.append(UInt8(ascii: "0") + UInt8(status % 10))
}

/// Control characters (except HTAB) become spaces: a CR or LF here would end the field early
/// and let the rest be read as new fields or a new response.
private func appendNeutralisedValue(_ value: String, to buffer: inout [UInt8]) {
    var value = value
    // Contiguous UTF-8 (native strings already are): check for a control byte first, and
    // when there is none — nearly always — copy the value in one go.
    value.withUTF8 { bytes in
        var clean = true
        for byte in bytes where (byte < 0x20 && byte != 0x09) || byte == 0x7F {
            clean = false
            break
        }
        if clean {
            buffer.append(contentsOf: bytes)
            return
        }
        for byte in bytes {
            buffer.append((byte < 0x20 && byte != 0x09) || byte == 0x7F ? sp : byte)
        }
    }
}

/// field-name = token (RFC 9110 §5.1).
private func isValidFieldName(_ name: String) -> Bool {
    var name = name
    return name.withUTF8 { bytes in
        if bytes.isEmpty { return false }
        for c in bytes where !isTokenChar(c) { return false }
        return true
    }
}

private func isWriterOwned(_ name: String) -> Bool {
    switch name.utf8.count {
    case 4, 10, 14, 17:
        let lower = name.lowercased()
        return lower == "date" || lower == "connection" || lower == "content-length" || lower == "transfer-encoding"
    default:
        return false
    }
}
