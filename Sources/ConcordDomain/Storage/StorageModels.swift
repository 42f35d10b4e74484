import ConcordBytes
import Foundation

// The values the storage protocols (this folder) take and answer.

/// A library object as stored, with the cloud record it is linked to (if any).
public struct StoredObject: Sendable, Equatable {
    public var object: LibraryObject
    /// The linked record; its fingerprint is the one the record was created from.
    public var link: CloudRecord?
    /// The store's own number for the object's row (SQLite's rowid, PostgreSQL's object number),
    /// when the reader knew it: a write may find the row by it (`RecordWrites.setLinks(_:_:rows:)`),
    /// and checks it there. Not part of the object's value: two readers of one object are equal
    /// whether or not they knew it.
    public var storageRow: Int64?
    public init(object: LibraryObject, link: CloudRecord?, storageRow: Int64? = nil) {
        self.object = object
        self.link = link
        self.storageRow = storageRow
    }

    public static func == (a: StoredObject, b: StoredObject) -> Bool {
        a.object == b.object && a.link == b.link
    }
}

/// A cloud record of the account's shared mapping table: its GUID, type and own fingerprint
/// (possibly empty), the parts of its canonical cloud identifier.
public typealias CloudRecord = CloudIdentifier

extension CloudIdentifier {
    /// `<GUID>:<type>:<fingerprint>` (`stringValue`), as a record's identifier is written.
    public var cloudIdentifier: String { self.stringValue }
}

/// The link state of one object: what local → cloud needs, and no more (the hot path). The
/// linked record's identifier is spelled with the record's fingerprint, which need not be the
/// object's (a record found by key, or made without a fingerprint).
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
    /// The device this one took over from, while that one exists; and the one that took over
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

/// The holder of a token and when it was last used.
public struct TokenOwner: Sendable, Equatable {
    public var principal: Principal
    public var lastUsedAt: Double?
    /// A device token's device and its account's mapping version, when the engine read them in the
    /// same statement as the token (PostgreSQL): one snapshot, taken while the request is served.
    public var deviceCheck: DeviceCheck?
    public init(principal: Principal, lastUsedAt: Double?, deviceCheck: DeviceCheck? = nil) {
        self.principal = principal
        self.lastUsedAt = lastUsedAt
        self.deviceCheck = deviceCheck
    }
}

/// A device row and its account's mapping version read in one snapshot with the token a request
/// authenticated with. The request's mapping read starts from it instead of reading them again:
/// the snapshot was taken after the request arrived, so it holds every write acknowledged before,
/// through any instance, exactly as a read of its own would.
public struct DeviceCheck: Sendable, Equatable {
    public var device: DeviceState
    public var mappingVersion: Int64
    public init(device: DeviceState, mappingVersion: Int64) {
        self.device = device
        self.mappingVersion = mappingVersion
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

/// The columns of an object the mapping index keeps, as a write hands them to it (`PackedObjectRows`).
public struct MappingObjectRow: Sendable {
    public var deviceID: String
    public var localIdentifier: String
    public var type: ObjectType
    public var fingerprint: String
    public var linkedGUID: String?
    /// The key's A, nil without a key.
    public var keyA: String?
    /// `creationDate` in whole seconds (the wanted rule), nil without one.
    public var creationSecond: Int64?
    /// `StoredObject.storageRow`, when the store reported it.
    public var storageRow: Int64?
    public init(deviceID: String, localIdentifier: String, type: ObjectType, fingerprint: String, linkedGUID: String?,
                keyA: String? = nil, creationSecond: Int64? = nil, storageRow: Int64? = nil) {
        self.storageRow = storageRow
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

/// Why local → cloud has no cloud identifier for a local identifier (yet).
public enum LinkLookupMiss: Sendable, Equatable {
    /// Not in the device's library (step 1).
    case missing
    /// In the library, not linked yet (step 3 assigns a record).
    case unlinked
}

/// Local → cloud lookups of a batch: per identifier, in order, the UTF-8 bytes of its record's
/// cloud identifier when linked (step 2; one buffer for the whole batch: no string per answer),
/// else why not.
public typealias LinkLookups = AnswerBuffer<LinkLookupMiss>

/// What cloud → local needs of one cloud identifier's record.
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

/// Cloud → local answers a reader decided from a batch's bytes alone (`MappingReads.quickLocalIdentifiers`):
/// per identifier the local identifier's bytes (found: step 2, the linked object, or 4, the only
/// object with the content), or a number saying why not. The numbers hold no reference (nothing to
/// release per item of a batch), and they are the numbers of the errors `LocalIdentifierAnswers`
/// gives these items, so the service keeps the answers as they are.
public struct QuickLocalIdentifiers: Sendable {
    /// No link, no object carrying one of the record's keys, no object with the content (or no
    /// content match asked).
    public static let notFound = 0
    /// Not a well-formed cloud identifier (step 1).
    public static let invalid = 1
    /// To resolve in full.
    public static let undecided = 2
    /// The first number of step 4's several objects with the identifier's content: item `i` set to
    /// `firstMultiple + k` has the candidates `candidates[k]`.
    public static let firstMultiple = 3

    public var answers: AnswerBuffer<Int>
    /// The local identifiers of each `multiple`, sorted.
    public private(set) var candidates: [[String]] = []

    /// `count` answers, each undecided.
    public init(undecided count: Int) {
        self.answers = AnswerBuffer(repeating: Self.undecided, count: count)
    }

    public init() { self.init(undecided: 0) }

    /// Item `i` has several objects with its content: these local identifiers, sorted.
    public mutating func setMultiple(_ i: Int, _ localIdentifiers: [String]) {
        self.answers.set(i, Self.firstMultiple + self.candidates.count)
        self.candidates.append(localIdentifiers)
    }
}

// MARK: - Journals and uploads

/// A journal row. `version` is the sequence number of the last change to the journal or its entries;
/// `createdSeq` (the change that created it) orders the listing.
public struct StoredJournal: Sendable, Equatable {
    public var journalID: String
    public var title: String
    public var version: Int64
    public var entryCount: Int
    public var createdSeq: Int64
    public var createdAt: Double
    public var updatedAt: Double
    public init(journalID: String, title: String, version: Int64, entryCount: Int, createdSeq: Int64, createdAt: Double, updatedAt: Double) {
        self.journalID = journalID
        self.title = title
        self.version = version
        self.entryCount = entryCount
        self.createdSeq = createdSeq
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// An entry row: photos are canonical cloud identifiers in entry order. `version` is the sequence
/// number of the change that last wrote it; `createdSeq` orders the journal's entries.
public struct StoredJournalEntry: Sendable, Equatable {
    public var journalID: String
    public var entryID: String
    public var text: String
    public var photos: [String]
    public var version: Int64
    public var createdSeq: Int64
    public init(journalID: String, entryID: String, text: String, photos: [String], version: Int64, createdSeq: Int64) {
        self.journalID = journalID
        self.entryID = entryID
        self.text = text
        self.photos = photos
        self.version = version
        self.createdSeq = createdSeq
    }
}

/// The account's journal change feed counters (zeros before the first change).
public struct JournalFeedState: Sendable, Equatable {
    public var lastChangeSeq: Int64
    public var prunedThroughSeq: Int64
    public init(lastChangeSeq: Int64, prunedThroughSeq: Int64) {
        self.lastChangeSeq = lastChangeSeq
        self.prunedThroughSeq = prunedThroughSeq
    }
}

/// An upload in parts as storage keeps it.
public struct StoredUpload: Sendable, Equatable {
    public var uploadID: String
    public var deviceID: String
    /// When it was opened, then when its last part arrived: it expires `UploadService.lifetime` later.
    public var touchedAt: Double
    public init(uploadID: String, deviceID: String, touchedAt: Double) {
        self.uploadID = uploadID
        self.deviceID = deviceID
        self.touchedAt = touchedAt
    }
}
