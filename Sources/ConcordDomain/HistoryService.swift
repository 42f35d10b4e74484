import Foundation

/// A device's change history (API.md §7).
public struct HistoryService: ServiceArea {
    let core: ServiceCore

    /// `GET /v1/library/token`: the token of the last committed change (valid for an empty library).
    public func currentChangeToken(device: DeviceRef) throws(DomainError) -> String {
        let state = try self.read(device) { _, state in state }
        return self.tokens.encode(seq: state.lastChangeSeq, scope: .library(device))
    }

    /// `GET /v1/library/changes?since=&limit=`: changes strictly after `since`, in order.
    public func changes(since: String, limit: Int?, device: DeviceRef) throws(DomainError) -> ChangePage {
        let limit = limit ?? self.configuration.defaultChangesLimit
        guard limit >= 1, limit <= self.configuration.maxChangesLimit else {
            throw DomainError.badRequest(message: "limit must be between 1 and \(self.configuration.maxChangesLimit).", field: "limit")
        }
        let scope = ChangeTokenScope.library(device)
        guard let sinceSeq = self.tokens.decode(since, scope: scope) else {
            // The predecessor's token, still held by a restored app (§7): it refetches and starts again.
            let state = try self.read(device) { _, state in state }
            if let predecessor = state.replaces, self.tokens.decode(since, scope: .library(DeviceRef(accountID: device.accountID, deviceID: predecessor))) != nil {
                throw DomainError.persistentChangeTokenExpired
            }
            throw DomainError.invalidChangeToken
        }
        let now = self.now
        var stored = try self.read(device) { tx, state in
            // A valid MAC on a seq we never reached: a token from a restored or older database.
            guard sinceSeq <= state.lastChangeSeq else { throw DomainError.invalidChangeToken }
            let boundary = try Self.retentionBoundary(self.core, tx, state, lastSeq: state.lastChangeSeq, now: now)
            guard sinceSeq >= boundary else { throw DomainError.persistentChangeTokenExpired }
            return try tx.changes(device, after: sinceSeq, limit: limit + 1)
        }
        let hasMore = stored.count > limit
        if hasMore { stored.removeLast(stored.count - limit) }
        let changes = stored.map { LibraryChange(changeToken: self.tokens.encode(seq: $0.seq, scope: scope), details: $0.details) }
        return ChangePage(changes: changes, changeToken: changes.last?.changeToken ?? since, hasMore: hasMore)
    }

    /// The oldest token of the device's history still valid (`ServiceCore.retentionBoundary`).
    static func retentionBoundary(_ core: ServiceCore, _ tx: any AccountReadTransaction, _ state: DeviceState, lastSeq: Int64, now: Date) throws -> Int64 {
        try core.retentionBoundary(lastSeq: lastSeq, prunedThrough: state.prunedThroughSeq, now: now) { time in
            try tx.latestChangeSeq(state.ref, createdAtOrBefore: time)
        }
    }

    /// Appends one history entry inside the write transaction: its sequence number is assigned
    /// here, under the account's write lock, so tokens grow in commit order (§7). Prunes by count and age.
    static func appendChange(_ core: ServiceCore, _ tx: any AccountWriteTransaction, _ state: DeviceState, details: ChangeDetails?, now: Date,
                             objectCount: Int) throws -> Int64 {
        let seq = state.lastChangeSeq + 1
        try tx.appendChange(state.ref, seq: seq, createdAt: now.timeIntervalSince1970, details: details)
        try tx.updateDeviceCounters(state.ref, lastChangeSeq: seq, objectCount: objectCount)
        let boundary = try Self.retentionBoundary(core, tx, state, lastSeq: seq, now: now)
        if boundary > state.prunedThroughSeq { try tx.pruneChanges(state.ref, throughSeq: boundary) }
        return seq
    }
}
