import Foundation
import Synchronization

/// A stored `Idempotency-Key`: which request first used it, and its answer once given.
public struct IdempotencyRecord: Sendable, Equatable {
    /// SHA-256 of the request (method, target and body) that first used the key.
    public var fingerprint: [UInt8]
    /// The first answer, as the app encoded it; nil while that request still runs.
    public var answer: [UInt8]?
    /// The request's write committed (marked inside it); false when it wrote nothing (yet).
    public var applied: Bool
    /// The process that claimed the key (`IdempotencyService.instanceID`).
    public var instance: String
    /// Seconds since 1970 when the key was first used.
    public var createdAt: Double
    public init(fingerprint: [UInt8], answer: [UInt8]?, applied: Bool = false, instance: String = "", createdAt: Double) {
        self.fingerprint = fingerprint
        self.answer = answer
        self.applied = applied
        self.instance = instance
        self.createdAt = createdAt
    }
}

/// What a request carrying an idempotency key should do.
public enum IdempotencyClaim: Sendable, Equatable {
    /// First use of the key: run the request, then `complete` (or `release`) the key.
    case claimed
    /// Resent: answer this stored answer again; nothing runs.
    case replay([UInt8])
    /// The key was first used for a different request (`422 idempotencyKeyReused`).
    case reused
    /// The first request with this key is still running (`409`, retry later).
    case inProgress
    /// The first request's write committed, but the server failed before its answer was stored:
    /// it cannot be replayed, and running it again would apply it twice (`409`, no retry).
    case answerLost
}

/// The key of a request that has one, handed to the service's writes it runs (their `idempotency`
/// argument): each write transaction marks the key applied (`ServiceCore.write`), so a crash
/// between that commit and the stored answer is told apart from one before anything committed.
public struct IdempotencyScope: Sendable {
    public let owner: [UInt8]
    public let key: String
    public init(owner: [UInt8], key: String) {
        self.owner = owner
        self.key = key
    }
}

/// Idempotency keys of POST requests, per token, kept for `lifetime` in the database (so a resend
/// through another instance replays too). No HTTP here: the answer is bytes the app encodes.
///
/// A key is claimed in its own transaction before the request runs, marked applied inside the
/// request's own write (`IdempotencyScope`), and completed with the answer after it. A process
/// that dies before its answer is stored leaves the key claimed: a resend runs again when nothing
/// was applied and the claim is abandoned (its process gone: at once with SQLite, which one
/// process owns; after `abandonedAfter` with PostgreSQL), and is `answerLost` when it was applied.
public final class IdempotencyService: ServiceArea {
    let core: ServiceCore
    /// How long a first answer is replayed (24 h).
    public static let lifetime: Double = 24 * 3600
    /// A claim older than this without an answer belongs to a request that never finished.
    public static let abandonedAfter: Double = 60
    /// This process, in the claims it makes.
    public let instanceID = UUID().uuidString
    /// Expired keys are deleted at most this often, by the claim that notices.
    static let purgeInterval: Double = 60
    private let lastPurge = Mutex<Double>(0)
    /// What each account's kept keys take, without a pass over them on every keyed request.
    private let keptBytes = KeptBytesEstimate()

    init(core: ServiceCore) { self.core = core }

    public func claim(owner: [UInt8], accountID: String?, key: String, fingerprint: [UInt8]) throws(DomainError) -> IdempotencyClaim {
        let now = self.now.timeIntervalSince1970
        let purge = self.lastPurge.withLock { last in
            guard now - last >= Self.purgeInterval else { return false }
            last = now
            return true
        }
        return try self.run {
            try self.store.writeServer { tx in
                if purge { try tx.deleteIdempotencyRecords(createdBefore: now - Self.lifetime) }
                if let record = try tx.idempotencyRecord(owner: owner, key: key), record.createdAt > now - Self.lifetime {
                    guard record.fingerprint == fingerprint else { return .reused }
                    if let answer = record.answer { return .replay(answer) }
                    // Its process is gone: another process on a store no other process shares, or an old claim.
                    let abandoned = (record.instance != self.instanceID && !self.store.isSharedAcrossProcesses)
                        || record.createdAt <= now - Self.abandonedAfter
                    if !abandoned { return .inProgress }
                    if record.applied { return .answerLost }
                }
                // A new key of an account whose live keys already fill its room: nothing
                // runs. Expired keys do not count (this transaction's purge is rolled back with it).
                if let accountID {
                    let limit = self.configuration.dataBounds.idempotencyBytesPerAccount
                    let measure = { try tx.idempotencyKeptBytes(accountID: accountID, createdAfter: now - Self.lifetime) }
                    var kept = try self.keptBytes.kept(accountID, now: now, fresh: false, measure: measure)
                    if kept >= limit { kept = try self.keptBytes.kept(accountID, now: now, fresh: true, measure: measure) }
                    if kept >= limit { throw DomainError.quotaExceeded(quota: "idempotencyBytesPerAccount", limit: limit) }
                }
                try tx.putIdempotencyRecord(owner: owner, key: key, accountID: accountID,
                                            IdempotencyRecord(fingerprint: fingerprint, answer: nil, instance: self.instanceID, createdAt: now))
                if let accountID { self.keptBytes.add(accountID, key.utf8.count + DataBounds.idempotencyKeyOverhead) }
                return .claimed
            }
        }
    }

    /// Stores the first answer of a claimed key.
    public func complete(owner: [UInt8], key: String, answer: [UInt8]) throws(DomainError) {
        try self.run { try self.store.writeServer { tx in try tx.setIdempotencyAnswer(owner: owner, key: key, answer: answer) } }
    }

    /// Stores the first answer of a claimed key, within the room of `accountID`'s keys:
    /// `answer` when the account's keys with it stay within `quotas.idempotencyBytesPerAccount`,
    /// else `fallback` (the app's short `409` saying the answer was not kept). The key is tied to
    /// `accountID` (an admin's key that created the account becomes that account's, and goes with it);
    /// when that account is gone already, the key goes. Without an account (the admin's other
    /// keys), `answer` is stored as it is.
    public func complete(owner: [UInt8], key: String, answer: [UInt8], fallback: [UInt8], accountID: String?) throws(DomainError) {
        guard let accountID else { return try self.complete(owner: owner, key: key, answer: answer) }
        let limit = self.configuration.dataBounds.idempotencyBytesPerAccount
        let now = self.now.timeIntervalSince1970
        try self.run {
            try self.store.writeServer { tx in
                // The claim's row counts already (its name and overhead); its answer is what is added.
                let measure = { try tx.idempotencyKeptBytes(accountID: accountID, createdAfter: now - Self.lifetime) }
                var kept = try self.keptBytes.kept(accountID, now: now, fresh: false, measure: measure)
                if kept + answer.count > limit { kept = try self.keptBytes.kept(accountID, now: now, fresh: true, measure: measure) }
                let stored = kept + answer.count <= limit ? answer : fallback
                try tx.setIdempotencyAnswer(owner: owner, key: key, answer: stored, accountID: accountID)
                self.keptBytes.add(accountID, stored.count)
            }
        }
    }

    /// Frees a claimed key whose request did not run to an answer worth keeping (a 5xx, a 429):
    /// a resend runs again — unless one of its writes committed (then the claim stays, and a
    /// resend is `answerLost` once the claim is abandoned).
    public func release(owner: [UInt8], key: String) throws(DomainError) {
        try self.run { try self.store.writeServer { tx in try tx.deleteIdempotencyRecord(owner: owner, key: key) } }
    }
}

/// Per account, the bytes its kept idempotency keys take (`idempotencyKeptBytes`, a pass over the
/// account's keys) as last measured, plus what this process has stored since. Expiry only lowers
/// the truth, so within one process the figure never undercounts: a request is refused only on a
/// fresh measurement, and otherwise goes on the figure without a pass. Keys another instance
/// stores count from the next measurement — every 64th use, or after 60 s — so an account on
/// several instances may pass its room by what 64 requests or a minute add there.
final class KeptBytesEstimate: Sendable {
    private struct Entry { var bytes: Int; var uses: Int; var measuredAt: Double }
    private let entries = Mutex<[String: Entry]>([:])
    static let remeasureEvery = 64
    static let remeasureAfter: Double = 60
    static let maxAccounts = 10_000

    /// The account's kept bytes: measured (`measure`) when `fresh`, unknown or stale, else the figure.
    func kept(_ accountID: String, now: Double, fresh: Bool, measure: () throws -> Int) throws -> Int {
        let known: Int? = self.entries.withLock { table in
            guard !fresh, var e = table[accountID], e.uses < Self.remeasureEvery, now - e.measuredAt < Self.remeasureAfter, now >= e.measuredAt else {
                return nil
            }
            e.uses += 1
            table[accountID] = e
            return e.bytes
        }
        if let known { return known }
        let bytes = try measure()
        self.entries.withLock { table in
            // Stale figures are measured again anyway: dropping them keeps the table to the accounts in use.
            if table.count >= Self.maxAccounts { table = table.filter { now - $0.value.measuredAt < Self.remeasureAfter } }
            table[accountID] = Entry(bytes: bytes, uses: 0, measuredAt: now)
        }
        return bytes
    }

    /// This process stored `bytes` more for the account.
    func add(_ accountID: String, _ bytes: Int) {
        self.entries.withLock { table in table[accountID]?.bytes += bytes }
    }
}
