/// Bounds on what one caller may leave in storage or get in one answer beyond the count quotas
/// (issue 23, docs/operations.md "Bounds"): each has a setting and a documented answer or pruning rule.
public struct DataBounds: Sendable, Equatable {
    /// Bytes of idempotency keys one account keeps (`quotas.idempotencyBytesPerAccount`, 64 MiB): each
    /// key counts its stored answer, its name and `idempotencyKeyOverhead`. An answer that would pass
    /// it is kept as a small `409` instead; a new key once the account is at it is `403 quotaExceeded`.
    public var idempotencyBytesPerAccount = 64 << 20
    /// Bytes of change details one device's library history keeps (`history.maxBytes`, 128 MiB):
    /// beyond them the oldest changes are pruned, and their tokens are `410`.
    public var historyBytesPerDevice = 128 << 20
    /// Photos one `GET /v1/journals/{journalID}` answer resolves (`server.limits.journalPhotos`,
    /// 10 000): a journal with more is answered a page at a time (at least one entry per page).
    public var journalPhotosPerAnswer = 10_000
    public init() {}

    /// What a kept idempotency key costs beside its answer and name (its row, its indexes).
    public static let idempotencyKeyOverhead = 256
}
