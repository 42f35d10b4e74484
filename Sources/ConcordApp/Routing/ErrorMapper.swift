import ConcordDomain
import ConcordJSON

/// Every error the app itself answers with — not the domain's, whose names are `DomainError.name` —
/// with its status: the one table of names. Build answers with `APIError(_:_:)`.
enum AppErrorName: String, CaseIterable, Sendable {
    case badRequest, unauthorized, forbidden, notFound, methodNotAllowed, payloadTooLarge
    case idempotencyKeyInUse, idempotencyKeyAnswerLost, idempotencyKeyReused, tooManyRequests
    case internalError, notImplemented, unavailable

    var status: Int {
        switch self {
        case .badRequest: 400
        case .unauthorized: 401
        case .forbidden: 403
        case .notFound: 404
        case .methodNotAllowed: 405
        case .idempotencyKeyInUse, .idempotencyKeyAnswerLost: 409
        case .payloadTooLarge: 413
        case .idempotencyKeyReused: 422
        case .tooManyRequests: 429
        case .internalError: 500
        case .notImplemented: 501
        case .unavailable: 503
        }
    }
}

/// Why a request's `Idempotency-Key` does not let it run (`IdempotencyClaim`'s refusals).
enum IdempotencyRefusal: Sendable {
    case reused, inProgress, answerLost
}

extension APIError {
    /// An answer named in `AppErrorName`.
    init(_ name: AppErrorName, _ message: String, details: [(key: String, jsonValue: String)] = [], headers: [(name: String, value: String)] = []) {
        self.init(status: name.status, name: name.rawValue, message: message, details: details, headers: headers)
    }
}

/// The one place errors become the contract's answers (the API; after Hummingbird's
/// `HTTPResponseError`): `APIError` as it is, `DomainError` by its name and the status `status(_:)` gives it, the
/// idempotency refusals, and anything else a logged `500 internalError` whose text never reaches
/// the client.
enum ErrorMapper {
    /// Whatever a stage or handler threw, as an answer; `operation` names it in the log line.
    static func apiError(_ error: any Error, _ request: RequestContext, operation: String) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case let error as DomainError:
            if case .internalError(let message) = error { Self.logFailure(request, operation, message) }
            return APIError(error)
        default:
            Self.logFailure(request, operation, String(describing: error))
            return APIError.internalError()
        }
    }

    /// The status of a domain error that is the whole answer: the domain names what went wrong,
    /// this table alone says what HTTP makes of it.
    static func status(_ error: DomainError) -> Int {
        switch error {
        case .badRequest, .invalidChangeToken: 400
        case .unauthorized: 401
        case .forbidden, .accessUserDenied, .quotaExceeded: 403
        case .notFound: 404
        case .fingerprintMismatch, .deviceAlreadyReplaced, .noPredecessor, .tooManyUploads, .eventSuperseded, .webhookDisabled: 409
        case .persistentChangeTokenExpired: 410
        case .versionMismatch, .changeTokenMismatch: 412
        case .batchTooLarge: 413
        case .unprocessable, .forbiddenDestination: 422
        case .tooManyRequests: 429
        case .internalError: 500
        case .unavailable: 503
        case .insufficientStorage: 507
        }
    }

    /// A refused `Idempotency-Key`.
    static func apiError(_ refusal: IdempotencyRefusal) -> APIError {
        switch refusal {
        case .reused:
            APIError(.idempotencyKeyReused, "This Idempotency-Key was first used for a different request.",
                     details: [("field", jsonString("Idempotency-Key"))])
        case .inProgress:
            APIError(.idempotencyKeyInUse, "A request with this Idempotency-Key is still running; retry later.", headers: [("Retry-After", "1")])
        case .answerLost:
            APIError(.idempotencyKeyAnswerLost,
                     "The request with this Idempotency-Key was applied, but the server failed before its answer was kept; read the current state instead of sending it again.")
        }
    }

    private static func logFailure(_ request: RequestContext, _ operation: String, _ message: String) {
        request.logger.error("storage failed", metadata: [
            "route": .string(request.routePattern), "operation": .string(operation), "error": .string(message),
        ])
    }
}

extension APIError {
    /// The answer for a domain error that is the whole answer: status, name, message, `"domain"`/
    /// `"code"` for errors PhotoKit defines, then the error's details.
    public init(_ error: DomainError) {
        self.init(status: ErrorMapper.status(error), name: error.name, message: error.message)
        if let code = error.photosErrorCode {
            self.details.append(("domain", jsonString(DomainError.photosErrorDomain)))
            self.details.append(("code", String(code)))
        }
        for detail in error.details {
            var writer = JSONWriter(capacity: 64)
            Codec.write(detail.value, into: &writer)
            self.details.append((detail.key, String(decoding: writer.bytes, as: UTF8.self)))
        }
        if case .unavailable = error { self.headers.append(("Retry-After", "1")) }
        if case .insufficientStorage = error { self.headers.append(("Retry-After", "30")) }
        if case .tooManyRequests(let seconds) = error { self.headers.append(("Retry-After", String(max(1, seconds)))) }
    }
}
