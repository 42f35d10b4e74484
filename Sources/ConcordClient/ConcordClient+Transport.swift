import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One API call before it is sent.
struct APIRequest: Sendable {
    var method: String
    /// The path, each dynamic segment already percent-encoded.
    var path: String
    var query: [(name: String, value: String)] = []
    var body: Data? = nil
    /// Whether sending it twice does no more than sending it once (for retries after a
    /// connection failure that may have followed delivery).
    var idempotent: Bool
    /// The version for `If-Match`, unquoted (`*`: whatever version exists).
    var ifMatch: String? = nil
    /// Seconds to wait for the answer when longer than the configured timeout (a long-poll).
    var timeout: TimeInterval? = nil
}

extension ConcordClient {
    /// The `Idempotency-Key` the next POST in this task sends instead of a fresh one: the sync
    /// engine's outbox keeps an operation's key across launches, so a resend after a crash is
    /// answered from the server's record instead of running twice.
    @TaskLocal static var idempotencyKey: String?
}

extension ConcordClient {
    /// Sends `request`, retrying per the policy; answers the body and response of a 2xx, throws
    /// `ConcordError` / `ConcordPhotosError` for an error answer and `URLError` for a
    /// connection failure that was not (or no longer) retried.
    ///
    /// Every POST is sent with an `Idempotency-Key` (one per call, kept across its retries): the
    /// server answers a resend from its record of the first answer, so a POST that is not
    /// idempotent by itself is retried after a lost connection too. (The mapping lookups, safe to
    /// repeat as they are, are not recorded by the server.)
    func send(_ request: APIRequest) async throws -> (Data, HTTPURLResponse) {
        var urlRequest = try self.urlRequest(request)
        var idempotent = request.idempotent
        if request.method == "POST" {
            urlRequest.setValue(Self.idempotencyKey ?? UUID().uuidString, forHTTPHeaderField: "Idempotency-Key")
            idempotent = true
        }
        let policy = self.configuration.retryPolicy
        var attempt = 1
        while true {
            let data: Data
            let response: URLResponse
            self.configuration.onRequest?(urlRequest)
            do {
                (data, response) = try await Self.data(self.configuration.session, for: urlRequest)
            } catch let error as URLError {
                guard policy.retries(error, idempotent: idempotent),
                    let wait = policy.delay(beforeRetry: attempt, retryAfter: nil, random: Double.random(in: 0..<1))
                else { throw error }
                try await Self.sleep(seconds: wait)
                attempt += 1
                continue
            }
            guard let http = response as? HTTPURLResponse else {
                throw ConcordError(status: 0, name: "invalidResponse", message: "Not an HTTP response.")
            }
            if (200..<300).contains(http.statusCode) { return (data, http) }
            let retryAfter = http.value(forHTTPHeaderField: "Retry-After").flatMap { RetryAfter.seconds($0) }
            // 503: the server did not act; 409 with Retry-After (idempotencyKeyInUse): the first send
            // of this key still runs. (409 idempotencyKeyAnswerLost has none: it is thrown.)
            if http.statusCode == 503
                || (http.statusCode == 409 && retryAfter != nil && urlRequest.value(forHTTPHeaderField: "Idempotency-Key") != nil),
                let wait = policy.delay(beforeRetry: attempt, retryAfter: retryAfter, random: Double.random(in: 0..<1))
            {
                try await Self.sleep(seconds: wait)
                attempt += 1
                continue
            }
            throw errorFromResponse(status: http.statusCode, body: data, retryAfter: retryAfter)
        }
    }

    /// Sends `request` and decodes a 2xx body as `T`.
    func call<T: Decodable>(_ request: APIRequest, as type: T.Type = T.self) async throws -> T {
        let (data, http) = try await self.send(request)
        do {
            return try Self.makeDecoder().decode(T.self, from: data)
        } catch {
            throw ConcordError(
                status: http.statusCode, name: "invalidResponse",
                message: "Cannot read the answer to \(request.method) \(request.path): \(error)")
        }
    }

    /// A request with `body` encoded as JSON.
    func request(_ method: String, _ path: String, query: [(name: String, value: String)] = [], body: some Encodable, idempotent: Bool, ifMatch: String? = nil) throws -> APIRequest {
        let data = try Self.makeEncoder().encode(body)
        return APIRequest(method: method, path: path, query: query, body: data, idempotent: idempotent, ifMatch: ifMatch)
    }

    private func urlRequest(_ request: APIRequest) throws -> URLRequest {
        var text = self.baseURL.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        text += request.path
        if !request.query.isEmpty {
            text += "?" + request.query.map { "\(percentEncoded($0.name))=\(percentEncoded($0.value))" }.joined(separator: "&")
        }
        guard let url = URL(string: text) else {
            throw ConcordError(status: 0, name: "badRequest", message: "Cannot form a URL from \(text).")
        }
        var r = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData,
                           timeoutInterval: max(self.configuration.timeout, request.timeout ?? 0))
        r.httpMethod = request.method
        r.setValue("application/json", forHTTPHeaderField: "Accept")
        if let token = self.token { r.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        // An entity-tag is quoted (RFC 9110 §8.8.3); `*` ("any current version") is not.
        if let version = request.ifMatch { r.setValue(version == "*" ? "*" : "\"\(version)\"", forHTTPHeaderField: "If-Match") }
        if let body = request.body {
            r.setValue("application/json", forHTTPHeaderField: "Content-Type")
            r.httpBody = body
        }
        return r
    }

    static func sleep(seconds: Double) async throws {
        guard seconds > 0 else { return }
        try await Task.sleep(nanoseconds: UInt64(min(seconds, 86_400) * 1e9))
    }

    /// JSON as the API writes it: RFC 3339 times.
    static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(RFC3339.string(from: date))
        }
        return encoder
    }

    static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = RFC3339.date(from: text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "Not an RFC 3339 time: \(text)")
            }
            return date
        }
        return decoder
    }
}

/// Percent-encodes all but RFC 3986's unreserved characters: path segments (local identifiers
/// carry `/`) and query values (tokens may carry `+`, `=`).
func percentEncoded(_ s: String) -> String {
    s.addingPercentEncoding(withAllowedCharacters: unreserved) ?? s
}

private let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

/// RFC 3339 times in UTC: whole seconds when the date has none, milliseconds otherwise, so the
/// same `Date` always gives the same text (the server compares what it stores as text).
enum RFC3339 {
    static func string(from date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        let whole = date.timeIntervalSince1970.rounded(.down) == date.timeIntervalSince1970
        formatter.formatOptions = whole ? [.withInternetDateTime] : [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    static func date(from text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}

extension ConcordClient {
    /// `session.data(for:)`, except on Linux: there, swift-corelibs-foundation's
    /// `URLSessionTask.cancel()` can trap when it races the task's own completion ("Trying to access
    /// a behaviour for a task that in not in the registry"; seen in about 1 of 7 runs of the
    /// live-sync tests, whose streams are cancelled while a long-poll is held). So a cancelled call
    /// returns at once with `CancellationError` and its request is never cancelled: it finishes by
    /// itself (a held long-poll at the end of its wait) and its answer is dropped.
    static func data(_ session: URLSession, for request: URLRequest) async throws -> (Data, URLResponse) {
        #if canImport(FoundationNetworking)
        let answer = AnswerOnce()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, URLResponse), any Error>) in
                guard answer.wait(continuation) else { return }   // cancelled before it started
                session.dataTask(with: request) { data, response, error in
                    if let error {
                        answer.finish(.failure(error))
                    } else if let response {
                        answer.finish(.success((data ?? Data(), response)))
                    } else {
                        answer.finish(.failure(URLError(.badServerResponse)))
                    }
                }.resume()
            }
        } onCancel: {
            answer.finish(.failure(CancellationError()))
        }
        #else
        return try await session.data(for: request)
        #endif
    }
}

#if canImport(FoundationNetworking)
/// Resumes a continuation once: with the request's answer or with the caller's cancellation,
/// whichever comes first (the other is dropped).
private final class AnswerOnce: @unchecked Sendable {
    // @unchecked Sendable: every var is only touched while holding `lock`.
    private let lock = NSLock()
    private var continuation: CheckedContinuation<(Data, URLResponse), any Error>?
    private var early: Result<(Data, URLResponse), any Error>?
    private var done = false

    /// Keeps the continuation; false (and resumed) when the answer came first (a cancellation).
    func wait(_ continuation: CheckedContinuation<(Data, URLResponse), any Error>) -> Bool {
        self.lock.lock()
        if let early = self.early {
            self.done = true
            self.lock.unlock()
            continuation.resume(with: early)
            return false
        }
        self.continuation = continuation
        self.lock.unlock()
        return true
    }

    func finish(_ result: Result<(Data, URLResponse), any Error>) {
        self.lock.lock()
        guard !self.done else { self.lock.unlock(); return }
        guard let continuation = self.continuation else {
            if self.early == nil { self.early = result }
            self.lock.unlock()
            return
        }
        self.done = true
        self.continuation = nil
        self.lock.unlock()
        continuation.resume(with: result)
    }
}
#endif
