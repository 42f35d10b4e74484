import ConcordBytes
import Foundation

/// A change to an account's mapping tables, as a write transaction made it: what the mapping index
/// applies after the transaction commits, in the same order. The engines' transactions report each
/// one to their observers (`TransactionObserver`).
public enum MappingMutation: Sendable {
    case insertDevice(String)
    case deleteDevice(String)
    case insertRecords([CloudRecord])
    case setLinks(device: String, [(localIdentifier: String, guid: String)])
    case dropLinks(device: String, guids: [String])
    case dropAllLinks(device: String)
    case putObjects(device: String, PackedObjectRows)
    case deleteObjects(device: String, localIdentifiers: [String])
    case addRecordKeys([(guid: String, key: ObjectKey)])
    case fillRecordFingerprints([(guid: String, fingerprint: String)])
}

extension MappingMutation {
    /// `putObjects` of stored objects: the columns the index keeps of each. `rows`: where the store
    /// put each one (`StoredObject.storageRow`; 0 where not known), when it reports them.
    public static func putting(_ objects: [StoredObject], on device: DeviceRef, rows: [Int64]? = nil) -> MappingMutation {
        .putObjects(device: device.deviceID, PackedObjectRows(objects, rows: rows))
    }
}

/// The columns the mapping index keeps of each object a write stored (`MappingObjectRow`'s, the
/// device aside), packed: a write keeps its mutations until it commits, and a 360 000-object
/// `PUT /v1/library` or a million-object upload's commit held them as values — two heap strings
/// and a 100-byte value per object — while the account's index was loaded.
public struct PackedObjectRows: Sendable {
    private var packed = PackedWriter()
    public private(set) var count = 0

    private enum Flag {
        static let link: UInt8 = 1
        static let key: UInt8 = 2
        static let creationSecond: UInt8 = 4
        static let storageRow: UInt8 = 8
    }

    /// Layout (`PackedWriter`): type (1 byte), flags (1), the creation second (8, when flagged),
    /// the store's row (8, when flagged), the local identifier, the fingerprint, then the linked
    /// GUID and the key's A when flagged. `rows`: one per object (0: not known).
    public init(_ objects: [StoredObject], rows: [Int64]? = nil) {
        precondition(rows == nil || rows!.count == objects.count)
        for (i, s) in objects.enumerated() {
            let key = s.object.key?.a, second = s.object.creationSecond, row = rows?[i] ?? 0
            var flags: UInt8 = 0
            if s.link != nil { flags |= Flag.link }
            if key != nil { flags |= Flag.key }
            if second != nil { flags |= Flag.creationSecond }
            if row != 0 { flags |= Flag.storageRow }
            self.packed.byte(UInt8(s.object.type.rawValue))
            self.packed.byte(flags)
            if let second { self.packed.int64(second) }
            if row != 0 { self.packed.int64(row) }
            self.packed.string(s.object.localIdentifier)
            self.packed.string(s.object.fingerprint)
            if let guid = s.link?.guid { self.packed.string(guid) }
            if let key { self.packed.string(key) }
            self.count += 1
        }
    }

    /// The rows' bytes (the layout above), for the mapping log (`MappingLogCodec`).
    public var packedBytes: [UInt8] { self.packed.bytes }

    /// Rows from `packedBytes`, each checked to lie whole within them; nil when they do not hold
    /// exactly `count` rows of the layout above.
    public init?(packedBytes: UnsafeRawBufferPointer, count: Int) {
        var at = 0
        func take(_ n: Int) -> Bool {
            guard n >= 0, n <= packedBytes.count - at else { return false }
            at += n
            return true
        }
        func string() -> Bool {
            guard at + 4 <= packedBytes.count else { return false }
            let n = Int(packedBytes[at]) | Int(packedBytes[at + 1]) << 8 | Int(packedBytes[at + 2]) << 16 | Int(packedBytes[at + 3]) << 24
            return take(4) && take(n)
        }
        guard count >= 0 else { return nil }
        for _ in 0..<count {
            guard at + 2 <= packedBytes.count, ObjectType(rawValue: Int(packedBytes[at])) != nil else { return nil }
            let flags = packedBytes[at + 1]
            at += 2
            if flags & Flag.creationSecond != 0, !take(8) { return nil }
            if flags & Flag.storageRow != 0, !take(8) { return nil }
            guard string(), string() else { return nil }
            if flags & Flag.link != 0, !string() { return nil }
            if flags & Flag.key != 0, !string() { return nil }
        }
        guard at == packedBytes.count else { return nil }
        self.packed.bytes = Array(packedBytes)
        self.count = count
    }

    /// Each row in order, unpacked, as a row of `deviceID`.
    public func forEach(device deviceID: String, _ body: (MappingObjectRow) throws -> Void) rethrows {
        try self.packed.bytes.withUnsafeBufferPointer { b in
            var r = PackedReader(bytes: b, at: 0)
            for _ in 0..<self.count {
                let type = ObjectType(rawValue: Int(r.byte())) ?? .asset
                let flags = r.byte()
                let second = flags & Flag.creationSecond != 0 ? r.int64() : nil
                let row = flags & Flag.storageRow != 0 ? r.int64() : nil
                let localIdentifier = r.string()
                let fingerprint = r.string()
                let guid = flags & Flag.link != 0 ? r.string() : nil
                let key = flags & Flag.key != 0 ? r.string() : nil
                try body(MappingObjectRow(deviceID: deviceID, localIdentifier: localIdentifier, type: type, fingerprint: fingerprint,
                                          linkedGUID: guid, keyA: key, creationSecond: second, storageRow: row))
            }
        }
    }
}

/// The observer `ServiceCore.write` adds to each write transaction while the mapping index is on: it
/// learns whether the transaction changed the account's mapping tables, and keeps the changes
/// themselves only when this process holds the account's index (a 100 000-object manifest upload
/// would otherwise hold a copy of it for nothing). Tokens are not mapping data; a deleted account's
/// index is forgotten after the commit (`AccountService.deleteAccount`), since no version of it
/// remains to catch up to.
final class MappingChangeRecorder: TransactionObserver {
    /// Whether the changes themselves are kept for the index.
    let keepsChanges: Bool
    /// Whether they are kept for the mapping log too (the store keeps one), up to what it takes.
    let logs: Bool
    /// The mapping changes made so far, in order (empty when not kept).
    private(set) var mutations: [MappingMutation] = []
    /// True once any mapping change was made, kept or not.
    private(set) var changed = false
    /// The changes grew past `MappingLogCodec.maxBytes`: not logged (readers behind reload).
    private(set) var tooLargeToLog = false
    private var estimatedBytes = 0

    init(keepsChanges: Bool, logs: Bool = false) {
        self.keepsChanges = keepsChanges
        self.logs = logs
    }

    func transactionDidChange(_ mutation: @autoclosure () -> MappingMutation) {
        self.changed = true
        let logging = self.logs && !self.tooLargeToLog
        guard self.keepsChanges || logging else { return }
        let m = mutation()
        if logging {
            self.estimatedBytes += MappingLogCodec.estimatedBytes(m)
            if self.estimatedBytes > MappingLogCodec.maxBytes {
                self.tooLargeToLog = true
                if !self.keepsChanges {
                    self.mutations = []
                    return
                }
            }
        }
        self.mutations.append(m)
    }

    /// Stores the changes in the mapping log as what `version` changed (in the transaction that
    /// bumped it); nothing when the store keeps no log or they are too large for it.
    func appendLog(version: Int64, to log: (any MappingLogWrites)?) throws {
        guard let log, self.logs, !self.tooLargeToLog, let changes = MappingLogCodec.encode(self.mutations) else { return }
        try log.appendMappingLog(version: version, changes: changes)
    }
}
