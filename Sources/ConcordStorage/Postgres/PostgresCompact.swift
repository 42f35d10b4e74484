import ConcordBytes
import ConcordDomain
import Foundation

/// How PostgreSQL stores record GUIDs, fingerprints and object dates since migration 14
/// (docs/scaling.md, "Storage layout"). Every form is one-to-one on the strings it stores, so
/// equality in SQL is equality of the strings, and reading gives back exactly the text written.
enum PostgresCompact {
    // MARK: - GUIDs: `uuid`

    /// The 16 bytes of a record GUID in the canonical upper-case spelling the domain writes; nil for
    /// any other text (which no stored record has: such a GUID matches nothing).
    static func guid(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { UUIDBits(bytes: $0)?.bigEndianBytes }
    }

    static func guids(_ texts: [String]) -> PGValue { .uuidArray(texts.map(Self.guid)) }

    /// A GUID to store: the domain only makes canonical UUIDs; any other text is refused.
    static func storedGUID(_ text: String) throws -> [UInt8] {
        guard let bytes = Self.guid(text) else { throw DomainError.badRequest(message: "A record GUID must be an upper-case UUID.", field: nil) }
        return bytes
    }

    static func guidText(_ bytes: UnsafeRawBufferPointer) -> String { UUIDBits(bigEndianBytes: bytes).string }

    // MARK: - Fingerprints: `bytea`

    /// A fingerprint's stored bytes. Fingerprints are opaque strings; most are canonical unpadded
    /// base64url (a SHA-256's 43 characters), stored as the bytes they encode (32). Every other
    /// text is stored as a 0x00 byte followed by its UTF-8, and so is a base64url text whose bytes
    /// begin with 0x00 (the tag keeps the two forms apart). The empty fingerprint (none) is empty.
    /// Migration 14's `concord_fingerprint` applies the same rule in SQL.
    static func fingerprint(_ text: String) -> [UInt8] { FingerprintBytes.stored(text) }

    static func fingerprints(_ texts: [String]) -> PGValue { .byteaArray(texts.map(Self.fingerprint)) }

    static func fingerprintText(_ bytes: UnsafeRawBufferPointer) -> String { FingerprintBytes.text(bytes) }

    // MARK: - Dates: seconds, or the text as sent

    /// The seconds of a date written exactly `YYYY-MM-DDTHH:MM:SSZ` (years 1000–9999), whose
    /// formatting gives back the same text; nil for any other spelling, which is stored as sent.
    static func canonicalSecond(_ text: String?) -> Int64? {
        guard let text, text.utf8.first != UInt8(ascii: "0"), let s = CompactDate.seconds(text), CompactDate.text(s) == text else { return nil }
        return s
    }

    /// An object's creation date as stored: `creation_second` is the date's second (the wanted
    /// rule reads it, whatever the spelling), and `creation_date` holds the text only when the
    /// second does not spell it.
    static func creation(_ object: LibraryObject) -> (second: Int64?, text: String?) {
        let second = object.creationSecond
        if let s = Self.canonicalSecond(object.creationDate), s == second { return (s, nil) }
        return (second, object.creationDate)
    }

    /// An object's modification date as stored: its second when canonical, else the text.
    static func modification(_ object: LibraryObject) -> (second: Int64?, text: String?) {
        if let s = Self.canonicalSecond(object.modificationDate) { return (s, nil) }
        return (nil, object.modificationDate)
    }

    /// A date read back: the text when one is stored, else the canonical spelling of the second.
    static func date(text: String?, second: Int64?) -> String? { text ?? second.map(CompactDate.text) }
}

extension PGRow {
    func guid(_ column: Int32) -> String { self.withBytes(column) { PostgresCompact.guidText($0) } }
    func optionalGUID(_ column: Int32) -> String? { self.isNull(column) ? nil : self.guid(column) }
    func fingerprint(_ column: Int32) -> String { self.withBytes(column) { PostgresCompact.fingerprintText($0) } }
    func optionalInt(_ column: Int32) -> Int64? { self.isNull(column) ? nil : self.int(column) }
}

/// The object rows PostgreSQL selects (`columns`, from `objects o`, its link `links l` and the
/// linked record `records r`: migration 17 joins them by object number and record order), read in
/// one place.
enum PostgresObjectRows {
    static let columns = """
        o.local_id, o.type, o.fingerprint, o.media_type, o.creation_second, o.creation_date, o.modification_second, \
        o.modification_date, o.has_adjustments, o.is_favorite, o.title, o.members, o.app_created, o.pk_identifier, \
        r.record, r.type, r.fingerprint
        """
    /// `columns`' joins after `FROM objects o`.
    static let joins = """
        LEFT JOIN links l ON l.device_key = o.device_key AND l.object_no = o.object_no
        LEFT JOIN records r ON r.account_key = l.account_key AND r.created_order = l.record_order
        """
    static let count: Int32 = 17

    /// Media types by code; NULL is `image`, most of a library, which then takes no bytes.
    static func mediaTypeCode(_ type: MediaType) -> String? { type == .image ? nil : type.rawValue }

    static func libraryObject(_ r: PGRow, at c: Int32 = 0) -> LibraryObject {
        let members = r.text(c + 11)
        return LibraryObject(
            localIdentifier: r.text(c), type: ObjectType(rawValue: Int(r.int(c + 1))) ?? .asset, fingerprint: r.fingerprint(c + 2),
            mediaType: r.isNull(c + 3) ? .image : MediaType(rawValue: r.text(c + 3)) ?? .unknown,
            creationDate: PostgresCompact.date(text: r.optionalText(c + 5), second: r.optionalInt(c + 4)),
            modificationDate: PostgresCompact.date(text: r.optionalText(c + 7), second: r.optionalInt(c + 6)),
            hasAdjustments: r.bool(c + 8), isFavorite: r.bool(c + 9), title: r.optionalText(c + 10),
            // Local identifiers contain no control characters, so "\n" separates members unambiguously.
            members: members.isEmpty ? [] : members.split(separator: "\n", omittingEmptySubsequences: false).map(String.init),
            appCreated: r.bool(c + 12), photoKitCloudIdentifier: r.optionalText(c + 13))
    }

    static func storedObject(_ r: PGRow, at c: Int32 = 0) -> StoredObject {
        var link: CloudRecord?
        if !r.isNull(c + 14), !r.isNull(c + 15), let type = ObjectType(rawValue: Int(r.int(c + 15))) {
            link = CloudRecord(guid: r.guid(c + 14), type: type, fingerprint: r.fingerprint(c + 16))
        }
        return StoredObject(object: self.libraryObject(r, at: c), link: link)
    }
}
