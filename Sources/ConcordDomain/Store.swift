import Foundation

/// A library object as stored, with the cloud record it is linked to (if any).
public struct StoredObject: Sendable, Equatable {
    public var object: LibraryObject
    /// The linked record; its fingerprint is the one the record was created from.
    public var link: CloudRecord?
    public init(object: LibraryObject, link: CloudRecord?) {
        self.object = object
        self.link = link
    }
}

/// A cloud record of the account's shared mapping table.
public struct CloudRecord: Sendable, Hashable {
    /// Upper-case UUID.
    public var guid: String
    public var type: ObjectType
    public var fingerprint: String
    public init(guid: String, type: ObjectType, fingerprint: String) {
        self.guid = guid
        self.type = type
        self.fingerprint = fingerprint
    }
    /// `<GUID>:<type>:<fingerprint>`.
    public var cloudIdentifier: String {
        var s = String()
        s.reserveCapacity(41 + self.fingerprint.utf8.count)
        s += self.guid; s += ":"; s += self.type.code; s += ":"; s += self.fingerprint
        return s
    }
}

/// The link state of one object: what local → cloud needs, and no more (the hot path). The
/// linked record's identifier is spelled with the record's fingerprint, which need not be the
/// object's (a record found by key, or made without a fingerprint, §5).
public struct ObjectLinkState: Sendable, Equatable {
    public var localIdentifier: String
    public var type: ObjectType
    public var fingerprint: String
    public var linkedGUID: String?
    /// The linked record's fingerprint (empty: none).
    public var linkedFingerprint: String
    public init(localIdentifier: String, type: ObjectType, fingerprint: String, linkedGUID: String?, linkedFingerprint: String? = nil) {
        self.localIdentifier = localIdentifier
        self.type = type
        self.fingerprint = fingerprint
        self.linkedGUID = linkedGUID
        self.linkedFingerprint = linkedFingerprint ?? fingerprint
    }
    /// The linked record.
    public var link: CloudRecord? { self.linkedGUID.map { CloudRecord(guid: $0, type: self.type, fingerprint: self.linkedFingerprint) } }
}

/// Content key: objects and records are matched by type and fingerprint.
public struct ContentKey: Sendable, Hashable {
    public var type: ObjectType
    public var fingerprint: String
    public init(type: ObjectType, fingerprint: String) {
        self.type = type
        self.fingerprint = fingerprint
    }
}

/// A device row with its counters.
public struct DeviceState: Sendable, Equatable {
    public var ref: DeviceRef
    public var name: String
    public var platform: String?
    public var createdAt: Date
    public var authorization: AuthorizationStatus
    /// Sequence number of the last committed change (0: none yet).
    public var lastChangeSeq: Int64
    /// Changes with a sequence number up to this one were dropped from the history.
    public var prunedThroughSeq: Int64
    public var objectCount: Int
    /// The device this one took over from (§3), while that one exists; and the one that took over
    /// from this device, if any (its token is dead from then on: it is read-only until deleted).
    public var replaces: String?
    public var replacedBy: String?
    public init(ref: DeviceRef, name: String, platform: String?, createdAt: Date, authorization: AuthorizationStatus,
                lastChangeSeq: Int64, prunedThroughSeq: Int64, objectCount: Int, replaces: String? = nil, replacedBy: String? = nil) {
        self.ref = ref
        self.name = name
        self.platform = platform
        self.createdAt = createdAt
        self.authorization = authorization
        self.lastChangeSeq = lastChangeSeq
        self.prunedThroughSeq = prunedThroughSeq
        self.objectCount = objectCount
        self.replaces = replaces
        self.replacedBy = replacedBy
    }
}

/// One stored history entry; `details` nil means unavailable (a reset).
public struct StoredChange: Sendable, Equatable {
    public var seq: Int64
    public var createdAt: Double
    public var details: ChangeDetails?
    public init(seq: Int64, createdAt: Double, details: ChangeDetails?) {
        self.seq = seq
        self.createdAt = createdAt
        self.details = details
    }
}

/// A storage engine (SQLite or PostgreSQL). Synchronous and thread-safe.
///
/// Every transaction is scoped: server-wide state (settings, who a token belongs to, creating an
/// account) or ONE account. An account's write transaction is serialised with every other writer of
/// that account — SQLite: `BEGIN IMMEDIATE` on the single writer connection; PostgreSQL: the
/// account's advisory lock, taken once when the transaction begins, so it holds across every
/// instance sharing the database. A body commits when it returns and rolls back when it throws.
/// Reads never take a write lock and see one snapshot.
public protocol ConcordStore: AnyObject, Sendable {
    func readServer<T>(_ body: (any ServerReadTransaction) throws -> T) throws -> T
    func writeServer<T>(_ body: (any ServerWriteTransaction) throws -> T) throws -> T
    func read<T>(account accountID: String, _ body: (any AccountReadTransaction) throws -> T) throws -> T
    func write<T>(account accountID: String, _ body: (any AccountWriteTransaction) throws -> T) throws -> T
    /// True when the database answers a trivial read right now (for `GET /ready`). May block briefly.
    func ping() -> Bool
    /// Closes every connection once the transactions in flight end; later calls throw `unavailable`.
    func close()
    /// Announces committed change-feed entries (this store's writes, and other instances' where the
    /// engine can hear of them), for long-polls.
    var feedSignals: FeedSignals { get }
    /// Whether other processes may use the same database (PostgreSQL), or this process has it to
    /// itself (SQLite: a request claimed by an earlier process is not running any more).
    var isSharedAcrossProcesses: Bool { get }
}

/// Server-wide reads.
/// The holder of a token and when it was last used.
public struct TokenOwner: Sendable, Equatable {
    public var principal: Principal
    public var lastUsedAt: Double?
    public init(principal: Principal, lastUsedAt: Double?) {
        self.principal = principal
        self.lastUsedAt = lastUsedAt
    }
}

/// When a token was issued and last used (seconds since 1970; nil: unknown or never).
public struct TokenTimes: Sendable, Equatable {
    public var createdAt: Double?
    public var lastUsedAt: Double?
    public init(createdAt: Double?, lastUsedAt: Double?) {
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }
}

extension ServerReadTransaction {
    /// Who holds the token.
    public func principal(tokenHash: [UInt8]) throws -> Principal? {
        try self.tokenOwner(tokenHash: tokenHash)?.principal
    }
}

public protocol ServerReadTransaction: AnyObject, WebhookReads {
    /// A server-wide setting (e.g. the change-token secret).
    func setting(_ key: String) throws -> [UInt8]?
    /// The principal whose token hashes to `tokenHash`.
    /// Who holds the token, and when it was last used (nil: never, or before this was kept).
    func tokenOwner(tokenHash: [UInt8]) throws -> TokenOwner?

}

/// Server-wide writes (serialised with each other).
public protocol ServerWriteTransaction: ServerReadTransaction, WebhookWrites {
    func setSetting(_ key: String, _ value: [UInt8]) throws
    func insertAccount(accountID: String, name: String, tokenHash: [UInt8], createdAt: Date) throws
    /// Notes a use of the token (callers write at most once a minute per token).
    func touchToken(tokenHash: [UInt8], at: Double) throws
    /// The idempotency key `key` of the token hashed to `owner` (issue 13).
    func idempotencyRecord(owner: [UInt8], key: String) throws -> IdempotencyRecord?
    /// Inserts or replaces a key's record; `accountID` ties it to an account (deleted with it).
    func putIdempotencyRecord(owner: [UInt8], key: String, accountID: String?, _ record: IdempotencyRecord) throws
    func setIdempotencyAnswer(owner: [UInt8], key: String, answer: [UInt8]) throws
    /// Deletes a claim whose request applied nothing (one that did stays, its answer lost).
    func deleteIdempotencyRecord(owner: [UInt8], key: String) throws
    func deleteIdempotencyRecords(createdBefore time: Double) throws
    /// What the account's idempotency keys created after `time` take (issue 23): per key its
    /// answer's bytes, its name's and `DataBounds.idempotencyKeyOverhead`.
    func idempotencyKeptBytes(accountID: String, createdAfter time: Double) throws -> Int
    /// Stores a claimed key's answer and ties the key to `accountID` (deleted with that account);
    /// when that account no longer exists, the key is deleted instead (issue 23).
    func setIdempotencyAnswer(owner: [UInt8], key: String, answer: [UInt8], accountID: String) throws
}

/// One object row of an account's mapping tables, as `streamMappingTables` hands it out.
public struct MappingObjectRow: Sendable {
    public var deviceID: String
    public var localIdentifier: String
    public var type: ObjectType
    public var fingerprint: String
    public var linkedGUID: String?
    /// The key's A (§2), nil without a key.
    public var keyA: String?
    /// `creationDate` in whole seconds (the wanted rule), nil without one.
    public var creationSecond: Int64?
    public init(deviceID: String, localIdentifier: String, type: ObjectType, fingerprint: String, linkedGUID: String?,
                keyA: String? = nil, creationSecond: Int64? = nil) {
        self.deviceID = deviceID
        self.localIdentifier = localIdentifier
        self.type = type
        self.fingerprint = fingerprint
        self.linkedGUID = linkedGUID
        self.keyA = keyA
        self.creationSecond = creationSecond
    }
}

/// What a stored token belongs to: the code both engines write in `tokens.kind`.
public enum TokenKind: Int64, Sendable {
    case account = 1
    case device = 2
}

/// What local → cloud needs of one local identifier.
public enum LinkLookup: Sendable, Equatable {
    /// Not in the device's library (step 1).
    case missing
    /// In the library, not linked yet (step 3 assigns a record).
    case unlinked
    /// Linked (step 2): the record's cloud identifier is `bytes[start ..< start + count]` of the
    /// batch's `LinkLookups` (one buffer for the whole batch: no string per answer).
    case linked(start: Int, count: Int)
}

/// Local → cloud lookups of a batch: one `LinkLookup` per identifier, and the UTF-8 bytes of the
/// linked ones' cloud identifiers.
public struct LinkLookups: Sendable {
    public var lookups: [LinkLookup]
    public var bytes: [UInt8]
    public init(lookups: [LinkLookup] = [], bytes: [UInt8] = []) {
        self.lookups = lookups
        self.bytes = bytes
    }
}

/// What cloud → local needs of one cloud identifier's record (§5 steps 2 and 3).
public struct RecordLookup: Sendable, Equatable {
    /// The device's object linked to the record, when the record exists with the identifier's type.
    public var linkedLocalIdentifier: String?
    /// The record, when it exists with the identifier's type (its own fingerprint, possibly empty).
    public var record: CloudRecord?
    /// When no object of the device links to the record: the device's objects carrying one of the
    /// record's keys, sorted by local identifier byte order, each with its link (step 3).
    public var keyMatches: [StoredObject]
    public init(linkedLocalIdentifier: String? = nil, record: CloudRecord? = nil, keyMatches: [StoredObject] = []) {
        self.linkedLocalIdentifier = linkedLocalIdentifier
        self.record = record
        self.keyMatches = keyMatches
    }
}

/// One object of `GET /v1/library/wanted`.
public struct WantedObject: Sendable, Equatable {
    public var localIdentifier: String
    public var type: ObjectType
    public init(localIdentifier: String, type: ObjectType) {
        self.localIdentifier = localIdentifier
        self.type = type
    }
}

/// A page of `GET /v1/library/wanted`: objects after `after` in byte order, and the count of all.
public struct WantedPage: Sendable, Equatable {
    public var objects: [WantedObject]
    public var next: String?
    public var total: Int
    public init(objects: [WantedObject], next: String?, total: Int) {
        self.objects = objects
        self.next = next
        self.total = total
    }
}

/// `GET /v1/library/status`: counts over one device's library.
public struct LibraryStatus: Sendable, Equatable {
    public var objects: Int
    public var withFingerprint: Int
    public var withKey: Int
    public var linked: Int
    public var wanted: Int
    public init(objects: Int, withFingerprint: Int, withKey: Int, linked: Int, wanted: Int) {
        self.objects = objects
        self.withFingerprint = withFingerprint
        self.withKey = withKey
        self.linked = linked
        self.wanted = wanted
    }
}

/// The reads §5's lookups are made of (local → cloud, cloud → local, journal photos, wanted). A
/// storage transaction answers them (from its batch queries, below), and so does the in-memory
/// mapping index (`MappingIndex`), with the same results in the same order; objects from the index
/// carry identity, type, fingerprint, key and link only (all the rules read).
public protocol MappingReads {
    /// One answer per local identifier, in input order.
    func linkLookups(_ device: DeviceRef, localIdentifiers: IdentifierBatch) throws -> LinkLookups
    /// One answer per cloud identifier, in input order (records are the account's only).
    func recordLookups(_ device: DeviceRef, identifiers: [CloudIdentifier]) throws -> [RecordLookup]
    /// Objects of `device` whose (type, fingerprint) is one of `keys`, sorted by local identifier byte order.
    func objects(_ device: DeviceRef, matching keys: [ContentKey]) throws -> [StoredObject]
    /// The device's wanted objects (§5 "Fingerprints on demand") strictly after `after`, at most `limit`.
    func wantedPage(_ device: DeviceRef, after: String?, limit: Int) throws -> WantedPage
    /// Counts over the device's library.
    func libraryStatus(_ device: DeviceRef) throws -> LibraryStatus
    /// Cloud → local answers decided straight from the batch's bytes, where a reader can do that
    /// cheaply (the mapping index); `.undecided` items are resolved in full (`recordLookups` and
    /// on). Nil: resolve every item in full.
    func quickLocalIdentifiers(_ device: DeviceRef, cloudIdentifiers batch: IdentifierBatch, contentMatch: Bool) throws -> QuickLocalIdentifiers?
}

extension MappingReads {
    /// Storage resolves every item in full: its step 2 is one query with step 3's inputs.
    public func quickLocalIdentifiers(_ device: DeviceRef, cloudIdentifiers batch: IdentifierBatch, contentMatch: Bool) throws -> QuickLocalIdentifiers? { nil }
}

/// Cloud → local answers a reader decided from a batch's bytes alone (`MappingReads.quickLocalIdentifiers`).
public struct QuickLocalIdentifiers: Sendable {
    public enum Lookup: Sendable, Equatable {
        /// Step 2 (the linked object) or 4 (the only object with the content): its local identifier
        /// is `bytes[start ..< start + count]`.
        case found(start: Int, count: Int)
        /// Not a well-formed cloud identifier (step 1).
        case invalid
        /// No link, no object carrying one of the record's keys, no object with the content (or no
        /// content match asked).
        case notFound
        /// Step 4: several objects have the identifier's content (their local identifiers, sorted).
        case multiple([String])
        /// To resolve in full.
        case undecided
    }
    public var lookups: [Lookup]
    public var bytes: [UInt8]
    public init(lookups: [Lookup], bytes: [UInt8] = []) {
        self.lookups = lookups
        self.bytes = bytes
    }
}

extension AccountReadTransaction {
    public func linkLookups(_ device: DeviceRef, localIdentifiers: IdentifierBatch) throws -> LinkLookups {
        var result = LinkLookups()
        result.lookups = try self.linkStates(device, localIdentifiers: localIdentifiers.strings).map { state in
            guard let state else { return .missing }
            guard let link = state.link else { return .unlinked }
            let start = result.bytes.count
            result.bytes.append(contentsOf: link.cloudIdentifier.utf8)
            return .linked(start: start, count: result.bytes.count - start)
        }
        return result
    }

    public func recordLookups(_ device: DeviceRef, identifiers: [CloudIdentifier]) throws -> [RecordLookup] {
        var lookups = try self.recordLinks(device, guids: identifiers.map(\.guid)).enumerated().map { i, found -> RecordLookup in
            guard let found, found.record.type == identifiers[i].type else { return RecordLookup() }
            if let local = found.linkedLocalIdentifier { return RecordLookup(linkedLocalIdentifier: local) }
            return RecordLookup(record: found.record)
        }
        // Step 3: the objects carrying one of the keys of records with no link on the device.
        let unlinked = lookups.compactMap { $0.linkedLocalIdentifier == nil ? $0.record?.guid : nil }
        guard !unlinked.isEmpty else { return lookups }
        let matches = try self.keyMatches(device, guids: unlinked)
        for i in lookups.indices where lookups[i].linkedLocalIdentifier == nil {
            guard let r = lookups[i].record, let found = matches[r.guid] else { continue }
            lookups[i].keyMatches = found.filter { $0.object.type == r.type }
        }
        return lookups
    }
}

/// Batch reads of one account (`accountID`), its libraries, mapping table and journals. Every list
/// argument is answered in one round trip; missing things are omitted. No method takes an account:
/// each reads and writes this transaction's own (`accountID`); a `DeviceRef` argument names a
/// device of it.
public protocol AccountReadTransaction: MappingReads, JournalStoreReadTransaction, WebhookReads {
    /// The account this transaction is scoped to.
    var accountID: String { get }
    func accountExists() throws -> Bool
    /// Type, fingerprint and link of the objects with these local identifiers: one entry per input,
    /// in input order (nil: not in the library). The hot path of local → cloud: no hashing needed.
    func linkStates(_ device: DeviceRef, localIdentifiers: [String]) throws -> [ObjectLinkState?]
    /// For each GUID, in input order: the account's record with that GUID (nil: none) and the local
    /// identifier of the object of `device` linked to it (nil: none). The hot path of cloud → local.
    func recordLinks(_ device: DeviceRef, guids: [String]) throws -> [(record: CloudRecord, linkedLocalIdentifier: String?)?]
    /// Objects of `device` with these local identifiers (any order, missing omitted), with their links.
    func objects(_ device: DeviceRef, localIdentifiers: [String]) throws -> [StoredObject]
    /// How many cloud records the account holds (records go only with the account).
    func recordCount() throws -> Int
    /// Records of the account with these GUIDs (upper case), oldest first.
    func records(guids: [String]) throws -> [CloudRecord]
    /// For each of these records: the objects of `device` carrying one of its keys (§5 step 3),
    /// sorted by local identifier byte order, each once, with its link. Records without any: omitted.
    func keyMatches(_ device: DeviceRef, guids: [String]) throws -> [String: [StoredObject]]
    /// The keys the record carries (§5), in no particular order.
    func recordKeys(guids: [String]) throws -> [String: [ObjectKey]]
    func device(_ device: DeviceRef) throws -> DeviceState?
    /// The account's devices, oldest first.
    func devices() throws -> [DeviceState]
    /// Each device's token: when issued and last used (device ID → times).
    func deviceTokenTimes() throws -> [String: TokenTimes]
    /// Every object of `device`.
    func allObjects(_ device: DeviceRef) throws -> [StoredObject]
    /// Objects of every type strictly after `after`, in local identifier byte order, with their
    /// links: a whole library read a page at a time (`PUT /v1/library` and an upload's commit).
    func storedObjectPage(_ device: DeviceRef, after: String?, limit: Int) throws -> [StoredObject]
    /// Objects of one type strictly after `after`, in local identifier byte order.
    func objectPage(_ device: DeviceRef, type: ObjectType, after: String?, limit: Int) throws -> [LibraryObject]
    /// For each GUID linked to an object of `device`: that object's local identifier.
    func linkedObjects(_ device: DeviceRef, guids: [String]) throws -> [(guid: String, localIdentifier: String)]
    /// The account's mapping version: bumped by every write transaction that changes its devices,
    /// objects, links or records (0 for a new or missing account).
    func mappingVersion() throws -> Int64
    /// The ID of the mapping index snapshot recorded as the account's state (nil: none), see
    /// `recordIndexSnapshot`. Recorded means current: `bumpMappingVersion` clears it.
    func indexSnapshotID() throws -> String?
    /// Streams the account's mapping tables, one query per table: every device ID, every record
    /// with its creation order (in creation order), then every object's (device ID, local
    /// identifier, type, fingerprint, linked GUID).
    func streamMappingTables(devices: (String) throws -> Void, records: (CloudRecord, Int64) throws -> Void,
                             recordKeys: (String, ObjectKey) throws -> Void,
                             objects: (MappingObjectRow) throws -> Void) throws
    /// History entries with seq > `after`, ascending, at most `limit`.
    func changes(_ device: DeviceRef, after seq: Int64, limit: Int) throws -> [StoredChange]
    /// The highest seq of a change created at or before `time` (age-based retention), nil if none.
    func latestChangeSeq(_ device: DeviceRef, createdAtOrBefore time: Double) throws -> Int64?
}

/// Batch writes of one account, inside its one write transaction.
public protocol AccountWriteTransaction: AccountReadTransaction, JournalStoreWriteTransaction, WebhookWrites {
    /// Adds an observer told of every mapping change and feed append this transaction makes from now on.
    func add(observer: any TransactionObserver)
    /// Records `id` as the account's mapping index snapshot when its mapping version is still
    /// `version` (true), else changes nothing (false: the snapshot is already stale, or the
    /// account is gone). Not a mapping change: the version stays.
    func recordIndexSnapshot(id: String, version: Int64) throws -> Bool
    /// Adds one to the account's mapping version and answers the new value; clears the recorded
    /// index snapshot ID (that snapshot no longer reflects the account).
    func bumpMappingVersion() throws -> Int64
    /// Marks an idempotency key's request as applied, inside the write that applies it (issue 13):
    /// after a crash a resend can tell "never happened" (run it) from "happened, answer lost".
    func markIdempotencyApplied(owner: [UInt8], key: String) throws
    func insertDevice(_ device: DeviceRef, name: String, platform: String?, tokenHash: [UInt8], createdAt: Date) throws
    /// `successor` takes over from `predecessor` (§3): each names the other, the predecessor's
    /// tokens are deleted (401 from this commit on), and its library feed is announced, so that a
    /// poll held with the dead token is answered (on every instance).
    func setSuccessor(_ successor: DeviceRef, of predecessor: DeviceRef) throws
    /// Removes the device, its token, library, links and history; false if it did not exist. A
    /// successor stops naming it (`replaces` null), and a predecessor it replaced is free again.
    func deleteDevice(_ device: DeviceRef) throws -> Bool
    /// Replaces the account's token (the old one stops at once); false when there is no such account.
    func replaceAccountToken(tokenHash: [UInt8], createdAt: Date) throws -> Bool
    /// Replaces the device's token, its library untouched; false when the account has no such device.
    func replaceDeviceToken(_ device: DeviceRef, tokenHash: [UInt8], createdAt: Date) throws -> Bool
    /// Deletes every row of the account (devices, libraries, records, history, journals, tokens);
    /// false when there is no such account.
    func deleteAccount() throws -> Bool
    func setAuthorization(_ device: DeviceRef, _ status: AuthorizationStatus) throws
    /// Records of the account matching `keys` that no object of `device` links to, oldest first.
    func unlinkedRecords(_ device: DeviceRef, matching keys: [ContentKey]) throws -> [CloudRecord]
    /// Records of the account carrying one of `keys` that no object of `device` links to, oldest
    /// first, each with the key it was found by (a record carrying two of them: once per key).
    func unlinkedRecords(_ device: DeviceRef, carrying keys: [ObjectKey]) throws -> [(record: CloudRecord, key: ObjectKey)]
    /// Those of `guids` whose record carries a key some object of `device` carries (§5 step 3b).
    func recordsCarryingKeys(of device: DeviceRef, guids: [String]) throws -> Set<String>
    /// The records take these keys (kept for good, §5); a key a record carries already is ignored.
    func addRecordKeys(_ keys: [(guid: String, key: ObjectKey)]) throws
    /// Records without a fingerprint take these (§5: once; a record with one keeps it).
    func fillRecordFingerprints(_ fills: [(guid: String, fingerprint: String)]) throws
    /// Creates records; they are newer than every existing record, in array order.
    func insertRecords(_ records: [CloudRecord], createdAt: Date) throws
    /// Links each object to a record (replacing the object's link). The caller has dropped any
    /// other link of those records on this device first.
    func setLinks(_ device: DeviceRef, _ links: [(localIdentifier: String, guid: String)]) throws
    /// Drops the links of these records on `device`.
    func dropLinks(_ device: DeviceRef, guids: [String]) throws
    /// Drops every link of `device` (a reset library).
    func dropAllLinks(_ device: DeviceRef) throws
    /// Inserts or replaces objects with the given link (nil: unlinked).
    func putObjects(_ device: DeviceRef, _ objects: [StoredObject]) throws
    func deleteObjects(_ device: DeviceRef, localIdentifiers: [String]) throws
    /// Appends one history entry (details nil: unavailable).
    func appendChange(_ device: DeviceRef, seq: Int64, createdAt: Double, details: ChangeDetails?) throws
    func updateDeviceCounters(_ device: DeviceRef, lastChangeSeq: Int64, objectCount: Int) throws
    /// Deletes history entries with seq ≤ `throughSeq` and remembers it as the pruning point.
    func pruneChanges(_ device: DeviceRef, throughSeq: Int64) throws

    // MARK: Uploads in parts (§4)

    /// The open uploads of `device` (expired ones included until `deleteUploads(touchedBefore:)`).
    func uploads(_ device: DeviceRef) throws -> [StoredUpload]
    /// The upload with this ID if `device` made it; nil otherwise (unknown, or another device's).
    func upload(_ device: DeviceRef, uploadID: String) throws -> StoredUpload?
    func insertUpload(_ device: DeviceRef, uploadID: String, at time: Double) throws
    /// Removes the upload and its parts.
    func deleteUpload(uploadID: String) throws
    /// Removes the account's uploads last touched before `time`, with their parts.
    func deleteUploads(touchedBefore time: Double) throws
    /// Stores part `part` of the upload (replacing a part of that number) and touches the upload.
    /// The objects' identifiers are distinct (checked by the caller).
    func putUploadPart(uploadID: String, part: Int, objects: [LibraryObject], at time: Double) throws
    /// Parts stored and objects they hold, all parts together.
    func uploadTotals(uploadID: String) throws -> (parts: Int, objects: Int)
    /// A local identifier two parts of the upload hold, if any.
    func uploadRepeatedIdentifier(uploadID: String) throws -> String?
    /// The upload's objects strictly after `after`, in local identifier byte order; only albums and
    /// folders when `containersOnly`.
    func uploadObjectPage(uploadID: String, containersOnly: Bool, after: String?, limit: Int) throws -> [LibraryObject]
    /// The types of those of `localIdentifiers` the upload holds.
    func uploadObjectTypes(uploadID: String, localIdentifiers: [String]) throws -> [(localIdentifier: String, type: ObjectType)]
    /// The newest seq of the device's history such that it and the changes after it hold more
    /// than `bytes` bytes of details; nil when the whole history holds no more (issue 23).
    func changeSeqOverBytes(_ device: DeviceRef, keeping bytes: Int) throws -> Int64?
}
