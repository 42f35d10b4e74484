import ConcordDomain
import Foundation

/// The store's operations on one connection inside one transaction. Lists of identifiers are
/// bound as one JSON array and expanded with `json_each`, so a batch is one statement.
final class SQLiteTransaction: StoreWriteTransaction {
    let db: Connection

    init(_ db: Connection) { self.db = db }

    // MARK: - Batch queries (json_each drives the join: CROSS JOIN fixes it as the outer loop, so
    // each identifier is one index lookup instead of a scan of the library). Without ANALYZE
    // statistics the planner prefers the primary key's (account, device) prefix over the content
    // index when all columns are read, hence INDEXED BY (checked by QueryPlanTests).

    static let objectsByLocalIDsSQL = """
            SELECT \(SQLiteTransaction.objectColumns) FROM json_each(?3) j
            CROSS JOIN objects o ON o.account_id = ?1 AND o.device_id = ?2 AND o.local_id = j.value
            \(SQLiteTransaction.linkJoin)
            """

    static let objectsByContentSQL = """
            SELECT \(SQLiteTransaction.objectColumns) FROM json_each(?3) j
            CROSS JOIN objects o INDEXED BY objects_by_content ON o.account_id = ?1 AND o.device_id = ?2
                AND o.type = json_extract(j.value, '$[0]') AND o.fingerprint = json_extract(j.value, '$[1]')
            \(SQLiteTransaction.linkJoin)
            ORDER BY o.local_id
            """

    static let recordsByGUIDSQL = """
            SELECT r.guid, r.type, r.fingerprint FROM json_each(?2) j
            CROSS JOIN records r ON r.account_id = ?1 AND r.guid = j.value
            """

    static let linkedObjectsSQL = """
            SELECT o.record_guid, o.local_id FROM json_each(?3) j
            CROSS JOIN objects o ON o.account_id = ?1 AND o.device_id = ?2 AND o.record_guid = j.value
            """

    static let unlinkedRecordsSQL = """
            SELECT r.guid, r.type, r.fingerprint FROM json_each(?3) j
            CROSS JOIN records r ON r.account_id = ?1
                AND r.type = json_extract(j.value, '$[0]') AND r.fingerprint = json_extract(j.value, '$[1]')
            WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.account_id = ?1 AND o.device_id = ?2 AND o.record_guid = r.guid)
            ORDER BY r.created_order
            """

    // MARK: - Settings, tokens, accounts, devices

    func setting(_ key: String) throws -> [UInt8]? {
        var value: [UInt8]?
        try self.db.query("SELECT value FROM settings WHERE key = ?", [.text(key)]) { s in value = s.blob(0) }
        return value
    }

    func setSetting(_ key: String, _ value: [UInt8]) throws {
        try self.db.run("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        [.text(key), .blob(value)])
    }

    func principal(tokenHash: [UInt8]) throws -> Principal? {
        var result: Principal?
        try self.db.query("SELECT kind, account_id, device_id FROM tokens WHERE token_hash = ?", [.blob(tokenHash)]) { s in
            switch s.int(0) {
            case 1: result = .account(accountID: s.text(1))
            case 2: if let d = s.optionalText(2) { result = .device(DeviceRef(accountID: s.text(1), deviceID: d)) }
            default: result = nil
            }
        }
        return result
    }

    func accountExists(_ accountID: String) throws -> Bool {
        try self.db.scalarInt("SELECT 1 FROM accounts WHERE account_id = ?", [.text(accountID)]) != nil
    }

    func insertAccount(accountID: String, name: String, tokenHash: [UInt8], createdAt: Date) throws {
        try self.db.run("INSERT INTO accounts (account_id, name, created_at) VALUES (?, ?, ?)",
                        [.text(accountID), .text(name), .double(createdAt.timeIntervalSince1970)])
        try self.db.run("INSERT INTO tokens (token_hash, kind, account_id, device_id) VALUES (?, 1, ?, NULL)",
                        [.blob(tokenHash), .text(accountID)])
    }

    private static let deviceColumns = "account_id, device_id, name, platform, created_at, authorization, last_change_seq, pruned_through_seq, object_count"

    private static func deviceState(_ s: Statement) -> DeviceState {
        let auth: AuthorizationStatus = switch s.int(5) { case 1: .limited; case 2: .denied; default: .authorized }
        return DeviceState(ref: DeviceRef(accountID: s.text(0), deviceID: s.text(1)), name: s.text(2), platform: s.optionalText(3),
                           createdAt: Date(timeIntervalSince1970: s.double(4)), authorization: auth,
                           lastChangeSeq: s.int(6), prunedThroughSeq: s.int(7), objectCount: Int(s.int(8)))
    }

    func device(_ device: DeviceRef) throws -> DeviceState? {
        var result: DeviceState?
        try self.db.query("SELECT \(Self.deviceColumns) FROM devices WHERE account_id = ? AND device_id = ?",
                          [.text(device.accountID), .text(device.deviceID)]) { s in result = Self.deviceState(s) }
        return result
    }

    func devices(accountID: String) throws -> [DeviceState] {
        var result: [DeviceState] = []
        try self.db.query("SELECT \(Self.deviceColumns) FROM devices WHERE account_id = ? ORDER BY created_at, device_id",
                          [.text(accountID)]) { s in result.append(Self.deviceState(s)) }
        return result
    }

    func insertDevice(_ device: DeviceRef, name: String, platform: String?, tokenHash: [UInt8], createdAt: Date) throws {
        try self.db.run("INSERT INTO devices (account_id, device_id, name, platform, created_at) VALUES (?, ?, ?, ?, ?)",
                        [.text(device.accountID), .text(device.deviceID), .text(name), platform.map { .text($0) } ?? .null,
                         .double(createdAt.timeIntervalSince1970)])
        try self.db.run("INSERT INTO tokens (token_hash, kind, account_id, device_id) VALUES (?, 2, ?, ?)",
                        [.blob(tokenHash), .text(device.accountID), .text(device.deviceID)])
    }

    func deleteDevice(_ device: DeviceRef) throws -> Bool {
        let key: [SQLValue] = [.text(device.accountID), .text(device.deviceID)]
        let n = try self.db.run("DELETE FROM devices WHERE account_id = ? AND device_id = ?", key)
        guard n > 0 else { return false }
        try self.db.run("DELETE FROM objects WHERE account_id = ? AND device_id = ?", key)
        try self.db.run("DELETE FROM changes WHERE account_id = ? AND device_id = ?", key)
        try self.db.run("DELETE FROM tokens WHERE account_id = ? AND device_id = ?", key)
        return true
    }

    func setAuthorization(_ device: DeviceRef, _ status: AuthorizationStatus) throws {
        let code: Int64 = switch status { case .authorized: 0; case .limited: 1; case .denied: 2 }
        try self.db.run("UPDATE devices SET authorization = ? WHERE account_id = ? AND device_id = ?",
                        [.int(code), .text(device.accountID), .text(device.deviceID)])
    }

    func updateDeviceCounters(_ device: DeviceRef, lastChangeSeq: Int64, objectCount: Int) throws {
        try self.db.run("UPDATE devices SET last_change_seq = ?, object_count = ? WHERE account_id = ? AND device_id = ?",
                        [.int(lastChangeSeq), .int(Int64(objectCount)), .text(device.accountID), .text(device.deviceID)])
    }

    // MARK: - Objects

    /// Columns of an object row followed by its linked record's type and fingerprint (LEFT JOIN).
    private static let objectColumns = """
        o.local_id, o.type, o.fingerprint, o.media_type, o.creation_date, o.modification_date, o.has_adjustments, \
        o.is_favorite, o.title, o.members, o.app_created, o.record_guid, r.type, r.fingerprint
        """
    private static let linkJoin = "LEFT JOIN records r ON r.account_id = o.account_id AND r.guid = o.record_guid"

    private static func libraryObject(_ s: Statement) -> LibraryObject {
        let members = s.text(9)
        return LibraryObject(
            localIdentifier: s.text(0), type: ObjectType(rawValue: Int(s.int(1))) ?? .asset, fingerprint: s.text(2),
            mediaType: MediaType(rawValue: s.text(3)) ?? .unknown, creationDate: s.optionalText(4), modificationDate: s.optionalText(5),
            hasAdjustments: s.int(6) != 0, isFavorite: s.int(7) != 0, title: s.optionalText(8),
            // Local identifiers contain no control characters, so "\n" separates members unambiguously.
            members: members.isEmpty ? [] : members.split(separator: "\n", omittingEmptySubsequences: false).map(String.init),
            appCreated: s.int(10) != 0)
    }

    private static func storedObject(_ s: Statement) -> StoredObject {
        let object = self.libraryObject(s)
        var link: CloudRecord?
        if let guid = s.optionalText(11), !s.isNull(12), let type = ObjectType(rawValue: Int(s.int(12))) {
            link = CloudRecord(guid: guid, type: type, fingerprint: s.text(13))
        }
        return StoredObject(object: object, link: link)
    }

    func objects(_ device: DeviceRef, localIdentifiers: [String]) throws -> [StoredObject] {
        guard !localIdentifiers.isEmpty else { return [] }
        var result: [StoredObject] = []
        result.reserveCapacity(localIdentifiers.count)
        try self.db.query(Self.objectsByLocalIDsSQL, [.text(device.accountID), .text(device.deviceID), .text(jsonArray(localIdentifiers))]) { s in
            result.append(Self.storedObject(s))
        }
        return result
    }

    func allObjects(_ device: DeviceRef) throws -> [StoredObject] {
        var result: [StoredObject] = []
        try self.db.query("""
            SELECT \(Self.objectColumns) FROM objects o \(Self.linkJoin)
            WHERE o.account_id = ?1 AND o.device_id = ?2
            """, [.text(device.accountID), .text(device.deviceID)]) { s in result.append(Self.storedObject(s)) }
        return result
    }

    func objectPage(_ device: DeviceRef, type: ObjectType, after: String?, limit: Int) throws -> [LibraryObject] {
        var result: [LibraryObject] = []
        try self.db.query("""
            SELECT \(Self.objectColumns) FROM objects o \(Self.linkJoin)
            WHERE o.account_id = ?1 AND o.device_id = ?2 AND o.type = ?3 AND o.local_id > ?4
            ORDER BY o.local_id LIMIT ?5
            """, [.text(device.accountID), .text(device.deviceID), .int(Int64(type.rawValue)), .text(after ?? ""), .int(Int64(limit))]) { s in
            result.append(Self.libraryObject(s))
        }
        return result
    }

    /// `[[type, fingerprint], ...]` as JSON.
    private static func contentKeysJSON(_ keys: [ContentKey]) -> String {
        var out = "["
        for (i, k) in keys.enumerated() {
            if i > 0 { out += "," }
            out += "[\(k.type.rawValue)," + jsonArray([k.fingerprint]).dropFirst().dropLast() + "]"
        }
        return out + "]"
    }

    func objects(_ device: DeviceRef, matching keys: [ContentKey]) throws -> [StoredObject] {
        guard !keys.isEmpty else { return [] }
        var result: [StoredObject] = []
        try self.db.query(Self.objectsByContentSQL, [.text(device.accountID), .text(device.deviceID), .text(Self.contentKeysJSON(keys))]) { s in
            result.append(Self.storedObject(s))
        }
        return result
    }

    func putObjects(_ device: DeviceRef, _ objects: [StoredObject]) throws {
        for s in objects {
            let o = s.object
            try self.db.run("""
                INSERT INTO objects (account_id, device_id, local_id, type, fingerprint, media_type, creation_date, modification_date,
                                     has_adjustments, is_favorite, title, members, app_created, record_guid)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
                ON CONFLICT (account_id, device_id, local_id) DO UPDATE SET
                    type = excluded.type, fingerprint = excluded.fingerprint, media_type = excluded.media_type,
                    creation_date = excluded.creation_date, modification_date = excluded.modification_date,
                    has_adjustments = excluded.has_adjustments, is_favorite = excluded.is_favorite, title = excluded.title,
                    members = excluded.members, app_created = excluded.app_created, record_guid = excluded.record_guid
                """, [
                    .text(device.accountID), .text(device.deviceID), .text(o.localIdentifier), .int(Int64(o.type.rawValue)),
                    .text(o.fingerprint), .text(o.mediaType.rawValue), o.creationDate.map { .text($0) } ?? .null,
                    o.modificationDate.map { .text($0) } ?? .null, .int(o.hasAdjustments ? 1 : 0), .int(o.isFavorite ? 1 : 0),
                    o.title.map { .text($0) } ?? .null, .text(o.members.joined(separator: "\n")), .int(o.appCreated ? 1 : 0),
                    s.link.map { .text($0.guid) } ?? .null,
                ])
        }
    }

    func deleteObjects(_ device: DeviceRef, localIdentifiers: [String]) throws {
        guard !localIdentifiers.isEmpty else { return }
        try self.db.run("DELETE FROM objects WHERE account_id = ?1 AND device_id = ?2 AND local_id IN (SELECT value FROM json_each(?3))",
                        [.text(device.accountID), .text(device.deviceID), .text(jsonArray(localIdentifiers))])
    }

    // MARK: - Records and links

    func records(accountID: String, guids: [String]) throws -> [CloudRecord] {
        guard !guids.isEmpty else { return [] }
        var result: [CloudRecord] = []
        try self.db.query(Self.recordsByGUIDSQL, [.text(accountID), .text(jsonArray(guids))]) { s in
            if let type = ObjectType(rawValue: Int(s.int(1))) { result.append(CloudRecord(guid: s.text(0), type: type, fingerprint: s.text(2))) }
        }
        return result
    }

    func linkedObjects(_ device: DeviceRef, guids: [String]) throws -> [(guid: String, localIdentifier: String)] {
        guard !guids.isEmpty else { return [] }
        var result: [(guid: String, localIdentifier: String)] = []
        try self.db.query(Self.linkedObjectsSQL, [.text(device.accountID), .text(device.deviceID), .text(jsonArray(guids))]) { s in
            result.append((s.text(0), s.text(1)))
        }
        return result
    }

    func unlinkedRecords(_ device: DeviceRef, matching keys: [ContentKey]) throws -> [CloudRecord] {
        guard !keys.isEmpty else { return [] }
        var result: [CloudRecord] = []
        try self.db.query(Self.unlinkedRecordsSQL, [.text(device.accountID), .text(device.deviceID), .text(Self.contentKeysJSON(keys))]) { s in
            if let type = ObjectType(rawValue: Int(s.int(1))) { result.append(CloudRecord(guid: s.text(0), type: type, fingerprint: s.text(2))) }
        }
        return result
    }

    func insertRecords(accountID: String, _ records: [CloudRecord], createdAt: Date) throws {
        guard !records.isEmpty else { return }
        // Writes are serialised, so reading and bumping the account's counter cannot interleave.
        guard var order = try self.db.scalarInt("SELECT next_record_order FROM accounts WHERE account_id = ?", [.text(accountID)]) else {
            throw DomainError.notFound(message: "No such account.")
        }
        for r in records {
            try self.db.run("INSERT INTO records (account_id, guid, type, fingerprint, created_order, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                            [.text(accountID), .text(r.guid), .int(Int64(r.type.rawValue)), .text(r.fingerprint), .int(order),
                             .double(createdAt.timeIntervalSince1970)])
            order += 1
        }
        try self.db.run("UPDATE accounts SET next_record_order = ? WHERE account_id = ?", [.int(order), .text(accountID)])
    }

    func setLinks(_ device: DeviceRef, _ links: [(localIdentifier: String, guid: String)]) throws {
        for (local, guid) in links {
            try self.db.run("UPDATE objects SET record_guid = ? WHERE account_id = ? AND device_id = ? AND local_id = ?",
                            [.text(guid), .text(device.accountID), .text(device.deviceID), .text(local)])
        }
    }

    func dropLinks(_ device: DeviceRef, guids: [String]) throws {
        guard !guids.isEmpty else { return }
        try self.db.run("""
            UPDATE objects SET record_guid = NULL
            WHERE account_id = ?1 AND device_id = ?2 AND record_guid IN (SELECT value FROM json_each(?3))
            """, [.text(device.accountID), .text(device.deviceID), .text(jsonArray(guids))])
    }

    func dropAllLinks(_ device: DeviceRef) throws {
        try self.db.run("UPDATE objects SET record_guid = NULL WHERE account_id = ? AND device_id = ? AND record_guid IS NOT NULL",
                        [.text(device.accountID), .text(device.deviceID)])
    }

    // MARK: - History

    func appendChange(_ device: DeviceRef, seq: Int64, createdAt: Double, details: ChangeDetails?) throws {
        try self.db.run("INSERT INTO changes (account_id, device_id, seq, created_at, details) VALUES (?, ?, ?, ?, ?)",
                        [.text(device.accountID), .text(device.deviceID), .int(seq), .double(createdAt),
                         details.map { .text(ChangeDetailsCodec.encode($0)) } ?? .null])
    }

    func changes(_ device: DeviceRef, after seq: Int64, limit: Int) throws -> [StoredChange] {
        var result: [StoredChange] = []
        try self.db.query("""
            SELECT seq, created_at, details FROM changes
            WHERE account_id = ? AND device_id = ? AND seq > ? ORDER BY seq LIMIT ?
            """, [.text(device.accountID), .text(device.deviceID), .int(seq), .int(Int64(limit))]) { s in
            result.append(StoredChange(seq: s.int(0), createdAt: s.double(1), details: s.isNull(2) ? nil : ChangeDetailsCodec.decode(s.text(2))))
        }
        return result
    }

    func latestChangeSeq(_ device: DeviceRef, createdAtOrBefore time: Double) throws -> Int64? {
        try self.db.scalarInt("SELECT max(seq) FROM changes WHERE account_id = ? AND device_id = ? AND created_at <= ?",
                              [.text(device.accountID), .text(device.deviceID), .double(time)])
    }

    func pruneChanges(_ device: DeviceRef, throughSeq: Int64) throws {
        try self.db.run("DELETE FROM changes WHERE account_id = ? AND device_id = ? AND seq <= ?",
                        [.text(device.accountID), .text(device.deviceID), .int(throughSeq)])
        try self.db.run("UPDATE devices SET pruned_through_seq = max(pruned_through_seq, ?) WHERE account_id = ? AND device_id = ?",
                        [.int(throughSeq), .text(device.accountID), .text(device.deviceID)])
    }
}

/// Change details as text: one line per identifier, `<type letter><kind letter><localIdentifier>`
/// (`a`/`c`/`l` for assets/collections/lists, `i`/`u`/`d`). Local identifiers hold no control characters.
enum ChangeDetailsCodec {
    static func encode(_ d: ChangeDetails) -> String {
        var lines: [String] = []
        for (type, letter) in [(ObjectType.asset, "a"), (.assetCollection, "c"), (.collectionList, "l")] {
            let lists = d[type]
            for id in lists.inserted { lines.append(letter + "i" + id) }
            for id in lists.updated { lines.append(letter + "u" + id) }
            for id in lists.deleted { lines.append(letter + "d" + id) }
        }
        return lines.joined(separator: "\n")
    }

    static func decode(_ s: String) -> ChangeDetails {
        var d = ChangeDetails()
        for line in s.split(separator: "\n") {
            let u = Array(line.utf8)
            guard u.count > 2 else { continue }
            let type: ObjectType
            switch u[0] {
            case UInt8(ascii: "a"): type = .asset
            case UInt8(ascii: "c"): type = .assetCollection
            case UInt8(ascii: "l"): type = .collectionList
            default: continue
            }
            let id = String(decoding: u[2...], as: UTF8.self)
            switch u[1] {
            case UInt8(ascii: "i"): d[type].inserted.append(id)
            case UInt8(ascii: "u"): d[type].updated.append(id)
            case UInt8(ascii: "d"): d[type].deleted.append(id)
            default: continue
            }
        }
        return d
    }
}
