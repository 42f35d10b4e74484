import Foundation

/// PhotoKit's own cloud identifier of a photo, album or folder, as the device's PhotoKit spells
/// it (`PHCloudIdentifier.stringValue`, `archivalStringValue` on newer systems), checked by the
/// contract's rule for `photoKitCloudIdentifier` (`A:C:H`) before it is uploaded.
///
/// `A:C:H`: exactly three parts separated by `:`; A (the iCloud record) of 1–128 bytes and H
/// (PhotoKit's content hash) of 0–128 bytes, both printable ASCII 0x21–0x7E without `:`; C the
/// object's own type code (`001` asset, `040` album, `020` folder). The object's **key** is
/// (A, C): devices signed in to the same iCloud Photos library see the same key for the same
/// photo, and the server matches them by it with no content hashing.
///
/// No Photos import: on Apple platforms pass `PHCloudIdentifier.stringValue`, on Linux any string.
///
/// ```swift
/// let mapped = PHPhotoLibrary.shared().cloudIdentifierMappings(forLocalIdentifiers: ids)
/// let strings = mapped.compactMapValues { $0.cloudIdentifier?.stringValue }
/// let (keyed, rejected) = PhotoKitCloudIdentifier.keyed(assets, stringValues: strings)
/// ```
public struct PhotoKitCloudIdentifier: Sendable, Hashable, CustomStringConvertible {
    /// What a key-matching server compares: the record part A and the type code C.
    public struct Key: Sendable, Hashable, CustomStringConvertible {
        /// A, compared byte for byte.
        public let recordName: String
        /// C.
        public let objectType: CloudObjectType
        public var description: String { "\(self.recordName):\(self.objectType.rawValue)" }
    }

    /// The parts of `A:C:H`.
    public enum Part: String, Sendable, Hashable {
        case recordName, typeCode, contentHash
    }

    /// Why a string is not a valid `photoKitCloudIdentifier` for the object (the server would
    /// answer `400 badRequest` naming the field, and store nothing of the request).
    public enum ValidationError: Error, Sendable, Hashable, CustomStringConvertible {
        /// Not exactly three parts separated by `:` (the count found).
        case partCount(Int)
        /// A is empty.
        case emptyRecordName
        /// A or H is longer than 128 bytes (the length found).
        case tooLong(Part, bytes: Int)
        /// A or H holds a byte outside printable ASCII 0x21–0x7E (a space, a control character,
        /// anything beyond ASCII), at this offset within the part.
        case invalidCharacter(Part, offset: Int)
        /// C is not the object's type code (the code found, the one expected).
        case typeCode(String, expected: CloudObjectType)

        public var description: String {
            switch self {
            case .partCount(let n): "A:C:H has exactly three parts separated by ':', not \(n)"
            case .emptyRecordName: "A (the record part) is empty"
            case .tooLong(let part, let bytes): "\(part.rawValue) is \(bytes) bytes, more than 128"
            case .invalidCharacter(let part, let offset): "\(part.rawValue) has a byte outside printable ASCII (0x21–0x7E) at \(offset)"
            case .typeCode(let found, let expected): "type code \(found) is not the object's, \(expected.rawValue)"
            }
        }
    }

    /// The string as PhotoKit gave it; this is what is uploaded.
    public let stringValue: String
    /// The object's key, (A, C).
    public let key: Key
    /// H, PhotoKit's own content hash, kept as sent and ignored for matching (may be empty).
    public let contentHash: String

    /// Checks `stringValue` for an object of `objectType`; throws `ValidationError` saying what
    /// is wrong.
    public init(_ stringValue: String, objectType: CloudObjectType) throws(ValidationError) {
        let parts = stringValue.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .partCount(parts.count) }
        let a = parts[0], c = parts[1], h = parts[2]
        guard !a.isEmpty else { throw .emptyRecordName }
        try Self.check(a, .recordName)
        guard String(c) == objectType.rawValue else { throw .typeCode(String(c), expected: objectType) }
        try Self.check(h, .contentHash)
        self.stringValue = stringValue
        self.key = Key(recordName: String(a), objectType: objectType)
        self.contentHash = String(h)
    }

    /// The key of the object whose PhotoKit identifier is `stringValue`, when it is valid for an
    /// object of `objectType`.
    public static func key(_ stringValue: String, objectType: CloudObjectType) throws(ValidationError) -> Key {
        try PhotoKitCloudIdentifier(stringValue, objectType: objectType).key
    }

    public var description: String { self.stringValue }

    /// A part's length (at most 128 bytes) and bytes (printable ASCII; `:` cannot occur, it
    /// separates the parts).
    private static func check(_ part: Substring, _ name: Part) throws(ValidationError) {
        let bytes = part.utf8
        guard bytes.count <= 128 else { throw .tooLong(name, bytes: bytes.count) }
        if let bad = bytes.firstIndex(where: { $0 < 0x21 || $0 > 0x7E }) {
            throw .invalidCharacter(name, offset: bytes.distance(from: bytes.startIndex, to: bad))
        }
    }
}

/// A library object that can carry PhotoKit's cloud identifier: `Asset`, `AssetCollection`,
/// `CollectionList`.
public protocol PhotoKitIdentifiable: Sendable {
    /// The type code PhotoKit writes in the object's identifiers.
    static var cloudObjectType: CloudObjectType { get }
    var localIdentifier: String { get }
    var photoKitCloudIdentifier: String? { get set }
}

extension Asset: PhotoKitIdentifiable {
    public static var cloudObjectType: CloudObjectType { .asset }
}

extension AssetCollection: PhotoKitIdentifiable {
    public static var cloudObjectType: CloudObjectType { .assetCollection }
}

extension CollectionList: PhotoKitIdentifiable {
    public static var cloudObjectType: CloudObjectType { .collectionList }
}

extension PhotoKitIdentifiable {
    /// Sets `photoKitCloudIdentifier` to `stringValue` once it is valid for this object's type
    /// (and answers its key); throws, leaving the object unchanged, when it is not.
    @discardableResult
    public mutating func setPhotoKitCloudIdentifier(_ stringValue: String) throws(PhotoKitCloudIdentifier.ValidationError) -> PhotoKitCloudIdentifier.Key {
        let checked = try PhotoKitCloudIdentifier(stringValue, objectType: Self.cloudObjectType)
        self.photoKitCloudIdentifier = checked.stringValue
        return checked.key
    }
}

extension PhotoKitCloudIdentifier {
    /// Turns PhotoKit's answers into uploads: each object whose local identifier has a string in
    /// `stringValues` (local identifier → `PHCloudIdentifier.stringValue`) gets it as its
    /// `photoKitCloudIdentifier` when it is valid for the object's type. Every object is kept, in
    /// order: one with no string, or an invalid one, goes without a key (it can still be matched
    /// by fingerprint), and the invalid ones are listed in `rejected` by local identifier, so one
    /// odd identifier never fails the whole upload with `400`.
    public static func keyed<Object: PhotoKitIdentifiable>(
        _ objects: [Object], stringValues: [String: String]
    ) -> (objects: [Object], rejected: [String: ValidationError]) {
        var rejected: [String: ValidationError] = [:]
        let keyed = objects.map { object in
            guard let string = stringValues[object.localIdentifier] else { return object }
            var copy = object
            do throws(ValidationError) {
                try copy.setPhotoKitCloudIdentifier(string)
            } catch {
                rejected[object.localIdentifier] = error
            }
            return copy
        }
        return (keyed, rejected)
    }
}
