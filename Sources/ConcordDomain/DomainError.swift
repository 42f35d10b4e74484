/// A value carried in an error's details; the app renders it as JSON.
public indirect enum DetailValue: Sendable, Equatable {
    case string(String)
    case int(Int)
    case bool(Bool)
    case array([DetailValue])
    case object([DetailField])
    case null
}

/// One named detail of an error object, kept in order.
public struct DetailField: Sendable, Equatable {
    public var key: String
    public var value: DetailValue
    public init(_ key: String, _ value: DetailValue) {
        self.key = key
        self.value = value
    }
}

/// Every failure of the domain. Each case is one contract name; the domain knows no HTTP: the
/// app's `ErrorMapper` decides each case's status, and renders `name`, `message`,
/// `photosErrorCode` and `details` as the answer.
public enum DomainError: Error, Sendable, Equatable {
    /// A missing, mistyped or out-of-bounds value; `field` names it when known.
    case badRequest(message: String, field: String?)
    /// No or unknown token (the app decides this; listed so the mapping is total).
    case unauthorized
    /// A valid token of the wrong kind.
    case forbidden
    /// No such thing visible to the caller.
    case notFound(message: String)
    /// A link whose object does not have the record's type and fingerprint.
    case fingerprintMismatch(message: String)
    /// Well-formed but refers to something missing; details name it.
    case unprocessable(message: String, details: [DetailField])
    /// A change token that is malformed, forged, or from another device or account.
    case invalidChangeToken
    /// (PHPhotosError 3105) The token is older than the history kept.
    case persistentChangeTokenExpired
    /// (PHPhotosError 3311) The device's authorization status is `denied`.
    case accessUserDenied
    /// More items than `maxBatch`.
    case batchTooLarge(maxBatch: Int)
    /// `If-Match` did not match; carries the current version (journals).
    case versionMismatch(currentVersion: String?)
    /// `versionMismatch` on a library write: `If-Match` did not name the device's current
    /// library change token; carries that token (`"changeToken"` in place of `"version"`).
    case changeTokenMismatch(currentChangeToken: String)
    /// The account would pass one of its quotas (`quota` names it); nothing was stored.
    case quotaExceeded(quota: String, limit: Int)
    /// The device has a successor already; carries its ID.
    case deviceAlreadyReplaced(replacedBy: String)
    /// `POST /v1/library/adopt` by a device with no predecessor (or whose predecessor was deleted).
    case noPredecessor
    /// The device has this many open uploads in parts already.
    case tooManyUploads(limit: Int)
    /// Storage is busy or unreachable; retry later.
    case unavailable(message: String)
    /// Storage cannot take the write (disk full, read-only, I/O error); nothing of the
    /// request was stored. Retry once space is freed.
    case insufficientStorage(message: String)
    /// A bug or an unexpected storage failure; the message is for logs, not clients.
    case internalError(message: String)
    /// 422: a webhook URL whose destination may not be called (`reason`: `insecureScheme`,
    /// `unresolvable`, `forbiddenAddress`); the field is always `url`.
    case forbiddenDestination(reason: String)
    /// 409: a newer event of the same feed exists; redelivering this one would send a stale token.
    case eventSuperseded(supersededBy: String)
    /// 409: the webhook is disabled.
    case webhookDisabled
    /// 429: too soon (a ping within a second of the previous one); retry after that many seconds.
    case tooManyRequests(retryAfter: Int)

    /// The contract name (`"badRequest"`, ...).
    public var name: String {
        switch self {
        case .badRequest: return "badRequest"
        case .unauthorized: return "unauthorized"
        case .forbidden: return "forbidden"
        case .notFound: return "notFound"
        case .fingerprintMismatch: return "fingerprintMismatch"
        case .unprocessable: return "unprocessable"
        case .invalidChangeToken: return "invalidChangeToken"
        case .persistentChangeTokenExpired: return "persistentChangeTokenExpired"
        case .accessUserDenied: return "accessUserDenied"
        case .batchTooLarge: return "batchTooLarge"
        case .versionMismatch: return "versionMismatch"
        case .changeTokenMismatch: return "versionMismatch"
        case .unavailable: return "unavailable"
        case .quotaExceeded: return "quotaExceeded"
        case .deviceAlreadyReplaced: return "deviceAlreadyReplaced"
        case .noPredecessor: return "noPredecessor"
        case .tooManyUploads: return "tooManyUploads"
        case .insufficientStorage: return "insufficientStorage"
        case .internalError: return "internalError"
        case .forbiddenDestination: return "forbiddenDestination"
        case .eventSuperseded: return "eventSuperseded"
        case .webhookDisabled: return "webhookDisabled"
        case .tooManyRequests: return "tooManyRequests"
        }
    }

    /// The error domain of PhotoKit's errors, rendered as `"domain"` beside `photosErrorCode`.
    public static let photosErrorDomain = "PHPhotosErrorDomain"

    /// `PHPhotosError` raw value for errors PhotoKit defines (rendered with `"domain": photosErrorDomain`).
    public var photosErrorCode: Int? {
        switch self {
        case .persistentChangeTokenExpired: return 3105
        case .accessUserDenied: return 3311
        default: return nil
        }
    }

    /// A human-readable message for the client (internal errors stay generic).
    public var message: String {
        switch self {
        case .badRequest(let m, _), .notFound(let m), .fingerprintMismatch(let m), .unprocessable(let m, _), .unavailable(let m),
             .insufficientStorage(let m):
            return m
        case .unauthorized: return "A valid bearer token is required."
        case .forbidden: return "This token may not use this endpoint."
        case .invalidChangeToken: return "The change token is not valid for this device."
        case .persistentChangeTokenExpired: return "The change token is older than the history kept; refetch everything."
        case .accessUserDenied: return "The person denied this app access to the photo library."
        case .batchTooLarge(let max): return "Too many items in one request; at most \(max)."
        case .quotaExceeded(let quota, let limit): return "The account's \(quota) quota (\(limit)) would be exceeded; nothing was stored."
        case .versionMismatch: return "The version does not match."
        case .deviceAlreadyReplaced: return "This device has a successor already."
        case .noPredecessor: return "This device has no predecessor to adopt from."
        case .tooManyUploads(let limit): return "This device has \(limit) open uploads already; commit or delete one first."
        case .changeTokenMismatch: return "The library changed since the change token in If-Match; nothing was stored."
        case .internalError: return "Internal server error."
        case .forbiddenDestination(let reason):
            switch reason {
            case "insecureScheme": return "http is allowed only for hosts listed in webhooks.allowedHosts; use https."
            case "unresolvable": return "The URL's host does not resolve."
            default: return "The URL's host resolves to an address that may not be called."
            }
        case .eventSuperseded: return "A newer event of the same feed exists; redeliver that one instead."
        case .webhookDisabled: return "The webhook is disabled; enable it first."
        case .tooManyRequests: return "Too many requests; retry later."
        }
    }

    /// Extra fields of the error object, in order (`field`, `maxBatch`, `version`, 422 details).
    public var details: [DetailField] {
        switch self {
        case .badRequest(_, let field?): return [DetailField("field", .string(field))]
        case .unprocessable(_, let details): return details
        case .batchTooLarge(let max): return [DetailField("maxBatch", .int(max))]
        case .quotaExceeded(let quota, let limit): return [DetailField("quota", .string(quota)), DetailField("limit", .int(limit))]
        // Nothing exists to have a version: `"version": null`, so the answer keeps one shape.
        case .versionMismatch(let v): return [DetailField("version", v.map { .string($0) } ?? .null)]
        case .deviceAlreadyReplaced(let successor): return [DetailField("replacedBy", .string(successor))]
        case .changeTokenMismatch(let token): return [DetailField("changeToken", .string(token))]
        case .tooManyUploads(let limit): return [DetailField("maxOpenUploads", .int(limit))]
        case .forbiddenDestination(let reason): return [DetailField("field", .string("url")), DetailField("reason", .string(reason))]
        case .eventSuperseded(let newer): return [DetailField("supersededBy", .string(newer))]
        default: return []
        }
    }
}

/// A per-item error inside an answer (mapping items, journal photos, changes).
public enum ItemError: Sendable, Hashable {
    /// PHPhotosError 3201. `limitedLibrary` is true when the device's authorization is `limited`.
    case identifierNotFound(limitedLibrary: Bool)
    /// PHPhotosError 3202, with every candidate local identifier sorted by byte order.
    case multipleIdentifiersFound(localIdentifiers: [String])
    /// The string is not a well-formed identifier.
    case invalidIdentifier
    /// PHPhotosError 3210: a change whose details cannot be given (a reset library).
    case persistentChangeDetailsUnavailable

    public var name: String {
        switch self {
        case .identifierNotFound: return "identifierNotFound"
        case .multipleIdentifiersFound: return "multipleIdentifiersFound"
        case .invalidIdentifier: return "invalidIdentifier"
        case .persistentChangeDetailsUnavailable: return "persistentChangeDetailsUnavailable"
        }
    }

    /// `PHPhotosError` raw value, nil for `invalidIdentifier`.
    public var photosErrorCode: Int? {
        switch self {
        case .identifierNotFound: return 3201
        case .multipleIdentifiersFound: return 3202
        case .persistentChangeDetailsUnavailable: return 3210
        case .invalidIdentifier: return nil
        }
    }

    public var message: String {
        switch self {
        case .identifierNotFound: return "No object with this identifier in the library."
        case .multipleIdentifiersFound: return "More than one object matches; let the person choose."
        case .invalidIdentifier: return "Not a well-formed identifier."
        case .persistentChangeDetailsUnavailable: return "The details of this change are unavailable; refetch what you track."
        }
    }

    /// Fields after name/message/domain/code: `limitedLibrary` (only when true), `localIdentifiers`.
    public var details: [DetailField] {
        switch self {
        case .identifierNotFound(let limited): return limited ? [DetailField("limitedLibrary", .bool(true))] : []
        case .multipleIdentifiersFound(let ids): return [DetailField("localIdentifiers", .array(ids.map { .string($0) }))]
        default: return []
        }
    }
}

/// The answer for one item of a mapping request.
public enum MappingResult: Sendable, Equatable {
    /// The identifier it maps to (a cloud identifier for local→cloud, a local identifier for cloud→local).
    case found(String)
    case error(ItemError)
}
