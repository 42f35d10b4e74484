import ConcordSHA256
import Foundation

/// The type of object a cloud identifier names, as the code in its middle part.
public enum CloudObjectType: String, Sendable, Hashable, CaseIterable, Codable {
    /// `001`: an asset (photo, video).
    case asset = "001"
    /// `040`: an asset collection (album).
    case assetCollection = "040"
    /// `020`: a collection list (folder).
    case collectionList = "020"
}

/// An account-wide identifier of a photo, album or folder, `<GUID>:<type>:<fingerprint>`,
/// PhotoKit's `PHCloudIdentifier` layout.
///
/// Like `PHCloudIdentifier(stringValue:)` it holds any string: apps store and send back what
/// the server handed out, and a string that does not parse is answered by the server as a
/// per-item `invalidIdentifier`, never a failed request. The parsed parts are offered for
/// inspection; equality is that of `stringValue`.
public struct CloudIdentifier: Sendable, Hashable, Codable, CustomStringConvertible, LosslessStringConvertible {
    /// The identifier as the server writes it; store this and pass it back.
    public let stringValue: String

    /// Wraps a stored identifier string (not validated, as PhotoKit's does not).
    public init(stringValue: String) {
        self.stringValue = stringValue
    }

    /// Builds `<GUID>:<type>:<fingerprint>` with the GUID in upper case, as the server writes it;
    /// without a fingerprint, `<GUID>:<type>:` (a record made without one, as PhotoKit writes albums).
    public init(guid: UUID, type: CloudObjectType, fingerprint: String? = nil) {
        self.stringValue = "\(guid.uuidString.uppercased()):\(type.rawValue):\(fingerprint ?? "")"
    }

    /// `LosslessStringConvertible`: the same as `init(stringValue:)`.
    public init(_ description: String) {
        self.init(stringValue: description)
    }

    /// The record's GUID, or nil when the string does not parse.
    public var guid: UUID? { self.parts?.guid }
    /// The object type, or nil when the string does not parse.
    public var objectType: CloudObjectType? { self.parts?.type }
    /// The fingerprint of the content the record was created from; empty for PhotoKit-style
    /// album identifiers (`<GUID>:040:`); nil when the string does not parse.
    public var fingerprint: String? { self.parts?.fingerprint }
    /// True when the string has the `<GUID>:<type>:<fingerprint>` layout.
    public var isWellFormed: Bool { self.parts != nil }

    /// True when both name the same cloud record: equal GUID and type, whatever
    /// the fingerprint part or the GUID's letter case.
    public func isSameRecord(as other: CloudIdentifier) -> Bool {
        guard let a = self.parts, let b = other.parts else { return false }
        return a.guid == b.guid && a.type == b.type
    }

    public var description: String { self.stringValue }

    /// Encodes as the bare string, the way the API carries it.
    public init(from decoder: any Decoder) throws {
        self.stringValue = try decoder.singleValueContainer().decode(String.self)
    }

    /// Encodes as the bare string, the way the API carries it.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self.stringValue)
    }

    /// GUID (either case), a known type code, and a fingerprint part that is empty or
    /// base64url: the identifier's layout. Bounds of the fingerprint are the server's to check.
    private var parts: (guid: UUID, type: CloudObjectType, fingerprint: String)? {
        let pieces = self.stringValue.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard pieces.count == 3, pieces[0].utf8.count == 36,
            let guid = UUID(uuidString: String(pieces[0])),
            let type = CloudObjectType(rawValue: String(pieces[1]))
        else { return nil }
        let fingerprint = String(pieces[2])
        let base64url = fingerprint.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                return true
            default:
                return false
            }
        }
        return base64url ? (guid, type, fingerprint) : nil
    }
}

/// Helpers to compute fingerprints in the form the API wants.
public enum Fingerprint {
    /// Base64url without padding (RFC 4648 §5), the encoding of fingerprints:
    /// pass the 16–64 bytes of a content hash (SHA-256 of the original resource is recommended).
    public static func base64URL(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The recommended fingerprint of content held in memory: its SHA-256, base64url. (For a
    /// resource read in pieces, hash as it arrives, with CryptoKit's `SHA256` say, and pass the
    /// digest to `base64URL`.)
    public static func sha256(_ bytes: some Sequence<UInt8>) -> String {
        self.base64URL(SHA256.hash(bytes))
    }
}
