import ConcordDomain
import ConcordHTTP
import ConcordJSON
import ConcordObservability

/// Keys claimed, completed and released (`IdempotencyService` in ConcordDomain; a test double in tests).
protocol IdempotencyKeys: Sendable {
    func claim(owner: [UInt8], accountID: String?, key: String, fingerprint: [UInt8]) throws(DomainError) -> IdempotencyClaim
    func complete(owner: [UInt8], key: String, answer: [UInt8]) throws(DomainError)
    func release(owner: [UInt8], key: String) throws(DomainError)
    /// Stores `answer`, or `fallback` when `answer` does not fit the room of `accountID`'s keys, and
    /// ties the key to `accountID`.
    func complete(owner: [UInt8], key: String, answer: [UInt8], fallback: [UInt8], accountID: String?) throws(DomainError)
}

extension IdempotencyKeys {
    /// Keys without a per-account room (test doubles) keep every answer.
    func complete(owner: [UInt8], key: String, answer: [UInt8], fallback: [UInt8], accountID: String?) throws(DomainError) {
        try self.complete(owner: owner, key: key, answer: answer)
    }
}

extension IdempotencyService: IdempotencyKeys {}

/// Stage 4: `Idempotency-Key` on the routes declared `idempotent`: the first answer to a
/// key is stored per token for 24 h (in the database, so any instance replays it) and sent again,
/// with `Idempotent-Replayed: true`, for a resend of the same request; the same key on a different
/// request is `422 idempotencyKeyReused`; while the first request still runs, `409
/// idempotencyKeyInUse` with `Retry-After`; when its write committed but the server failed before
/// its answer was kept, `409 idempotencyKeyAnswerLost` (those answers: `ErrorMapper`). An answer
/// that did not settle anything — a 5xx or a 429 — is not kept: a resend runs again.
///
/// An answer that issues a token (`accountToken`, `deviceToken`: account and device
/// creation, successors, rotations) is never stored — tokens exist at rest only as hashes — and
/// neither is an answer over the room left for the account's keys. In their place the stage keeps
/// a short `409 idempotencyKeyAnswerLost` naming why (`"reason"`) and the first answer's status and
/// non-secret members (`"accountID"`, `"deviceID"`, `"replaces"`), which a resend gets, replayed.
/// An admin's key that created an account is tied to that account, so it is deleted with it.
/// An answer showing a webhook secret (`"secret"`: a webhook created, a secret rotated) is not
/// stored either: a resend gets `409 idempotencyKeyAnswerLost` with `"reason": "secretNotKept"`,
/// the first answer's status and the webhook's ID.
struct IdempotencyStage: Sendable {
    let keys: any IdempotencyKeys

    /// Runs `next` once per key: replays, refuses or runs and stores, as above. Without the header,
    /// just runs it. `next` gets the request with its key's scope (`RequestContext.idempotency`),
    /// which the handler hands to the service's writes.
    func handle(_ request: RequestContext, accountID: String?, next: (RequestContext) throws(APIError) -> HTTPResponse) throws(APIError) -> HTTPResponse {
        guard let key = request.request.headers[first: "Idempotency-Key"] else { return try next(request) }
        guard StoredAnswer.isValidKey(key) else {
            throw APIError.badRequest("Idempotency-Key must be 1 to 255 visible ASCII characters.", field: "Idempotency-Key")
        }
        let owner = Secrets.tokenHash(request.bearerToken ?? "")
        let fingerprint = StoredAnswer.fingerprint(request.request)
        let claim: IdempotencyClaim
        do {
            claim = try self.keys.claim(owner: owner, accountID: accountID, key: key, fingerprint: fingerprint)
        } catch {
            throw ErrorMapper.apiError(error, request, operation: "idempotency")
        }
        switch claim {
        case .replay(let stored):
            guard var response = StoredAnswer.decode(stored) else { throw APIError.internalError() }
            response.headers.add(name: "Idempotent-Replayed", value: "true")
            return response
        case .reused:
            throw ErrorMapper.apiError(IdempotencyRefusal.reused)
        case .inProgress:
            throw ErrorMapper.apiError(IdempotencyRefusal.inProgress)
        case .answerLost:
            throw ErrorMapper.apiError(IdempotencyRefusal.answerLost)
        case .claimed:
            // Its writes mark the key applied in their own transactions (IdempotencyScope).
            var scoped = request
            scoped.idempotency = IdempotencyScope(owner: owner, key: key)
            let response: HTTPResponse
            do throws(APIError) {
                response = try next(scoped)
            } catch {
                response = error.response
            }
            do {
                if response.status >= 500 || response.status == 429 {
                    try self.keys.release(owner: owner, key: key)
                } else if let issued = StoredAnswer.issuedToken(response) {
                    // Tokens are stored only as hashes: the resend is told so.
                    let kept = StoredAnswer.encode(StoredAnswer.notKept(.tokenNotKept, response, members: issued.members).response)
                    try self.keys.complete(owner: owner, key: key, answer: kept, fallback: kept, accountID: accountID ?? issued.accountID)
                } else if let members = StoredAnswer.issuedSecret(response, request) {
                    // Webhook secrets are kept only sealed under the webhook key: never in a stored answer.
                    let kept = StoredAnswer.encode(StoredAnswer.notKept(.secretNotKept, response, members: members).response)
                    try self.keys.complete(owner: owner, key: key, answer: kept, fallback: kept, accountID: accountID)
                } else {
                    let fallback = StoredAnswer.encode(StoredAnswer.notKept(.answerTooLarge, response, members: []).response)
                    try self.keys.complete(owner: owner, key: key, answer: StoredAnswer.encode(response), fallback: fallback, accountID: accountID)
                }
            } catch {
                // The request itself is done: answer it. The key stays claimed: a resend is `409
                // idempotencyKeyInUse` until `IdempotencyService.abandonedAfter`, then runs again if
                // nothing was applied, else `409 idempotencyKeyAnswerLost`.
                request.logger.warning("idempotency key not stored", metadata: ["error": .string(error.message)])
            }
            return response
        }
    }
}

/// How a first answer is kept: `status\n`, then `name: value\n` per header, a blank line, the body.
/// Headers the writer adds to every response (`Date`, `Content-Length`, `Connection`) are not kept.
enum StoredAnswer {
    static func encode(_ response: HTTPResponse) -> [UInt8] {
        var text = String(response.status) + "\n"
        for (name, value) in response.headers where !Self.unkept.contains(name.lowercased()) {
            text += name + ": " + value + "\n"
        }
        text += "\n"
        return Array(text.utf8) + response.body
    }

    static func decode(_ bytes: [UInt8]) -> HTTPResponse? {
        guard let blank = (0..<max(0, bytes.count - 1)).first(where: { bytes[$0] == 10 && bytes[$0 + 1] == 10 }) else { return nil }
        let lines = String(decoding: bytes[..<blank], as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard let first = lines.first, let status = Int(first), (100...599).contains(status) else { return nil }
        var headers = HTTPHeaders()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            headers.add(name: String(line[..<colon]), value: String(line[line.index(after: colon)...].dropFirst()))
        }
        return HTTPResponse(status: status, headers: headers, body: Array(bytes[(blank + 2)...]))
    }

    /// Members of an answer that are tokens: shown once, never stored.
    static let tokenMembers: Set<String> = ["accountToken", "deviceToken"]

    /// When `response` issues a token: its other top-level members (IDs, in order, as JSON text) and
    /// the account it created, if it names one. nil for any other answer (most are not even parsed).
    static func issuedToken(_ response: HTTPResponse) -> (members: [(key: String, jsonValue: String)], accountID: String?)? {
        guard (200..<300).contains(response.status), Self.mayNameAToken(response.body),
              case .object(let object)? = try? JSONValue.parse(response.body),
              object.members.contains(where: { Self.tokenMembers.contains($0.key) }) else { return nil }
        var members: [(key: String, jsonValue: String)] = []
        for (name, value) in object.members where !Self.tokenMembers.contains(name) && !["name", "message", "reason", "status"].contains(name) {
            var writer = JSONWriter()
            writer.value(value)
            members.append((name, String(decoding: writer.bytes, as: UTF8.self)))
        }
        let accountID = response.status == 201 ? object["accountID"]?.stringValue : nil
        return (members, accountID)
    }

    /// When `response` shows a webhook secret (a webhook's creation, a rotation): the members worth
    /// telling a resend, `"webhookID"` (from the answer, or else the route's path). nil for any other answer.
    static func issuedSecret(_ response: HTTPResponse, _ request: RequestContext) -> [(key: String, jsonValue: String)]? {
        guard (200..<300).contains(response.status), Self.contains(response.body, Self.secretNeedle),
              case .object(let object)? = try? JSONValue.parse(response.body), object["secret"] != nil else { return nil }
        guard let webhookID = object["webhookID"]?.stringValue ?? request.pathParameters["webhookID"] else { return [] }
        return [("webhookID", jsonString(webhookID))]
    }

    private static let secretNeedle = Array("\"secret\"".utf8)

    /// `needle` somewhere in `body` (at most 64 KiB: answers that issue something are small).
    private static func contains(_ body: [UInt8], _ needle: [UInt8]) -> Bool {
        guard body.count >= needle.count, body.count <= 64 * 1024 else { return false }
        for i in 0...(body.count - needle.count) where body[i] == needle[0] {
            if (1..<needle.count).allSatisfy({ body[i + $0] == needle[$0] }) { return true }
        }
        return false
    }

    /// `Token"` somewhere in the body: only such answers are parsed to look for a token member.
    private static func mayNameAToken(_ body: [UInt8]) -> Bool {
        Self.contains(body, Self.tokenNeedle)
    }

    private static let tokenNeedle = Array("Token\"".utf8)

    /// Why a first answer was not kept.
    enum NotKeptReason: String { case tokenNotKept, secretNotKept, answerTooLarge }

    /// The answer kept in place of one that is not: `409 idempotencyKeyAnswerLost`, with the reason,
    /// the first answer's status and the members worth telling (never a token).
    static func notKept(_ reason: NotKeptReason, _ first: HTTPResponse, members: [(key: String, jsonValue: String)]) -> APIError {
        let message: String
        switch reason {
        case .tokenNotKept:
            message = "The request with this Idempotency-Key was applied and issued a token, which is shown once and never kept; it cannot be replayed. Rotate the token, or delete what was created, instead of sending it again."
        case .secretNotKept:
            message = "The request with this Idempotency-Key was applied and showed a webhook secret, which is shown once and never kept; it cannot be replayed. Rotate the webhook's secret instead of sending it again."
        case .answerTooLarge:
            message = "The request with this Idempotency-Key was answered, but its answer did not fit the room for this account's kept answers; read the current state instead of sending it again."
        }
        return APIError(.idempotencyKeyAnswerLost, message,
                        details: [("reason", jsonString(reason.rawValue)), ("status", String(first.status))] + members)
    }

    private static let unkept: Set<String> = ["date", "content-length", "connection", "transfer-encoding"]

    /// 1 to 255 visible ASCII characters (the IETF draft's key is a string; this keeps it printable and bounded).
    static func isValidKey(_ key: String) -> Bool {
        !key.isEmpty && key.utf8.count <= 255 && key.utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }

    /// What makes two requests "the same": method, target (path and query) and body.
    static func fingerprint(_ request: HTTPRequest) -> [UInt8] {
        var hash = SHA256()
        hash.update(request.method.utf8)
        hash.update([0x20])
        hash.update(request.target.utf8)
        hash.update([0x0A])
        hash.update(request.body)
        return hash.finalize()
    }
}
