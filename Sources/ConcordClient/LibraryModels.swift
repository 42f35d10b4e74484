import Foundation

/// A photo, video or audio file of the device's library (`assets` in the API).
public struct Asset: Sendable, Hashable, Codable {
    /// `mediaType` values, as PhotoKit's `PHAssetMediaType`.
    public enum MediaType: String, Sendable, Hashable, Codable {
        case image, video, audio, unknown
    }

    public var localIdentifier: String
    /// Base64url of the original resource's content hash (see `Fingerprint`). Nil: unknown
    /// (an original not on the device yet): omitted when sent, so the server keeps what it has;
    /// read back as nil while the server has none. Such an asset is matched by its key only.
    public var fingerprint: String?
    /// PhotoKit's `PHCloudIdentifier.stringValue` for the asset (`A:001:H`); its key
    /// matches the asset on every device of the same iCloud library with no hashing. Nil:
    /// omitted, the server keeps what it has. `PhotoKitCloudIdentifier` checks one before upload.
    public var photoKitCloudIdentifier: String?
    /// Nil: the server's default, `image`.
    public var mediaType: MediaType?
    /// Send it: `GET /v1/library/wanted` compares creation dates to the second.
    public var creationDate: Date?
    public var modificationDate: Date?
    public var hasAdjustments: Bool?
    public var isFavorite: Bool?

    public init(localIdentifier: String, fingerprint: String? = nil, photoKitCloudIdentifier: String? = nil, mediaType: MediaType? = nil, creationDate: Date? = nil, modificationDate: Date? = nil, hasAdjustments: Bool? = nil, isFavorite: Bool? = nil) {
        self.localIdentifier = localIdentifier
        self.fingerprint = fingerprint
        self.photoKitCloudIdentifier = photoKitCloudIdentifier
        self.mediaType = mediaType
        self.creationDate = creationDate
        self.modificationDate = modificationDate
        self.hasAdjustments = hasAdjustments
        self.isFavorite = isFavorite
    }
}

/// An album (`assetCollections` in the API), like `PHAssetCollection`.
public struct AssetCollection: Sendable, Hashable, Codable {
    public var localIdentifier: String
    /// A stable hash the app chooses (of the title, say). Nil: unknown, omitted when sent.
    public var fingerprint: String?
    /// PhotoKit's `PHCloudIdentifier.stringValue` for the album (`A:040:H`); nil: omitted.
    public var photoKitCloudIdentifier: String?
    public var title: String?
    /// The album's assets, by local identifier, in order.
    public var assets: [String]?
    public var appCreated: Bool?

    public init(localIdentifier: String, fingerprint: String? = nil, photoKitCloudIdentifier: String? = nil, title: String? = nil, assets: [String]? = nil, appCreated: Bool? = nil) {
        self.localIdentifier = localIdentifier
        self.fingerprint = fingerprint
        self.photoKitCloudIdentifier = photoKitCloudIdentifier
        self.title = title
        self.assets = assets
        self.appCreated = appCreated
    }
}

/// A folder (`collectionLists` in the API), like `PHCollectionList`.
public struct CollectionList: Sendable, Hashable, Codable {
    public var localIdentifier: String
    /// A stable hash the app chooses. Nil: unknown, omitted when sent.
    public var fingerprint: String?
    /// PhotoKit's `PHCloudIdentifier.stringValue` for the folder (`A:020:H`); nil: omitted.
    public var photoKitCloudIdentifier: String?
    public var title: String?
    /// The folder's albums and folders, by local identifier.
    public var collections: [String]?

    public init(localIdentifier: String, fingerprint: String? = nil, photoKitCloudIdentifier: String? = nil, title: String? = nil, collections: [String]? = nil) {
        self.localIdentifier = localIdentifier
        self.fingerprint = fingerprint
        self.photoKitCloudIdentifier = photoKitCloudIdentifier
        self.title = title
        self.collections = collections
    }
}

/// Upserts and deletes of one object type.
public struct ObjectChanges<Object: Sendable & Hashable & Codable>: Sendable, Hashable, Codable {
    public var upsert: [Object]
    /// Local identifiers to delete (unknown ones are ignored).
    public var delete: [String]

    public init(upsert: [Object] = [], delete: [String] = []) {
        self.upsert = upsert
        self.delete = delete
    }
}

/// An incremental change of the library, applied atomically as one history entry.
public struct LibraryChanges: Sendable, Hashable, Codable {
    public var assets: ObjectChanges<Asset>?
    public var assetCollections: ObjectChanges<AssetCollection>?
    public var collectionLists: ObjectChanges<CollectionList>?

    public init(assets: ObjectChanges<Asset>? = nil, assetCollections: ObjectChanges<AssetCollection>? = nil, collectionLists: ObjectChanges<CollectionList>? = nil) {
        self.assets = assets
        self.assetCollections = assetCollections
        self.collectionLists = collectionLists
    }
}

/// The whole library, for `replaceLibrary`.
public struct LibrarySnapshot: Sendable, Hashable, Codable {
    public var assets: [Asset]
    public var assetCollections: [AssetCollection]
    public var collectionLists: [CollectionList]

    public init(assets: [Asset] = [], assetCollections: [AssetCollection] = [], collectionLists: [CollectionList] = []) {
        self.assets = assets
        self.assetCollections = assetCollections
        self.collectionLists = collectionLists
    }
}

/// What an upload did: the new token and counts of objects of all types.
public struct LibraryChangeResult: Sendable, Hashable, Codable {
    /// The library's token after the change (unchanged when nothing changed).
    public var changeToken: ChangeToken
    public var inserted: Int
    public var updated: Int
    public var deleted: Int
    public var unchanged: Int
}

/// A device's answer to the photo library permission prompt (`PHAuthorizationStatus`).
public enum AuthorizationStatus: String, Sendable, Hashable, Codable {
    case authorized, limited, denied
}

/// An object as the server stores it.
public enum LibraryObject: Sendable, Hashable, Decodable {
    case asset(Asset)
    case assetCollection(AssetCollection)
    case collectionList(CollectionList)

    /// Its local identifier.
    public var localIdentifier: String {
        switch self {
        case .asset(let o): o.localIdentifier
        case .assetCollection(let o): o.localIdentifier
        case .collectionList(let o): o.localIdentifier
        }
    }

    /// Its fingerprint; nil while the server has none.
    public var fingerprint: String? {
        switch self {
        case .asset(let o): o.fingerprint
        case .assetCollection(let o): o.fingerprint
        case .collectionList(let o): o.fingerprint
        }
    }

    /// Its PhotoKit cloud identifier string; nil while the server has none.
    public var photoKitCloudIdentifier: String? {
        switch self {
        case .asset(let o): o.photoKitCloudIdentifier
        case .assetCollection(let o): o.photoKitCloudIdentifier
        case .collectionList(let o): o.photoKitCloudIdentifier
        }
    }

    private enum Keys: String, CodingKey { case type }

    public init(from decoder: any Decoder) throws {
        let type = try decoder.container(keyedBy: Keys.self).decode(String.self, forKey: .type)
        switch type {
        case "assets": self = .asset(try Asset(from: decoder))
        case "assetCollections": self = .assetCollection(try AssetCollection(from: decoder))
        case "collectionLists": self = .collectionList(try CollectionList(from: decoder))
        default:
            throw DecodingError.dataCorruptedError(forKey: .type, in: try decoder.container(keyedBy: Keys.self), debugDescription: "Unknown type \(type)")
        }
    }
}

/// One page of `objects(ofType:after:limit:)`.
public struct LibraryObjectPage: Sendable, Hashable, Decodable {
    public var objects: [LibraryObject]
    /// Pass as `after` for the next page; nil on the last.
    public var next: String?
}

/// The object types of the library and of its change history, as PhotoKit's
/// `PHObjectType`; raw values are the API's part names.
public enum PersistentObjectType: String, Sendable, Hashable, CaseIterable, Codable {
    case asset = "assets"
    case assetCollection = "assetCollections"
    case collectionList = "collectionLists"

    /// The type's code in identifiers (`001`, `040`, `020`).
    public var cloudObjectType: CloudObjectType {
        switch self {
        case .asset: .asset
        case .assetCollection: .assetCollection
        case .collectionList: .collectionList
        }
    }
}
