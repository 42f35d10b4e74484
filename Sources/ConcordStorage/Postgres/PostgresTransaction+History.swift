import ConcordDomain
import Foundation

/// Library history on PostgreSQL (`HistoryWrites`), keyed by the device's integer keys (migration 14).
extension PostgresTransaction: HistoryWrites {
    func appendChange(_ device: DeviceRef, seq: Int64, createdAt: Double, details: ChangeDetails?) throws {
        self.observers.didAppend(to: .library(device))
        let keys = try self.writeKeys(device)
        // Binary since migration 20 (`PostgresBinaryHistorySchema`), with the text form's size for the byte bound.
        try self.db.query("""
            INSERT INTO changes (account_key, device_key, seq, created_at, details_binary, details_bytes) VALUES ($1, $2, $3, $4, $5, $6)
            """, [.int(keys.account), .int(keys.device), .int(seq), .double(createdAt),
                  details.map { .bytes(ChangeDetailsBinary.encode($0)) } ?? .null(PGValue.byteaOID),
                  details.map { .int(Int64(ChangeDetailsCodec.encodedByteCount($0))) } ?? .null(PGValue.int8OID)])
    }

    func changes(_ device: DeviceRef, after seq: Int64, limit: Int) throws -> [StoredChange] {
        let keys = try self.keys(device)
        var result: [StoredChange] = []
        try self.db.query("""
            SELECT seq, created_at, details, details_binary FROM changes
            WHERE account_key = $1 AND device_key = $2 AND seq > $3 ORDER BY seq LIMIT $4
            """, [.int(keys.account), .int(keys.device), .int(seq), .int(Int64(limit))]) { r in
            result.append(StoredChange(seq: r.int(0), createdAt: r.double(1), details: try Self.changeDetails(r, text: 2, binary: 3)))
        }
        return result
    }

    /// A history entry's details: binary (since migration 20), text (before) or nil (unavailable).
    private static func changeDetails(_ r: PGRow, text: Int32, binary: Int32) throws -> ChangeDetails? {
        if !r.isNull(binary) {
            guard let details = r.withBytes(binary, ChangeDetailsBinary.decode) else {
                throw PostgresStoreError(message: "a history entry's details are damaged")
            }
            return details
        }
        return r.isNull(text) ? nil : ChangeDetailsCodec.decode(r.text(text))
    }

    func latestChangeSeq(_ device: DeviceRef, createdAtOrBefore time: Double) throws -> Int64? {
        let keys = try self.keys(device)
        return try self.db.scalarInt("SELECT max(seq) FROM changes WHERE account_key = $1 AND device_key = $2 AND created_at <= $3",
                                     [.int(keys.account), .int(keys.device), .double(time)])
    }

    func pruneChanges(_ device: DeviceRef, throughSeq: Int64) throws {
        let keys = try self.keys(device)
        try self.db.query("""
            WITH c AS (DELETE FROM changes WHERE account_key = $4 AND device_key = $5 AND seq <= $1)
            UPDATE devices SET pruned_through_seq = greatest(pruned_through_seq, $1) WHERE account_id = $2 AND device_id = $3
            """, [.int(throughSeq), .text(device.accountID), .text(device.deviceID), .int(keys.account), .int(keys.device)])
    }

    func changeSeqOverBytes(_ device: DeviceRef, keeping bytes: Int) throws -> Int64? {
        let keys = try self.keys(device)
        return try self.db.scalarInt("""
            SELECT seq FROM (
                SELECT seq, sum(coalesce(details_bytes, octet_length(details))) OVER (ORDER BY seq DESC) AS kept
                FROM changes WHERE account_key = $1 AND device_key = $2
            ) c WHERE kept > $3 ORDER BY seq DESC LIMIT 1
            """, [.int(keys.account), .int(keys.device), .int(Int64(bytes))])
    }
}
