import ConcordDomain
import Testing

@testable import ConcordApp

/// The domain names its errors; `ErrorMapper` alone gives each its HTTP status (the API's table).
@Suite struct ErrorMapperTests {
    @Test(arguments: [
        (DomainError.badRequest(message: "m", field: nil), 400),
        (.invalidChangeToken, 400),
        (.unauthorized, 401),
        (.forbidden, 403),
        (.accessUserDenied, 403),
        (.quotaExceeded(quota: "q", limit: 1), 403),
        (.notFound(message: "m"), 404),
        (.fingerprintMismatch(message: "m"), 409),
        (.deviceAlreadyReplaced(replacedBy: "D"), 409),
        (.noPredecessor, 409),
        (.tooManyUploads(limit: 1), 409),
        (.persistentChangeTokenExpired, 410),
        (.versionMismatch(currentVersion: nil), 412),
        (.changeTokenMismatch(currentChangeToken: "t"), 412),
        (.batchTooLarge(maxBatch: 1), 413),
        (.unprocessable(message: "m", details: []), 422),
        (.internalError(message: "m"), 500),
        (.unavailable(message: "m"), 503),
        (.insufficientStorage(message: "m"), 507),
        (.forbiddenDestination(reason: "forbiddenAddress"), 422),
        (.eventSuperseded(supersededBy: "E"), 409),
        (.webhookDisabled, 409),
        (.tooManyRequests(retryAfter: 1), 429),
    ] as [(DomainError, Int)])
    func eachDomainErrorHasItsStatus(_ error: DomainError, _ status: Int) {
        #expect(ErrorMapper.status(error) == status)
        #expect(APIError(error).status == status)
        #expect(APIError(error).name == error.name)
    }
}
