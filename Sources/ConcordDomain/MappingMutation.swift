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
    /// `putObjects` of stored objects: the columns the index keeps of each.
    public static func putting(_ objects: [StoredObject], on device: DeviceRef) -> MappingMutation {
        .putObjects(device: device.deviceID, PackedObjectRows(objects))
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
    }

    /// Layout (`PackedWriter`): type (1 byte), flags (1), the creation second (8, when flagged),
    /// the local identifier, the fingerprint, then the linked GUID and the key's A when flagged.
    public init(_ objects: [StoredObject]) {
        for s in objects {
            let key = s.object.key?.a, second = s.object.creationSecond
            var flags: UInt8 = 0
            if s.link != nil { flags |= Flag.link }
            if key != nil { flags |= Flag.key }
            if second != nil { flags |= Flag.creationSecond }
            self.packed.byte(UInt8(s.object.type.rawValue))
            self.packed.byte(flags)
            if let second { self.packed.int64(second) }
            self.packed.string(s.object.localIdentifier)
            self.packed.string(s.object.fingerprint)
            if let guid = s.link?.guid { self.packed.string(guid) }
            if let key { self.packed.string(key) }
            self.count += 1
        }
    }

    /// Each row in order, unpacked, as a row of `deviceID`.
    public func forEach(device deviceID: String, _ body: (MappingObjectRow) throws -> Void) rethrows {
        try self.packed.bytes.withUnsafeBufferPointer { b in
            var r = PackedReader(bytes: b, at: 0)
            for _ in 0..<self.count {
                let type = ObjectType(rawValue: Int(r.byte())) ?? .asset
                let flags = r.byte()
                let second = flags & Flag.creationSecond != 0 ? r.int64() : nil
                let localIdentifier = r.string()
                let fingerprint = r.string()
                let guid = flags & Flag.link != 0 ? r.string() : nil
                let key = flags & Flag.key != 0 ? r.string() : nil
                try body(MappingObjectRow(deviceID: deviceID, localIdentifier: localIdentifier, type: type, fingerprint: fingerprint,
                                          linkedGUID: guid, keyA: key, creationSecond: second))
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
    /// Whether the changes themselves are kept.
    let keepsChanges: Bool
    /// The mapping changes made so far, in order (empty when not kept).
    private(set) var mutations: [MappingMutation] = []
    /// True once any mapping change was made, kept or not.
    private(set) var changed = false

    init(keepsChanges: Bool) {
        self.keepsChanges = keepsChanges
    }

    func transactionDidChange(_ mutation: @autoclosure () -> MappingMutation) {
        self.changed = true
        if self.keepsChanges { self.mutations.append(mutation()) }
    }
}
