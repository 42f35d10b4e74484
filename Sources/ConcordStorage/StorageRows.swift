import ConcordDomain
import Foundation

/// One result row of either engine, read by column index. Both engines select the same columns in
/// the same order for devices and objects, so a row is turned into a domain value in one place.
protocol StorageRow {
    func isNull(_ column: Int32) -> Bool
    func int(_ column: Int32) -> Int64
    func double(_ column: Int32) -> Double
    func text(_ column: Int32) -> String
    func optionalText(_ column: Int32) -> String?
    /// A boolean column (SQLite: an integer, PostgreSQL: `boolean`).
    func flag(_ column: Int32) -> Bool
    /// An object's media type (SQLite: a code since migration 14, PostgreSQL: its name).
    func mediaType(_ column: Int32) -> MediaType
    /// An object's date as it was sent (SQLite: seconds for the canonical form since migration 14).
    func date(_ column: Int32) -> String?
    /// An object's creation second (SQLite selects `coalesce(creation_second, creation_date)`: the
    /// seconds of a canonical date stand for it since migration 14).
    func creationSecond(_ column: Int32) -> Int64?
}

extension Statement: StorageRow {
    func flag(_ column: Int32) -> Bool { self.int(column) != 0 }
    /// The empty text is `image` (migration 14).
    func mediaType(_ column: Int32) -> MediaType {
        let name = self.text(column)
        return name.isEmpty ? .image : MediaType(rawValue: name) ?? .unknown
    }
    /// A 5-byte BLOB is a canonical date's seconds (migration 14).
    func date(_ column: Int32) -> String? {
        guard self.isBlob(column) else { return self.optionalText(column) }
        return self.withBlob(column) { CompactDate.seconds(blob: $0) }.map(CompactDate.text)
    }
    /// An integer, or a canonical creation date's 5-byte seconds; a text date that is not a date's
    /// canonical form has no second (its creation_second was NULL).
    func creationSecond(_ column: Int32) -> Int64? {
        if self.isBlob(column) { return self.withBlob(column) { CompactDate.seconds(blob: $0) } }
        return self.isText(column) || self.isNull(column) ? nil : self.int(column)
    }
}

extension PGRow: StorageRow {
    func flag(_ column: Int32) -> Bool { self.bool(column) }
    func mediaType(_ column: Int32) -> MediaType { MediaType(rawValue: self.text(column)) ?? .unknown }
    func date(_ column: Int32) -> String? { self.optionalText(column) }
    func creationSecond(_ column: Int32) -> Int64? { self.isNull(column) ? nil : self.int(column) }
}

/// The codes both engines store, and the row layouts both engines select.
enum StorageRows {
    // MARK: - Code tables

    /// `devices.authorization` (SQLite) / `devices.authorization_status` (PostgreSQL).
    static func authorizationCode(_ status: AuthorizationStatus) -> Int64 {
        switch status {
        case .authorized: 0
        case .limited: 1
        case .denied: 2
        }
    }

    static func authorization(code: Int64) -> AuthorizationStatus {
        switch code {
        case 1: .limited
        case 2: .denied
        default: .authorized
        }
    }

    /// A token row: `kind` (`TokenKind`), the account ID, and the device ID of a device token.
    static func principal(_ r: some StorageRow, kind: Int32, accountID: Int32, deviceID: Int32) -> Principal? {
        switch TokenKind(rawValue: r.int(kind)) {
        case .account: .account(accountID: r.text(accountID))
        case .device: r.optionalText(deviceID).map { .device(DeviceRef(accountID: r.text(accountID), deviceID: $0)) }
        case nil: nil
        }
    }

    // MARK: - Devices

    /// The columns `device(_:)` selects, in this order (both engines).
    static let deviceColumns = "device_id, name, platform, created_at, %AUTH%, last_change_seq, pruned_through_seq, object_count, replaces, replaced_by"

    static func deviceState(_ r: some StorageRow, accountID: String) -> DeviceState {
        DeviceState(ref: DeviceRef(accountID: accountID, deviceID: r.text(0)), name: r.text(1), platform: r.optionalText(2),
                    createdAt: Date(timeIntervalSince1970: r.double(3)), authorization: Self.authorization(code: r.int(4)),
                    lastChangeSeq: r.int(5), prunedThroughSeq: r.int(6), objectCount: Int(r.int(7)),
                    replaces: r.optionalText(8), replacedBy: r.optionalText(9))
    }

    // MARK: - Journals

    /// The columns of a journal row, in the order `storedJournal` reads them (both engines).
    static let journalColumns = "journal_id, title, version, entry_count, created_seq, created_at, updated_at"
    /// The columns of a journal entry row, in the order `storedEntry` reads them (both engines).
    static let entryColumns = "journal_id, entry_id, text, photos, version, created_seq"

    static func storedJournal(_ r: some StorageRow) -> StoredJournal {
        StoredJournal(journalID: r.text(0), title: r.text(1), version: r.int(2), entryCount: Int(r.int(3)), createdSeq: r.int(4),
                      createdAt: r.double(5), updatedAt: r.double(6))
    }

    static func storedEntry(_ r: some StorageRow) -> StoredJournalEntry {
        let photos = r.text(3)
        // Cloud identifiers hold no control characters, so "\n" separates them unambiguously. Split on
        // bytes: splitting the String would walk grapheme clusters.
        return StoredJournalEntry(journalID: r.text(0), entryID: r.text(1), text: r.text(2),
                                  photos: photos.isEmpty ? [] : photos.utf8.split(separator: 10, omittingEmptySubsequences: false)
                                      .map { String(decoding: $0, as: UTF8.self) },
                                  version: r.int(4), createdSeq: r.int(5))
    }

    // MARK: - Objects

    /// Columns of an object row, its linked record's type and fingerprint (`LEFT JOIN records r`),
    /// then its photoKitCloudIdentifier.
    /// What an upsert of an object row sets when the object exists (both engines' `putObjects`).
    static let objectUpsertSet = """
        type = excluded.type, fingerprint = excluded.fingerprint, media_type = excluded.media_type,
        creation_date = excluded.creation_date, modification_date = excluded.modification_date,
        has_adjustments = excluded.has_adjustments, is_favorite = excluded.is_favorite, title = excluded.title,
        members = excluded.members, app_created = excluded.app_created, record_guid = excluded.record_guid,
        pk_identifier = excluded.pk_identifier, key_a = excluded.key_a, creation_second = excluded.creation_second
        """

    static let objectColumns = """
        o.local_id, o.type, o.fingerprint, o.media_type, o.creation_date, o.modification_date, o.has_adjustments, \
        o.is_favorite, o.title, o.members, o.app_created, o.record_guid, r.type, r.fingerprint, o.pk_identifier
        """

    /// `objectColumns`' layout read from an upload's objects (`upload_objects u`): no link.
    static let uploadObjectColumns = """
        u.local_id, u.type, u.fingerprint, u.media_type, u.creation_date, u.modification_date, u.has_adjustments, \
        u.is_favorite, u.title, u.members, u.app_created, NULL, NULL, NULL, u.pk_identifier
        """

    static func libraryObject(_ r: some StorageRow) -> LibraryObject {
        let members = r.text(9)
        return LibraryObject(
            localIdentifier: r.text(0), type: ObjectType(rawValue: Int(r.int(1))) ?? .asset, fingerprint: r.text(2),
            mediaType: r.mediaType(3), creationDate: r.date(4), modificationDate: r.date(5),
            hasAdjustments: r.flag(6), isFavorite: r.flag(7), title: r.optionalText(8),
            // Local identifiers contain no control characters, so "\n" separates members unambiguously.
            members: members.isEmpty ? [] : members.split(separator: "\n", omittingEmptySubsequences: false).map(String.init),
            appCreated: r.flag(10), photoKitCloudIdentifier: r.optionalText(14))
    }

    static func storedObject(_ r: some StorageRow) -> StoredObject {
        let object = self.libraryObject(r)
        var link: CloudRecord?
        if let guid = r.optionalText(11), !r.isNull(12), let type = ObjectType(rawValue: Int(r.int(12))) {
            link = CloudRecord(guid: guid, type: type, fingerprint: r.text(13))
        }
        return StoredObject(object: object, link: link)
    }
}

extension ObjectKey {
    /// The keys' A parts, grouped with their types, as both engines bind them.
    static func columns(_ keys: [ObjectKey]) -> (types: [Int64], a: [String]) {
        (keys.map { Int64($0.type.rawValue) }, keys.map(\.a))
    }
}

/// A row read from column `by` on: an object row selected after leading columns of its own.
struct ShiftedRow<Row: StorageRow>: StorageRow {
    let row: Row
    let by: Int32
    func isNull(_ column: Int32) -> Bool { self.row.isNull(column + self.by) }
    func int(_ column: Int32) -> Int64 { self.row.int(column + self.by) }
    func double(_ column: Int32) -> Double { self.row.double(column + self.by) }
    func text(_ column: Int32) -> String { self.row.text(column + self.by) }
    func optionalText(_ column: Int32) -> String? { self.row.optionalText(column + self.by) }
    func flag(_ column: Int32) -> Bool { self.row.flag(column + self.by) }
    func mediaType(_ column: Int32) -> MediaType { self.row.mediaType(column + self.by) }
    func date(_ column: Int32) -> String? { self.row.date(column + self.by) }
    func creationSecond(_ column: Int32) -> Int64? { self.row.creationSecond(column + self.by) }
}

/// A device's wanted list from storage, as both engines select it: first the candidate rows
/// (a record's GUID, its type, one linked object's creation second or null), then, when there is a
/// candidate, the device's unlinked objects without a fingerprint (local identifier, type, creation
/// second or null), and its keyless objects without a fingerprint linked to a record with neither
/// fingerprint nor key (local identifier, type).
struct WantedRows {
    private var linked: [String: (type: ObjectType, seconds: [Int64?])] = [:]
    private var candidates = WantedCandidates()
    private var objects: [(localIdentifier: String, type: ObjectType, creationSecond: Int64?)] = []
    private var linkedToBareRecords: [(localIdentifier: String, type: ObjectType)] = []

    mutating func addCandidate(_ r: some StorageRow) {
        guard let type = ObjectType(rawValue: Int(r.int(1))) else { return }
        self.linked[r.text(0), default: (type, [])].seconds.append(r.creationSecond(2))
    }

    /// After the candidate rows: false when there is no candidate (nothing can be wanted).
    mutating func candidatesFound() -> Bool {
        for (type, seconds) in self.linked.values { self.candidates.add(type: type, linkedSeconds: seconds) }
        return !self.candidates.types.isEmpty
    }

    mutating func addObject(_ r: some StorageRow) {
        if let type = ObjectType(rawValue: Int(r.int(1))) { self.objects.append((r.text(0), type, r.creationSecond(2))) }
    }

    /// A keyless, fingerprint-less object linked to a bare record (local_id, type): wanted whatever the candidates.
    mutating func addLinkedToBareRecord(_ r: some StorageRow) {
        if let type = ObjectType(rawValue: Int(r.int(1))) { self.linkedToBareRecords.append((r.text(0), type)) }
    }

    func page(after: String?, limit: Int) -> WantedPage {
        self.candidates.page(self.objects, linkedToBareRecords: self.linkedToBareRecords, after: after, limit: limit)
    }
}
