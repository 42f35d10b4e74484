import CCurl
import Dispatch
import Glibc

/// One POST to a webhook.
public struct DeliveryRequest: Sendable {
    public var url: WebhookURL
    /// Sent as given (name, value), after curl's own `Host`, `Content-Length` and `User-Agent`. A
    /// name or value holding CR or LF is dropped.
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// The whole attempt: connecting, TLS, sending and the answer's head (and its bounded body).
    public var timeoutSeconds: Int
    /// Connecting, TLS handshake included; at most 5.
    public var connectTimeoutSeconds: Int

    public init(url: WebhookURL, headers: [(String, String)], body: [UInt8], timeoutSeconds: Int,
                connectTimeoutSeconds: Int = 5) {
        self.url = url
        self.headers = headers
        self.body = body
        self.timeoutSeconds = timeoutSeconds
        self.connectTimeoutSeconds = connectTimeoutSeconds
    }
}

/// Why an attempt failed before a usable answer arrived (the names the deliveries log shows).
public enum DeliveryError: String, Sendable {
    case timeout, connectionFailed, dnsFailure, forbiddenAddress, tlsFailure, invalidResponse
}

/// How an attempt ended. It succeeded when `error` is nil and `status` is 2xx.
public struct DeliveryResult: Sendable {
    /// The answer's status, when its head was read (also with `invalidResponse` for a head that grew
    /// past the limit after its status line).
    public var status: Int?
    public var error: DeliveryError?
    /// From the answer's `Retry-After` (seconds, or an HTTP-date made relative), never negative and
    /// not capped here.
    public var retryAfterSeconds: Int?
    /// From the start of `send` (the lookup included) to its end.
    public var durationMs: Int
    /// curl's own words on a failure, for the server's log only: it may name addresses, which the
    /// API never shows.
    public var detail: String?

    public var succeeded: Bool { self.error == nil && (200..<300).contains(self.status ?? 0) }
}

/// Sends webhook POSTs with libcurl, connecting only to addresses the policy allows.
///
/// Each `send` resolves the host itself, keeps the allowed addresses (none: `forbiddenAddress`,
/// nothing connected), and hands exactly those to curl (`CURLOPT_RESOLVE`), so curl makes no lookup
/// of its own; an open-socket callback checks every address curl connects to once more. TLS (SNI and
/// the certificate checked against the URL's host) and HTTP then run on that connection. Redirects
/// are not followed, only http and https are spoken, proxies and the environment's proxy settings
/// are ignored, and HTTP/1.1 is the only version.
///
/// Bounds: the lookup and the connection (TCP and the TLS handshake: curl's connect timeout covers
/// both) share `connectTimeoutSeconds` (at most 5); everything, the lookup included, ends within
/// `timeoutSeconds` (curl's total timeout). The answer's head may be 16 KiB, its body is read to
/// 64 KiB and dropped. Once a complete head is in, what happens to the body (cut at the limit, a
/// timeout, a reset) no longer matters: the status decides.
///
/// Blocking; safe to call from many threads at once (a curl handle per call). curl may write to a
/// socket whose peer has gone, so the process must ignore SIGPIPE (the server does).
public final class WebhookSender: Sendable {
    public static let maxHeadBytes = 16 * 1024
    public static let maxBodyBytes = 64 * 1024
    public static let maxConnectSeconds = 5

    public let policy: DestinationPolicy
    public let userAgent: String

    public init(policy: DestinationPolicy, userAgent: String) {
        _ = curlGlobalInit
        self.policy = policy
        self.userAgent = userAgent
    }

    public func send(_ request: DeliveryRequest) -> DeliveryResult {
        let started = DispatchTime.now().uptimeNanoseconds
        let elapsedMs = { Int((DispatchTime.now().uptimeNanoseconds - started) / 1_000_000) }
        func finish(_ status: Int?, _ error: DeliveryError?, retryAfter: Int? = nil, detail: String? = nil) -> DeliveryResult {
            DeliveryResult(status: status, error: error, retryAfterSeconds: retryAfter, durationMs: elapsedMs(), detail: detail)
        }
        let url = request.url
        let totalMs = max(1, request.timeoutSeconds) * 1000
        let connectMs = min(max(1, request.connectTimeoutSeconds), WebhookSender.maxConnectSeconds, max(1, request.timeoutSeconds)) * 1000

        // The configuration may have changed since the URL was accepted: plain http to a host no
        // longer listed is refused like a forbidden address.
        guard self.policy.allowsScheme(of: url) else { return finish(nil, .forbiddenAddress, detail: "http to a host not listed") }

        let lookupHost = url.ipLiteral?.description ?? url.host
        guard let resolved = Resolver.addresses(of: lookupHost, timeout: Double(connectMs) / 1000), !resolved.isEmpty else {
            return finish(nil, .dnsFailure, detail: "no address for the host")
        }
        let allowed = resolved.filter { self.policy.allows($0, forHost: url.host) }
        guard !allowed.isEmpty else { return finish(nil, .forbiddenAddress, detail: "no allowed address among \(resolved)") }

        let spentMs = elapsedMs()
        guard spentMs < connectMs else { return finish(nil, .timeout, detail: "the lookup used the connect time") }
        let transfer = Transfer(policy: self.policy, host: url.host, checked: Set(allowed))
        let code = transfer.perform(
            url: url, allowed: allowed, request: request, userAgent: self.userAgent,
            connectMs: connectMs - spentMs, totalMs: max(1, totalMs - spentMs))
        let retryAfter = transfer.retryAfter.flatMap { RetryAfter.seconds($0, now: Int(time(nil))) }

        if transfer.headTooLarge { return finish(transfer.status, .invalidResponse, detail: "answer head over \(WebhookSender.maxHeadBytes) bytes") }
        if transfer.notHTTP1 { return finish(nil, .invalidResponse, detail: "answer not HTTP/1.x") }
        if code == CURLE_OK || transfer.finalHeadComplete {
            // A complete head decides; the body's fate (cut at the limit, timed out, reset) does not.
            guard let status = transfer.status else { return finish(nil, .invalidResponse, detail: "no status") }
            return finish(status, nil, retryAfter: retryAfter)
        }
        let detail = transfer.errorText.isEmpty ? String(cString: curl_easy_strerror(code)) : transfer.errorText
        if transfer.refusedAddress && code == CURLE_COULDNT_CONNECT {
            return finish(nil, .forbiddenAddress, detail: detail)
        }
        return finish(nil, WebhookSender.classify(code), retryAfter: retryAfter, detail: detail)
    }

    /// curl's failure codes as the log's error names.
    static func classify(_ code: CURLcode) -> DeliveryError {
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return .timeout
        case CURLE_COULDNT_RESOLVE_HOST:
            return .dnsFailure
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
             CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
             CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CRL_BADFILE,
             CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS,
             CURLE_SSL_CLIENTCERT, CURLE_USE_SSL_FAILED:
            return .tlsFailure
        case CURLE_WEIRD_SERVER_REPLY, CURLE_UNSUPPORTED_PROTOCOL, CURLE_HTTP2, CURLE_HTTP2_STREAM,
             CURLE_HTTP3, CURLE_BAD_CONTENT_ENCODING, CURLE_RANGE_ERROR:
            return .invalidResponse
        default:
            // Refused, reset, send and receive errors, an empty answer, an answer cut short.
            return .connectionFailed
        }
    }
}

/// libcurl's process-wide setup, run once before the first handle (it is not thread-safe itself).
private let curlGlobalInit: Void = {
    let code = curl_global_init(ccurl_GLOBAL_DEFAULT)
    precondition(code == CURLE_OK, "curl_global_init failed: \(code)")
}()

/// One attempt's curl handle and what its callbacks saw. Lives on the calling thread for the length
/// of `perform`; the callbacks run on that thread, inside `curl_easy_perform`.
final class Transfer {
    let policy: DestinationPolicy
    let host: String
    let checked: Set<IPAddress>

    private(set) var headBytes = 0
    private(set) var headTooLarge = false
    private(set) var notHTTP1 = false
    /// The status of the latest status line (a final answer's, once one came).
    private(set) var status: Int?
    private(set) var inFinalAnswer = false
    /// The blank line ending a final (non-1xx) answer's head was read.
    private(set) var finalHeadComplete = false
    private(set) var retryAfter: String?
    private(set) var bodyBytes = 0
    /// The open-socket callback refused an address curl wanted to connect to.
    fileprivate(set) var refusedAddress = false
    private(set) var errorText = ""

    init(policy: DestinationPolicy, host: String, checked: Set<IPAddress>) {
        self.policy = policy
        self.host = host
        self.checked = checked
    }

    func perform(url: WebhookURL, allowed: [IPAddress], request: DeliveryRequest, userAgent: String,
                 connectMs: Int, totalMs: Int) -> CURLcode {
        guard let handle = curl_easy_init() else { return CURLE_FAILED_INIT }
        defer { curl_easy_cleanup(handle) }
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(ccurl_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(ccurl_ERROR_SIZE))
        defer {
            self.errorText = String(cString: errorBuffer)
            errorBuffer.deallocate()
        }

        // The host without a final dot, so curl's resolve entry and certificate check match it.
        var name = url.host
        if url.ipLiteral == nil && name.hasSuffix(".") { name.removeLast() }
        let hostForURL = url.ipLiteral?.bracketed ?? name
        var headerList: UnsafeMutablePointer<curl_slist>?
        var resolveList: UnsafeMutablePointer<curl_slist>?
        defer {
            curl_slist_free_all(headerList)
            curl_slist_free_all(resolveList)
        }
        for (field, value) in request.headers {
            guard !(field + value).contains(where: { $0 == "\r" || $0 == "\n" }), !field.isEmpty else { continue }
            headerList = curl_slist_append(headerList, "\(field): \(value)")
        }
        // No `Expect: 100-continue` pause; no default form content type.
        headerList = curl_slist_append(headerList, "Expect:")
        if !request.headers.contains(where: { $0.0.lowercased() == "content-type" }) {
            headerList = curl_slist_append(headerList, "Content-Type:")
        }
        if url.ipLiteral == nil {
            // The checked addresses, and only they, for this host and port: curl makes no lookup.
            let entry = "\(name):\(url.port):" + allowed.map(\.bracketed).joined(separator: ",")
            resolveList = curl_slist_append(resolveList, entry)
        }

        let context = Unmanaged.passUnretained(self).toOpaque()
        var code = CURLE_OK
        func set(_ result: CURLcode) { if code == CURLE_OK { code = result } }
        set(ccurl_setopt_string(handle, CURLOPT_URL, "\(url.scheme)://\(hostForURL):\(url.port)\(url.target)"))
        set(ccurl_limit_protocols_to_http(handle))
        set(ccurl_setopt_long(handle, CURLOPT_PATH_AS_IS, 1))
        set(ccurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
        set(ccurl_setopt_string(handle, CURLOPT_PROXY, ""))
        set(ccurl_setopt_string(handle, CURLOPT_NOPROXY, "*"))
        set(ccurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        set(ccurl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1))
        set(ccurl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2))
        set(ccurl_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1)))
        set(ccurl_setopt_long(handle, CURLOPT_HTTP09_ALLOWED, 0))
        set(ccurl_setopt_long(handle, CURLOPT_FORBID_REUSE, 1))
        set(ccurl_setopt_long(handle, CURLOPT_FRESH_CONNECT, 1))
        set(ccurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, connectMs))
        set(ccurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, totalMs))
        set(ccurl_setopt_string(handle, CURLOPT_USERAGENT, userAgent))
        set(ccurl_setopt_list(handle, CURLOPT_HTTPHEADER, headerList))
        if resolveList != nil { set(ccurl_setopt_list(handle, CURLOPT_RESOLVE, resolveList)) }
        set(ccurl_setopt_long(handle, CURLOPT_POST, 1))
        set(ccurl_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)))
        // COPYPOSTFIELDS copies (POSTFIELDSIZE first, so the copy is that long); never a null pointer.
        let body = request.body.isEmpty ? [0] : request.body
        set(body.withUnsafeBytes { ccurl_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: $0.baseAddress!)) })
        set(ccurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer))
        set(ccurl_setopt_data_callback(handle, CURLOPT_HEADERFUNCTION, transferHeaderCallback))
        set(ccurl_setopt_pointer(handle, CURLOPT_HEADERDATA, context))
        set(ccurl_setopt_data_callback(handle, CURLOPT_WRITEFUNCTION, transferBodyCallback))
        set(ccurl_setopt_pointer(handle, CURLOPT_WRITEDATA, context))
        set(ccurl_setopt_opensocket_callback(handle, transferOpenSocketCallback))
        set(ccurl_setopt_pointer(handle, CURLOPT_OPENSOCKETDATA, context))
        guard code == CURLE_OK else { return code }
        return withExtendedLifetime(self) { curl_easy_perform(handle) }
    }

    /// One line of the answer's head (curl hands them whole, CRLF included). False aborts.
    func headerLine(_ line: UnsafeRawBufferPointer) -> Bool {
        self.headBytes += line.count
        guard self.headBytes <= WebhookSender.maxHeadBytes else {
            self.headTooLarge = true
            return false
        }
        if line.starts(with: "HTTP/".utf8) {
            guard line.starts(with: "HTTP/1.".utf8) else {
                self.notHTTP1 = true
                return false
            }
            // "HTTP/1.1 200 …": the three digits after the first space.
            let digits = line.dropFirst(9).prefix(3)
            guard line.count >= 12, line[8] == UInt8(ascii: " "), digits.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                self.notHTTP1 = true
                return false
            }
            let status = digits.reduce(0) { $0 * 10 + Int($1 - 48) }
            self.status = status
            self.inFinalAnswer = status >= 200
            self.retryAfter = nil
            return true
        }
        if line.count <= 2 && line.allSatisfy({ $0 == 13 || $0 == 10 }) {
            if self.inFinalAnswer { self.finalHeadComplete = true }
            return true
        }
        let text = String(decoding: line, as: UTF8.self)
        if let colon = text.firstIndex(of: ":"), text[..<colon].lowercased() == "retry-after" {
            self.retryAfter = String(text[text.index(after: colon)...]).trimmingLineEnd.trimmedOfSpaces
        }
        return true
    }

    /// A piece of the answer's body: counted, never kept. False (past the limit) stops reading.
    func receivedBody(_ count: Int) -> Bool {
        self.bodyBytes += count
        return self.bodyBytes <= WebhookSender.maxBodyBytes
    }

    /// Where curl is about to connect: only to an address checked for this attempt, and allowed.
    func mayConnect(to address: IPAddress) -> Bool {
        let allowed = self.checked.contains(address) && self.policy.allows(address, forHost: self.host)
        if !allowed { self.refusedAddress = true }
        return allowed
    }
}

extension String {
    var trimmingLineEnd: String {
        var result = self
        while let last = result.last, last == "\n" || last == "\r" || last == "\r\n" { result.removeLast() }
        return result
    }
}

private func transfer(_ context: UnsafeMutableRawPointer?) -> Transfer {
    Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
}

private let transferHeaderCallback: ccurl_data_callback = { buffer, size, count, context in
    let length = size * count
    let line = UnsafeRawBufferPointer(start: buffer, count: length)
    return transfer(context).headerLine(line) ? length : 0
}

private let transferBodyCallback: ccurl_data_callback = { _, size, count, context in
    let length = size * count
    return transfer(context).receivedBody(length) ? length : 0
}

private let transferOpenSocketCallback: curl_opensocket_callback = { context, purpose, address in
    guard let address, purpose == CURLSOCKTYPE_IPCXN else { return ccurl_SOCKET_BAD }
    let offset = MemoryLayout<curl_sockaddr>.offset(of: \curl_sockaddr.addr)!
    let sockaddrPointer = UnsafeRawPointer(address).advanced(by: offset).assumingMemoryBound(to: sockaddr.self)
    guard let ip = IPAddress(sockaddr: sockaddrPointer), transfer(context).mayConnect(to: ip) else {
        transfer(context).refusedAddress = true
        return ccurl_SOCKET_BAD
    }
    return socket(address.pointee.family, address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue), address.pointee.protocol)
}
