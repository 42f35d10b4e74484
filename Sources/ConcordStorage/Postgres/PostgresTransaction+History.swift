import ConcordDomain
import Foundation

/// Library history on PostgreSQL (`HistoryWrites`).
extension PostgresTransaction: HistoryWrites {
    func appendChange(_ device: DeviceRef, seq: Int64, createdAt: Double, details: ChangeDetails?) throws {
        self.observers.didAppend(to: .library(device))
        try self.db.query("INSERT INTO changes (account_id, device_id, seq, created_at, details) VALUES ($1, $2, $3, $4, $5)",
                          [.text(device.accountID), .text(device.deviceID), .int(seq), .double(createdAt),
                           .optionalText(details.map { ChangeDetailsCodec.encode($0) })])
    }

    func changes(_ device: DeviceRef, after seq: Int64, limit: Int) throws -> [StoredChange] {
        var result: [StoredChange] = []
        try self.db.query("""
            SELECT seq, created_at, details FROM changes
            WHERE account_id = $1 AND device_id = $2 AND seq > $3 ORDER BY seq LIMIT $4
            """, [.text(device.accountID), .text(device.deviceID), .int(seq), .int(Int64(limit))]) { r in
            result.append(StoredChange(seq: r.int(0), createdAt: r.double(1), details: r.isNull(2) ? nil : ChangeDetailsCodec.decode(r.text(2))))
        }
        return result
    }

    func latestChangeSeq(_ device: DeviceRef, createdAtOrBefore time: Double) throws -> Int64? {
        return try self.db.scalarInt("SELECT max(seq) FROM changes WHERE account_id = $1 AND device_id = $2 AND created_at <= $3",
                                     [.text(device.accountID), .text(device.deviceID), .double(time)])
    }

    func pruneChanges(_ device: DeviceRef, throughSeq: Int64) throws {
        try self.db.query("""
            WITH c AS (DELETE FROM changes WHERE account_id = $2 AND device_id = $3 AND seq <= $1)
            UPDATE devices SET pruned_through_seq = greatest(pruned_through_seq, $1) WHERE account_id = $2 AND device_id = $3
            """, [.int(throughSeq), .text(device.accountID), .text(device.deviceID)])
    }

    func changeSeqOverBytes(_ device: DeviceRef, keeping bytes: Int) throws -> Int64? {
        try self.db.scalarInt("""
            SELECT seq FROM (
                SELECT seq, sum(octet_length(details)) OVER (ORDER BY seq DESC) AS kept
                FROM changes WHERE account_id = $1 AND device_id = $2
            ) c WHERE kept > $3 ORDER BY seq DESC LIMIT 1
            """, [.text(device.accountID), .text(device.deviceID), .int(Int64(bytes))])
    }
}
