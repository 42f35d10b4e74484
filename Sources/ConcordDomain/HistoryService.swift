import Foundation

/// A device's change history.
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
            // The predecessor's token, still held by a restored app: it refetches and starts again.
            let state = try self.read(device) { _, state in state }
            if let predecessor = state.replaces, self.tokens.decode(since, scope: .library(DeviceRef(accountID: device.accountID, deviceID: predecessor))) != nil {
                throw DomainError.persistentChangeTokenExpired
            }
            throw DomainError.invalidChangeToken
        }
        let now = self.now
        let stored = try self.read(device) { tx, state in
            // A valid MAC on a seq we never reached: a token from a restored or older database.
            guard sinceSeq <= state.lastChangeSeq else { throw DomainError.invalidChangeToken }
            let boundary = try Self.retentionBoundary(self.core, tx, state, lastSeq: state.lastChangeSeq, now: now)
            guard sinceSeq >= boundary else { throw DomainError.persistentChangeTokenExpired }
            return try tx.changes(device, after: sinceSeq, limit: limit + 1)
        }
        return ChangePage(stored: stored, limit: limit, since: since, tokens: self.tokens, scope: scope)
    }

    /// The oldest token of the device's history still valid (`ServiceCore.retentionBoundary`).
    static func retentionBoundary(_ core: ServiceCore, _ tx: any AccountReadTransaction, _ state: DeviceState, lastSeq: Int64, now: Date) throws -> Int64 {
        try core.retentionBoundary(lastSeq: lastSeq, prunedThrough: state.prunedThroughSeq, now: now) { time in
            try tx.latestChangeSeq(state.ref, createdAtOrBefore: time)
        }
    }

    /// Appends one history entry inside the write transaction: its sequence number is assigned
    /// here, under the account's write lock, so tokens grow in commit order. Prunes by count,
    /// age and bytes (`bytesBoundary`).
    static func appendChange(_ core: ServiceCore, _ tx: any AccountWriteTransaction, _ state: DeviceState, details: ChangeDetails?, now: Date,
                             objectCount: Int) throws -> Int64 {
        let seq = state.lastChangeSeq + 1
        try tx.appendChange(state.ref, seq: seq, createdAt: now.timeIntervalSince1970, details: details)
        try WebhookOutbox.libraryChanged(core, tx, device: state.ref, seq: seq, at: now.timeIntervalSince1970)
        try tx.updateDeviceCounters(state.ref, lastChangeSeq: seq, objectCount: objectCount)
        var boundary = try Self.retentionBoundary(core, tx, state, lastSeq: seq, now: now)
        if let overBytes = try Self.bytesBoundary(core, tx, state.ref, seq: seq, details: details) { boundary = max(boundary, overBytes) }
        if boundary > state.prunedThroughSeq { try tx.pruneChanges(state.ref, throughSeq: boundary) }
        return seq
    }

    /// A change at least this large (estimated) is measured against a byte budget of `budget` when
    /// appended: 4 KiB, or 1/256 of the budget when that is more (512 KiB at the default 128 MiB).
    static func bytesCheckedChange(budget: Int) -> Int { max(4096, budget / 256) }
    /// Smaller changes are measured every this many changes.
    static let bytesCheckInterval: Int64 = 64

    /// The byte bound of a device's history (`history.maxBytesPerDevice`): the newest
    /// changes whose details hold at most that many bytes are kept; older ones are pruned (their
    /// tokens `410`, as for the count and age bounds). Measuring is a pass over the device's
    /// history (on SQLite it reads the details), so it runs when a change of
    /// `bytesCheckedChange` or more is appended and every `bytesCheckInterval` changes: between
    /// passes fewer than 64 smaller changes pass the budget (at most 63 × 512 KiB over 128 MiB), and a
    /// pass costs at most ~256 times the bytes of the change that triggers it, or is shared by 64
    /// changes. nil when nothing is over it.
    static func bytesBoundary(_ core: ServiceCore, _ tx: any AccountWriteTransaction, _ device: DeviceRef, seq: Int64,
                              details: ChangeDetails?) throws -> Int64? {
        let budget = core.configuration.dataBounds.historyBytesPerDevice
        let size = details.map(Self.estimatedBytes) ?? 0
        guard size >= Self.bytesCheckedChange(budget: budget) || seq % Self.bytesCheckInterval == 0 else { return nil }
        return try tx.changeSeqOverBytes(device, keeping: budget)
    }

    /// About what a change's details take stored: its identifiers' bytes and a few per identifier.
    static func estimatedBytes(_ details: ChangeDetails) -> Int {
        var bytes = 0
        for lists in [details.assets, details.assetCollections, details.collectionLists] {
            for list in [lists.inserted, lists.updated, lists.deleted] {
                for id in list { bytes += id.utf8.count + 3 }
            }
        }
        return bytes
    }
}
