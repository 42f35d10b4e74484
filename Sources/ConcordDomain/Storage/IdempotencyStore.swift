import Foundation

/// Server-wide writes (and reads) of idempotency keys, each key scoped to the token hashed to
/// `owner`.
public protocol IdempotencyKeyWrites {
    /// The idempotency key `key` of the token hashed to `owner`.
    func idempotencyRecord(owner: [UInt8], key: String) throws -> IdempotencyRecord?
    /// Inserts or replaces a key's record; `accountID` ties it to an account (deleted with it).
    func putIdempotencyRecord(owner: [UInt8], key: String, accountID: String?, _ record: IdempotencyRecord) throws
    func setIdempotencyAnswer(owner: [UInt8], key: String, answer: [UInt8]) throws
    /// Deletes a claim whose request applied nothing (one that did stays, its answer lost).
    func deleteIdempotencyRecord(owner: [UInt8], key: String) throws
    func deleteIdempotencyRecords(createdBefore time: Double) throws
    /// What the account's idempotency keys created after `time` take: per key its
    /// answer's bytes, its name's and `DataBounds.idempotencyKeyOverhead`.
    func idempotencyKeptBytes(accountID: String, createdAfter time: Double) throws -> Int
    /// Stores a claimed key's answer and ties the key to `accountID` (deleted with that account);
    /// when that account no longer exists, the key is deleted instead.
    func setIdempotencyAnswer(owner: [UInt8], key: String, answer: [UInt8], accountID: String) throws
}

/// The one idempotency write made inside an account's write transaction.
public protocol IdempotencyAppliedWrites {
    /// Marks an idempotency key's request as applied, inside the write that applies it:
    /// after a crash a resend can tell "never happened" (run it) from "happened, answer lost".
    func markIdempotencyApplied(owner: [UInt8], key: String) throws
}
