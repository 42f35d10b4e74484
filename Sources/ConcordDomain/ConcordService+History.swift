import Foundation

extension ConcordService {
    // MARK: - Change history (§7)

    /// `GET /v1/library/token`: the token of the last committed change (valid for an empty library).
    public func currentChangeToken(device: DeviceRef) throws(DomainError) -> String {
        let state = try self.run { try self.store.read { tx in try Self.requireDevice(tx, device) } }
        return self.tokens.encode(seq: state.lastChangeSeq, scope: .library(device))
    }

    /// `GET /v1/library/changes?since=&limit=`: changes strictly after `since`, in order.
    public func changes(since: String, limit: Int?, device: DeviceRef) throws(DomainError) -> ChangePage {
        let limit = limit ?? self.configuration.defaultChangesLimit
        guard limit >= 1, limit <= self.configuration.maxChangesLimit else {
            throw DomainError.badRequest(message: "limit must be between 1 and \(self.configuration.maxChangesLimit).", field: "limit")
        }
        let scope = ChangeTokenScope.library(device)
        guard let sinceSeq = self.tokens.decode(since, scope: scope) else { throw DomainError.invalidChangeToken }
        let now = self.now
        var stored = try self.run {
            try self.store.read { tx in
                let state = try Self.requireDevice(tx, device)
                // A valid MAC on a seq we never reached: a token from a restored or older database.
                guard sinceSeq <= state.lastChangeSeq else { throw DomainError.invalidChangeToken }
                let boundary = try self.retentionBoundary(tx, ref: device, lastSeq: state.lastChangeSeq, prunedThrough: state.prunedThroughSeq, now: now)
                guard sinceSeq >= boundary else { throw DomainError.persistentChangeTokenExpired }
                return try tx.changes(device, after: sinceSeq, limit: limit + 1)
            }
        }
        let hasMore = stored.count > limit
        if hasMore { stored.removeLast(stored.count - limit) }
        let changes = stored.map { LibraryChange(changeToken: self.tokens.encode(seq: $0.seq, scope: scope), details: $0.details) }
        return ChangePage(changes: changes, changeToken: changes.last?.changeToken ?? since, hasMore: hasMore)
    }

    /// The oldest token still valid: changes up to this seq are (or count as) dropped from the history.
    /// By count, the last `historyMaxChanges` are kept; by age, changes older than `historyMaxAge`
    /// count as dropped even before a write prunes them, so expiry does not depend on write traffic.
    func retentionBoundary(_ tx: any StoreReadTransaction, ref: DeviceRef, lastSeq: Int64, prunedThrough: Int64, now: Date) throws -> Int64 {
        var boundary = max(prunedThrough, lastSeq - Int64(self.configuration.historyMaxChanges))
        if let old = try tx.latestChangeSeq(ref, createdAtOrBefore: now.timeIntervalSince1970 - self.configuration.historyMaxAge) {
            boundary = max(boundary, old)
        }
        return boundary
    }
}
