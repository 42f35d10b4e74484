/// Bounds on what one caller may leave in storage or get in one answer beyond the count quotas
/// (docs/operations.md "Bounds"): each has a setting and a documented answer or pruning rule.
public struct DataBounds: Sendable, Equatable {
    /// Bytes of idempotency keys one account keeps (`quotas.idempotencyBytesPerAccount`, 64 MiB): each
    /// key counts its stored answer, its name and `idempotencyKeyOverhead`. An answer that would pass
    /// it is kept as a small `409` instead; a new key once the account is at it is `403 quotaExceeded`.
    public var idempotencyBytesPerAccount = 64 << 20
    /// Bytes of change details one device's library history keeps (`history.maxBytesPerDevice`, 128 MiB):
    /// beyond them the oldest changes are pruned, and their tokens are `410`.
    public var historyBytesPerDevice = 128 << 20
    /// Bytes one `GET /v1/journals/{journalID}` answer may take, estimated (`server.limits.journalAnswerBytes`,
    /// 8 MiB; `estimatedAnswerBytes`): a larger journal is answered a page at a time (at least one
    /// entry per page).
    public var journalAnswerBytes = 8 << 20
    public init() {}

    /// What an entry takes in a journal's answer, about: its ID and text, 256 bytes per resolved
    /// photo (a cloud identifier with a local identifier or an error) and 128 for the rest.
    public static func estimatedAnswerBytes(entryID: String, text: String, photos: Int) -> Int {
        128 + entryID.utf8.count + text.utf8.count + 256 * photos
    }

    /// What a kept idempotency key costs beside its answer and name (its row, its indexes).
    public static let idempotencyKeyOverhead = 256
}
