import Foundation

// The values the storage protocols (this folder) take and answer. The mapping lookups' answers
// live beside `MappingReads` (MappingStore.swift).

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

/// What a stored token belongs to: the code both engines write in `tokens.kind`.
public enum TokenKind: Int64, Sendable {
    case account = 1
    case device = 2
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
