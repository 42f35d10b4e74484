import Foundation

/// A change to an account's mapping tables, as a write transaction made it: what the mapping index
/// applies after the transaction commits, in the same order.
enum MappingMutation: Sendable {
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

/// An account write transaction that records every change it makes to the mapping tables, so the
/// mapping index can apply exactly those changes once the transaction has committed. Everything is
/// forwarded to the engine's transaction unchanged.
final class MappingRecordingTransaction: AccountWriteTransaction {
    let base: any AccountWriteTransaction
    /// Whether the changes themselves are kept: only when this process holds the account's index
    /// (a 100 000-object manifest upload would otherwise hold a copy of it for nothing).
    let keepsChanges: Bool
    /// The mapping changes made so far, in order (empty when not kept).
    private(set) var mutations: [MappingMutation] = []
    /// True once any mapping change was made, kept or not.
    private(set) var changed = false

    init(_ base: any AccountWriteTransaction, keepsChanges: Bool) {
        self.base = base
        self.keepsChanges = keepsChanges
    }

    private func record(_ mutation: @autoclosure () -> MappingMutation) {
        self.changed = true
        if self.keepsChanges { self.mutations.append(mutation()) }
    }

    var accountID: String { self.base.accountID }

    func bumpMappingVersion() throws -> Int64 { try self.base.bumpMappingVersion() }
    func markIdempotencyApplied(owner: [UInt8], key: String) throws { try self.base.markIdempotencyApplied(owner: owner, key: key) }

    func accountExists() throws -> Bool { try self.base.accountExists() }

    func device(_ device: DeviceRef) throws -> DeviceState? { try self.base.device(device) }

    func devices() throws -> [DeviceState] { try self.base.devices() }
    func deviceTokenTimes() throws -> [String: TokenTimes] { try self.base.deviceTokenTimes() }

    func objects(_ device: DeviceRef, localIdentifiers: [String]) throws -> [StoredObject] {
        try self.base.objects(device, localIdentifiers: localIdentifiers)
    }

    func linkStates(_ device: DeviceRef, localIdentifiers: [String]) throws -> [ObjectLinkState?] {
        try self.base.linkStates(device, localIdentifiers: localIdentifiers)
    }

    func recordLinks(_ device: DeviceRef, guids: [String]) throws -> [(record: CloudRecord, linkedLocalIdentifier: String?)?] {
        try self.base.recordLinks(device, guids: guids)
    }

    func allObjects(_ device: DeviceRef) throws -> [StoredObject] { try self.base.allObjects(device) }

    func objectPage(_ device: DeviceRef, type: ObjectType, after: String?, limit: Int) throws -> [LibraryObject] {
        try self.base.objectPage(device, type: type, after: after, limit: limit)
    }

    func objects(_ device: DeviceRef, matching keys: [ContentKey]) throws -> [StoredObject] {
        try self.base.objects(device, matching: keys)
    }

    func records(guids: [String]) throws -> [CloudRecord] { try self.base.records(guids: guids) }

    func linkedObjects(_ device: DeviceRef, guids: [String]) throws -> [(guid: String, localIdentifier: String)] {
        try self.base.linkedObjects(device, guids: guids)
    }

    func mappingVersion() throws -> Int64 { try self.base.mappingVersion() }

    func streamMappingTables(devices: (String) throws -> Void, records: (CloudRecord, Int64) throws -> Void,
                             recordKeys: (String, ObjectKey) throws -> Void,
                             objects: (MappingObjectRow) throws -> Void) throws {
        try self.base.streamMappingTables(devices: devices, records: records, recordKeys: recordKeys, objects: objects)
    }

    func keyMatches(_ device: DeviceRef, guids: [String]) throws -> [String: [StoredObject]] { try self.base.keyMatches(device, guids: guids) }
    func recordKeys(guids: [String]) throws -> [String: [ObjectKey]] { try self.base.recordKeys(guids: guids) }
    func wantedPage(_ device: DeviceRef, after: String?, limit: Int) throws -> WantedPage { try self.base.wantedPage(device, after: after, limit: limit) }
    func libraryStatus(_ device: DeviceRef) throws -> LibraryStatus { try self.base.libraryStatus(device) }

    func unlinkedRecords(_ device: DeviceRef, carrying keys: [ObjectKey]) throws -> [(record: CloudRecord, key: ObjectKey)] {
        try self.base.unlinkedRecords(device, carrying: keys)
    }

    func recordsCarryingKeys(of device: DeviceRef, guids: [String]) throws -> Set<String> {
        try self.base.recordsCarryingKeys(of: device, guids: guids)
    }

    func addRecordKeys(_ keys: [(guid: String, key: ObjectKey)]) throws {
        try self.base.addRecordKeys(keys)
        self.record(.addRecordKeys(keys))
    }

    func fillRecordFingerprints(_ fills: [(guid: String, fingerprint: String)]) throws {
        try self.base.fillRecordFingerprints(fills)
        self.record(.fillRecordFingerprints(fills))
    }

    func changes(_ device: DeviceRef, after seq: Int64, limit: Int) throws -> [StoredChange] {
        try self.base.changes(device, after: seq, limit: limit)
    }

    func latestChangeSeq(_ device: DeviceRef, createdAtOrBefore time: Double) throws -> Int64? {
        try self.base.latestChangeSeq(device, createdAtOrBefore: time)
    }

    func insertDevice(_ device: DeviceRef, name: String, platform: String?, tokenHash: [UInt8], createdAt: Date) throws {
        try self.base.insertDevice(device, name: name, platform: platform, tokenHash: tokenHash, createdAt: createdAt)
        self.record(.insertDevice(device.deviceID))
    }

    // Tokens are not mapping data; a deleted account's index is forgotten after the commit
    // (`AccountService.deleteAccount`), since no version of it remains to catch up to.
    func replaceAccountToken(tokenHash: [UInt8], createdAt: Date) throws -> Bool {
        try self.base.replaceAccountToken(tokenHash: tokenHash, createdAt: createdAt)
    }

    func replaceDeviceToken(_ device: DeviceRef, tokenHash: [UInt8], createdAt: Date) throws -> Bool {
        try self.base.replaceDeviceToken(device, tokenHash: tokenHash, createdAt: createdAt)
    }

    func deleteAccount() throws -> Bool {
        try self.base.deleteAccount()
    }

    func deleteDevice(_ device: DeviceRef) throws -> Bool {
        let existed = try self.base.deleteDevice(device)
        if existed { self.record(.deleteDevice(device.deviceID)) }
        return existed
    }

    func setAuthorization(_ device: DeviceRef, _ status: AuthorizationStatus) throws { try self.base.setAuthorization(device, status) }

    func unlinkedRecords(_ device: DeviceRef, matching keys: [ContentKey]) throws -> [CloudRecord] {
        try self.base.unlinkedRecords(device, matching: keys)
    }

    func insertRecords(_ records: [CloudRecord], createdAt: Date) throws {
        try self.base.insertRecords(records, createdAt: createdAt)
        self.record(.insertRecords(records))
    }

    func setLinks(_ device: DeviceRef, _ links: [(localIdentifier: String, guid: String)]) throws {
        try self.base.setLinks(device, links)
        self.record(.setLinks(device: device.deviceID, links))
    }

    func dropLinks(_ device: DeviceRef, guids: [String]) throws {
        try self.base.dropLinks(device, guids: guids)
        self.record(.dropLinks(device: device.deviceID, guids: guids))
    }

    func dropAllLinks(_ device: DeviceRef) throws {
        try self.base.dropAllLinks(device)
        self.record(.dropAllLinks(device: device.deviceID))
    }

    func putObjects(_ device: DeviceRef, _ objects: [StoredObject]) throws {
        try self.base.putObjects(device, objects)
        self.record(.putObjects(device: device.deviceID, objects.map {
            MappingObjectRow(deviceID: device.deviceID, localIdentifier: $0.object.localIdentifier, type: $0.object.type,
                             fingerprint: $0.object.fingerprint, linkedGUID: $0.link?.guid,
                             keyA: $0.object.key?.a, creationSecond: $0.object.creationSecond)
        }))
    }

    func deleteObjects(_ device: DeviceRef, localIdentifiers: [String]) throws {
        try self.base.deleteObjects(device, localIdentifiers: localIdentifiers)
        self.record(.deleteObjects(device: device.deviceID, localIdentifiers: localIdentifiers))
    }

    func appendChange(_ device: DeviceRef, seq: Int64, createdAt: Double, details: ChangeDetails?) throws {
        try self.base.appendChange(device, seq: seq, createdAt: createdAt, details: details)
    }

    func updateDeviceCounters(_ device: DeviceRef, lastChangeSeq: Int64, objectCount: Int) throws {
        try self.base.updateDeviceCounters(device, lastChangeSeq: lastChangeSeq, objectCount: objectCount)
    }

    func pruneChanges(_ device: DeviceRef, throughSeq: Int64) throws { try self.base.pruneChanges(device, throughSeq: throughSeq) }

    func journalFeed() throws -> JournalFeedState { try self.base.journalFeed() }

    func journals() throws -> [StoredJournal] { try self.base.journals() }

    func journal(journalID: String) throws -> StoredJournal? { try self.base.journal(journalID: journalID) }

    func journalEntries(journalID: String) throws -> [StoredJournalEntry] {
        try self.base.journalEntries(journalID: journalID)
    }

    func journalEntry(journalID: String, entryID: String) throws -> StoredJournalEntry? {
        try self.base.journalEntry(journalID: journalID, entryID: entryID)
    }

    func journalEntryIDs(journalID: String) throws -> [String] { try self.base.journalEntryIDs(journalID: journalID) }

    func journalChanges(after seq: Int64, limit: Int) throws -> [StoredJournalChange] {
        try self.base.journalChanges(after: seq, limit: limit)
    }

    func latestJournalChangeSeq(createdAtOrBefore time: Double) throws -> Int64? {
        try self.base.latestJournalChangeSeq(createdAtOrBefore: time)
    }

    func putJournal(_ journal: StoredJournal) throws { try self.base.putJournal(journal) }

    func deleteJournal(journalID: String) throws { try self.base.deleteJournal(journalID: journalID) }

    func putJournalEntry(_ entry: StoredJournalEntry) throws { try self.base.putJournalEntry(entry) }

    func deleteJournalEntry(journalID: String, entryID: String) throws {
        try self.base.deleteJournalEntry(journalID: journalID, entryID: entryID)
    }

    func appendJournalChange(seq: Int64, createdAt: Double, details: JournalChangeDetails) throws {
        try self.base.appendJournalChange(seq: seq, createdAt: createdAt, details: details)
    }

    func pruneJournalChanges(throughSeq: Int64) throws { try self.base.pruneJournalChanges(throughSeq: throughSeq) }
}
