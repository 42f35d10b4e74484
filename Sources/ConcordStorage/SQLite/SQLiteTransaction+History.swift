import ConcordDomain
import Foundation

/// Library history on SQLite (`HistoryWrites`).
extension SQLiteTransaction: HistoryWrites {
    func appendChange(_ device: DeviceRef, seq: Int64, createdAt: Double, details: ChangeDetails?) throws {
        let k = try self.requireKeys(device)
        self.observers.didAppend(to: .library(device))
        try self.db.run("INSERT INTO changes (account_key, device_key, seq, created_at, details, details_bytes) VALUES (?, ?, ?, ?, ?, ?)",
                        [.int(k.account), .int(k.device), .int(seq), .double(createdAt),
                         details.map { .blob(ChangeDetailsBinary.encode($0)) } ?? .null,
                         details.map { .int(Int64(ChangeDetailsCodec.encodedByteCount($0))) } ?? .null])
    }

    func changes(_ device: DeviceRef, after seq: Int64, limit: Int) throws -> [StoredChange] {
        guard let k = try self.keys(device) else { return [] }
        var result: [StoredChange] = []
        try self.db.query("""
            SELECT seq, created_at, details FROM changes
            WHERE account_key = ? AND device_key = ? AND seq > ? ORDER BY seq LIMIT ?
            """, [.int(k.account), .int(k.device), .int(seq), .int(Int64(limit))]) { s in
            result.append(StoredChange(seq: s.int(0), createdAt: s.double(1), details: try Self.changeDetails(s, 2)))
        }
        return result
    }

    /// A history entry's details: nil (unavailable), binary (since migration 13) or text (before).
    private static func changeDetails(_ s: Statement, _ column: Int32) throws -> ChangeDetails? {
        if s.isNull(column) { return nil }
        guard s.isBlob(column) else { return ChangeDetailsCodec.decode(s.text(column)) }
        guard let details = s.withBlob(column, ChangeDetailsBinary.decode) else {
            throw SQLiteStoreError(message: "a history entry's details are damaged")
        }
        return details
    }

    func latestChangeSeq(_ device: DeviceRef, createdAtOrBefore time: Double) throws -> Int64? {
        guard let k = try self.keys(device) else { return nil }
        return try self.db.scalarInt("SELECT max(seq) FROM changes WHERE account_key = ? AND device_key = ? AND created_at <= ?",
                                     [.int(k.account), .int(k.device), .double(time)])
    }

    func pruneChanges(_ device: DeviceRef, throughSeq: Int64) throws {
        let k = try self.requireKeys(device)
        try self.db.run("DELETE FROM changes WHERE account_key = ? AND device_key = ? AND seq <= ?",
                        [.int(k.account), .int(k.device), .int(throughSeq)])
        try self.db.run("UPDATE devices SET pruned_through_seq = max(pruned_through_seq, ?) WHERE account_key = ? AND device_key = ?",
                        [.int(throughSeq), .int(k.account), .int(k.device)])
    }

    func changeSeqOverBytes(_ device: DeviceRef, keeping bytes: Int) throws -> Int64? {
        guard let k = try self.keys(device) else { return nil }
        return try self.db.scalarInt("""
            SELECT seq FROM (
                SELECT seq, sum(coalesce(details_bytes, length(CAST(details AS BLOB)))) OVER (ORDER BY seq DESC) AS kept
                FROM changes WHERE account_key = ? AND device_key = ?
            ) WHERE kept > ? ORDER BY seq DESC LIMIT 1
            """, [.int(k.account), .int(k.device), .int(Int64(bytes))])
    }
}
