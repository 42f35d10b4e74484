import ConcordBytes
import Foundation

/// `PHAssetMediaType` as text.
public enum MediaType: String, Sendable, Hashable, CaseIterable {
    case image, video, audio, unknown
}

/// A device's photo-library authorization (`PHAuthorizationStatus`).
public enum AuthorizationStatus: String, Sendable, Hashable, CaseIterable {
    case authorized, limited, denied
}

/// One object of a device's library. Fields that do not apply to the
/// object's type keep their defaults and are not rendered by the app.
public struct LibraryObject: Sendable, Equatable {
    public var localIdentifier: String
    public var type: ObjectType
    /// The content hash; empty when unknown (optional; never matched by content then).
    public var fingerprint: String
    /// PhotoKit's `PHCloudIdentifier` string `A:C:H`, nil when unknown; (A, C) is the `key`.
    public var photoKitCloudIdentifier: String?
    // Assets.
    public var mediaType: MediaType
    public var creationDate: String?
    public var modificationDate: String?
    public var hasAdjustments: Bool
    public var isFavorite: Bool
    // Asset collections and collection lists.
    public var title: String?
    /// Ordered members: an album's assets, a folder's collections (local identifiers).
    public var members: [String]
    public var appCreated: Bool

    public init(
        localIdentifier: String, type: ObjectType, fingerprint: String,
        mediaType: MediaType = .image, creationDate: String? = nil, modificationDate: String? = nil,
        hasAdjustments: Bool = false, isFavorite: Bool = false,
        title: String? = nil, members: [String] = [], appCreated: Bool = false, photoKitCloudIdentifier: String? = nil
    ) {
        self.localIdentifier = localIdentifier
        self.type = type
        self.fingerprint = fingerprint
        self.photoKitCloudIdentifier = photoKitCloudIdentifier
        self.mediaType = mediaType
        self.creationDate = creationDate
        self.modificationDate = modificationDate
        self.hasAdjustments = hasAdjustments
        self.isFavorite = isFavorite
        self.title = title
        self.members = members
        self.appCreated = appCreated
    }

    /// An asset.
    public static func asset(_ localIdentifier: String, fingerprint: String, mediaType: MediaType = .image,
                             creationDate: String? = nil, modificationDate: String? = nil,
                             hasAdjustments: Bool = false, isFavorite: Bool = false, photoKitCloudIdentifier: String? = nil) -> LibraryObject {
        LibraryObject(localIdentifier: localIdentifier, type: .asset, fingerprint: fingerprint, mediaType: mediaType,
                      creationDate: creationDate, modificationDate: modificationDate,
                      hasAdjustments: hasAdjustments, isFavorite: isFavorite, photoKitCloudIdentifier: photoKitCloudIdentifier)
    }

    /// An album listing `assets` in order.
    public static func assetCollection(_ localIdentifier: String, fingerprint: String, title: String? = nil,
                                       assets: [String] = [], appCreated: Bool = false, photoKitCloudIdentifier: String? = nil) -> LibraryObject {
        LibraryObject(localIdentifier: localIdentifier, type: .assetCollection, fingerprint: fingerprint,
                      title: title, members: assets, appCreated: appCreated, photoKitCloudIdentifier: photoKitCloudIdentifier)
    }

    /// A folder listing `collections` in order.
    public static func collectionList(_ localIdentifier: String, fingerprint: String, title: String? = nil,
                                      collections: [String] = [], photoKitCloudIdentifier: String? = nil) -> LibraryObject {
        LibraryObject(localIdentifier: localIdentifier, type: .collectionList, fingerprint: fingerprint,
                      title: title, members: collections, photoKitCloudIdentifier: photoKitCloudIdentifier)
    }
}

/// Who is calling: the device scope every library, mapping and history call runs in.
public struct DeviceRef: Sendable, Hashable {
    public var accountID: String
    public var deviceID: String
    public init(accountID: String, deviceID: String) {
        self.accountID = accountID
        self.deviceID = deviceID
    }
}

/// What a presented bearer token is. The admin token comes from configuration, not storage.
public enum Principal: Sendable, Equatable {
    case account(accountID: String)
    case device(DeviceRef)
}

/// The answer of `createAccount`: the token is shown once and stored only as a hash.
public struct CreatedAccount: Sendable, Equatable {
    public var accountID: String
    public var accountToken: String
}

/// The answer of `createDevice`: the token is shown once and stored only as a hash.
public struct CreatedDevice: Sendable, Equatable {
    public var deviceID: String
    public var deviceToken: String
}

/// One row of `GET /v1/devices`.
public struct DeviceSummary: Sendable, Equatable {
    public var deviceID: String
    public var name: String
    public var platform: String?
    public var createdAt: Date
    public var objectCount: Int
    public var changeToken: String
    /// When the device's current token was issued, and last used (to the minute; nil: never).
    public var tokenCreatedAt: Date?
    public var tokenLastUsedAt: Date?
    /// The device it took over from (while that one exists), and the one that took over from it.
    public var replaces: String?
    public var replacedBy: String?
}

/// One part of a change request (`"assets": {"upsert": [...], "delete": [...]}`).
public struct LibraryChangePart: Sendable, Equatable {
    public var upsert: [LibraryObject]
    public var delete: [String]
    public init(upsert: [LibraryObject] = [], delete: [String] = []) {
        self.upsert = upsert
        self.delete = delete
    }
}

/// `POST /v1/library/changes`: each part optional (empty).
public struct LibraryChangeRequest: Sendable, Equatable {
    public var assets: LibraryChangePart
    public var assetCollections: LibraryChangePart
    public var collectionLists: LibraryChangePart
    public init(assets: LibraryChangePart = .init(), assetCollections: LibraryChangePart = .init(), collectionLists: LibraryChangePart = .init()) {
        self.assets = assets
        self.assetCollections = assetCollections
        self.collectionLists = collectionLists
    }
    public func part(_ type: ObjectType) -> LibraryChangePart {
        switch type {
        case .asset: return self.assets
        case .assetCollection: return self.assetCollections
        case .collectionList: return self.collectionLists
        }
    }
}

/// The answer of a library write.
public struct LibraryChangeResult: Sendable, Equatable {
    public var changeToken: String
    public var inserted: Int
    public var updated: Int
    public var deleted: Int
    public var unchanged: Int
}

/// A page of `GET /v1/library/objects`.
public struct ObjectPage: Sendable, Equatable {
    public var objects: [LibraryObject]
    /// The localIdentifier to pass as `after` for the next page, nil at the end.
    public var next: String?
}

/// Local identifiers of one type inserted, updated, deleted by one change (packed: a first
/// upload's change lists a million of them, `IdentifierList`).
public struct ChangeLists: Sendable, Equatable {
    public var inserted: IdentifierList = []
    public var updated: IdentifierList = []
    public var deleted: IdentifierList = []
    public init(inserted: IdentifierList = [], updated: IdentifierList = [], deleted: IdentifierList = []) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
    }
    public var isEmpty: Bool { self.inserted.isEmpty && self.updated.isEmpty && self.deleted.isEmpty }
}

/// What one change did, per type; every part present.
public struct ChangeDetails: Sendable, Equatable {
    public var assets = ChangeLists()
    public var assetCollections = ChangeLists()
    public var collectionLists = ChangeLists()
    public init(assets: ChangeLists = ChangeLists(), assetCollections: ChangeLists = ChangeLists(), collectionLists: ChangeLists = ChangeLists()) {
        self.assets = assets
        self.assetCollections = assetCollections
        self.collectionLists = collectionLists
    }
    public subscript(type: ObjectType) -> ChangeLists {
        get {
            switch type {
            case .asset: return self.assets
            case .assetCollection: return self.assetCollections
            case .collectionList: return self.collectionLists
            }
        }
        set {
            switch type {
            case .asset: self.assets = newValue
            case .assetCollection: self.assetCollections = newValue
            case .collectionList: self.collectionLists = newValue
            }
        }
        // In place: `details[t].inserted.append(id)` must not copy the list (quadratic on a big PUT).
        _modify {
            switch type {
            case .asset: yield &self.assets
            case .assetCollection: yield &self.assetCollections
            case .collectionList: yield &self.collectionLists
            }
        }
    }
    public var isEmpty: Bool { self.assets.isEmpty && self.assetCollections.isEmpty && self.collectionLists.isEmpty }
    /// One list's length, all types together (`count(\.inserted)`).
    func count(_ list: KeyPath<ChangeLists, IdentifierList>) -> Int {
        self.assets[keyPath: list].count + self.assetCollections[keyPath: list].count + self.collectionLists[keyPath: list].count
    }
}


/// Limits and history retention.
public struct DomainConfiguration: Sendable {
    /// Items per mapping request (`limits.maxBatch`).
    public var maxBatch = 10_000
    /// Changes kept per device (`history.maxChanges`).
    public var historyMaxChanges = 100_000
    /// Age of the oldest change kept, seconds (`history.maxAge`, 30 days).
    public var historyMaxAge: Double = 30 * 24 * 3600
    /// Default and maximum `limit` of a changes page.
    public var defaultChangesLimit = 1000
    public var maxChangesLimit = 10_000
    /// Default and maximum `limit` of an objects page.
    public var defaultObjectsLimit = 1000
    public var maxObjectsLimit = 10_000
    /// Memory the in-memory mapping index may hold, in bytes (`mappingIndexMegabytes`); 0 turns it
    /// off (every mapping is answered from storage).
    public var mappingIndexBytes = 256 << 20
    /// An account used this recently is not evicted from the mapping index to admit another (the
    /// no-thrash admission; 0: least recently used is evicted, whenever it was used).
    public var mappingIndexProtectSeconds: Double = 30
    /// An account with more objects than this (over all its devices) and no current snapshot is
    /// loaded into the mapping index off the request path, storage answering meanwhile, instead of
    /// holding up the request that needed it (a million objects on two devices take seconds from
    /// the tables). 0: every load without a current snapshot goes to the background.
    public var mappingIndexInlineLoadObjects = 200_000
    /// Where the mapping index saves its accounts at shutdown and loads them from at the next start
    /// (`mappingIndexSnapshots`); nil: always loaded from the tables.
    public var mappingIndexSnapshots: (any MappingIndexSnapshotStore)?
    /// Per-account quotas (`quotas.*`); beyond one, `403 quotaExceeded` and nothing stored.
    public var quotas = Quotas()
    /// Byte bounds on what a caller leaves stored or is answered at once.
    public var dataBounds = DataBounds()
    public init() {}
}

/// A page of a list in its fixed order: at most `limit` items after the item whose
/// ID is `after` (from the start when nil).
public struct PageRequest: Sendable, Equatable {
    public var limit: Int?
    public var after: String?
    public init(limit: Int? = nil, after: String? = nil) {
        self.limit = limit
        self.after = after
    }

    /// The largest and default `limit`.
    public static let maxLimit = 1000

    /// The page of `items` (ordered, identified by `id`), and whether more follow it.
    /// `badRequest` naming `limit` out of 1...maxLimit or `after` naming no item of the list.
    public func apply<T>(_ items: [T], id: (T) -> String) throws(DomainError) -> (items: [T], hasMore: Bool) {
        let limit = self.limit ?? Self.maxLimit
        guard (1...Self.maxLimit).contains(limit) else {
            throw DomainError.badRequest(message: "limit must be 1 to \(Self.maxLimit).", field: "limit")
        }
        var start = 0
        if let after = self.after {
            guard let index = items.firstIndex(where: { id($0) == after }) else {
                throw DomainError.badRequest(message: "after names nothing in this list (the last ID of the previous page is expected).", field: "after")
            }
            start = index + 1
        }
        let end = min(items.count, start + limit)
        return (Array(items[start..<end]), end < items.count)
    }
}

/// How much one account may hold. Generous by default: they stop runaway clients,
/// not people.
public struct Quotas: Sendable, Equatable {
    public var devicesPerAccount = 1_000
    public var journalsPerAccount = 10_000
    public var entriesPerJournal = 10_000
    public var objectsPerDevice = 2_000_000
    /// Cloud records one account may hold. Records are kept while the account exists (a journal's
    /// cloud identifier stays resolvable after its object goes), so an account that keeps sending
    /// new content accumulates them beyond its objects.
    public var recordsPerAccount = 10_000_000
    public init() {}
}

/// The answer of `POST /v1/devices/{deviceID}/successor`.
public struct CreatedSuccessor: Sendable, Equatable {
    /// The new device and its token (shown once).
    public var device: CreatedDevice
    /// The device it took over from.
    public var replaces: String
    public var deviceID: String { self.device.deviceID }
    public var deviceToken: String { self.device.deviceToken }
}

/// The answer of `POST /v1/library/adopt`.
public struct AdoptionResult: Sendable, Equatable {
    public var adopted: Int
    public var alreadyLinked: Int
    public var unmatched: Int
    /// Records with several candidates: `{"cloudIdentifier","localIdentifiers"}`, sorted by cloud identifier.
    public var ambiguous: [(cloudIdentifier: String, localIdentifiers: [String])]
    public static func == (a: AdoptionResult, b: AdoptionResult) -> Bool {
        a.adopted == b.adopted && a.alreadyLinked == b.alreadyLinked && a.unmatched == b.unmatched
            && a.ambiguous.map(\.cloudIdentifier) == b.ambiguous.map(\.cloudIdentifier)
            && a.ambiguous.map(\.localIdentifiers) == b.ambiguous.map(\.localIdentifiers)
    }
}
