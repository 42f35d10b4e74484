import Foundation

/// Reads of a device's library history (its change feed).
public protocol HistoryReads {
    /// History entries with seq > `after`, ascending, at most `limit`.
    func changes(_ device: DeviceRef, after seq: Int64, limit: Int) throws -> [StoredChange]
    /// The highest seq of a change created at or before `time` (age-based retention), nil if none.
    func latestChangeSeq(_ device: DeviceRef, createdAtOrBefore time: Double) throws -> Int64?
}

/// Writes of a device's history (and the reads only a writer makes).
public protocol HistoryWrites: HistoryReads {
    /// Appends one history entry (details nil: unavailable).
    func appendChange(_ device: DeviceRef, seq: Int64, createdAt: Double, details: ChangeDetails?) throws
    /// Deletes history entries with seq ≤ `throughSeq` and remembers it as the pruning point.
    func pruneChanges(_ device: DeviceRef, throughSeq: Int64) throws
    /// The newest seq of the device's history such that it and the changes after it hold more
    /// than `bytes` bytes of details; nil when the whole history holds no more.
    func changeSeqOverBytes(_ device: DeviceRef, keeping bytes: Int) throws -> Int64?
}
