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
    case putObjects(device: String, [MappingObjectRow])
    case deleteObjects(device: String, localIdentifiers: [String])
    case addRecordKeys([(guid: String, key: ObjectKey)])
    case fillRecordFingerprints([(guid: String, fingerprint: String)])
}

extension MappingMutation {
    /// `putObjects` of stored objects: the columns the index keeps of each.
    public static func putting(_ objects: [StoredObject], on device: DeviceRef) -> MappingMutation {
        .putObjects(device: device.deviceID, objects.map {
            MappingObjectRow(deviceID: device.deviceID, localIdentifier: $0.object.localIdentifier, type: $0.object.type,
                             fingerprint: $0.object.fingerprint, linkedGUID: $0.link?.guid,
                             keyA: $0.object.key?.a, creationSecond: $0.object.creationSecond)
        })
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
