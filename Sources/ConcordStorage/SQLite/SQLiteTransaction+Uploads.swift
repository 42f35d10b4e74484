import ConcordDomain
import Foundation

/// Uploads in parts on SQLite: an upload's parts are rows of `upload_objects` (the
/// columns of `objects`), keyed by upload and local identifier, so the commit reads them back a
/// page at a time in byte order and finds an identifier two parts hold with one grouped scan.
extension SQLiteTransaction: UploadWrites {
    func uploads(_ device: DeviceRef) throws -> [StoredUpload] {
        guard let k = try self.keys(device) else { return [] }
        var result: [StoredUpload] = []
        try self.db.query("SELECT upload_id, touched_at FROM uploads WHERE account_key = ? AND device_key = ? ORDER BY touched_at",
                          [.int(k.account), .int(k.device)]) { s in
            result.append(StoredUpload(uploadID: s.text(0), deviceID: device.deviceID, touchedAt: s.double(1)))
        }
        return result
    }

    func upload(_ device: DeviceRef, uploadID: String) throws -> StoredUpload? {
        guard let k = try self.keys(device) else { return nil }
        var result: StoredUpload?
        try self.db.query("SELECT touched_at FROM uploads WHERE account_key = ? AND upload_id = ? AND device_key = ?",
                          [.int(k.account), .text(uploadID), .int(k.device)]) { s in
            result = StoredUpload(uploadID: uploadID, deviceID: device.deviceID, touchedAt: s.double(0))
        }
        return result
    }

    func insertUpload(_ device: DeviceRef, uploadID: String, at time: Double) throws {
        guard let k = try self.keys(device) else { throw DomainError.notFound(message: "No such device.") }
        try self.db.run("INSERT INTO uploads (account_key, upload_id, device_key, touched_at) VALUES (?, ?, ?, ?)",
                        [.int(k.account), .text(uploadID), .int(k.device), .double(time)])
    }

    func deleteUpload(uploadID: String) throws {
        guard let a = try self.accountKey(self.accountID) else { return }
        for table in ["upload_objects", "upload_parts", "uploads"] {
            try self.db.run("DELETE FROM \(table) WHERE account_key = ? AND upload_id = ?", [.int(a), .text(uploadID)])
        }
    }

    func deleteUploads(touchedBefore time: Double) throws {
        guard let a = try self.accountKey(self.accountID) else { return }
        var expired: [String] = []
        try self.db.query("SELECT upload_id FROM uploads WHERE account_key = ? AND touched_at < ?", [.int(a), .double(time)]) { s in
            expired.append(s.text(0))
        }
        for id in expired { try self.deleteUpload(uploadID: id) }
    }

    /// A deleted device's uploads go with it (`deleteDevice`).
    func deleteUploads(deviceKey: Int64, accountKey a: Int64) throws {
        for table in ["upload_objects", "upload_parts"] {
            try self.db.run("""
                DELETE FROM \(table) WHERE account_key = ?1
                AND upload_id IN (SELECT upload_id FROM uploads WHERE account_key = ?1 AND device_key = ?2)
                """, [.int(a), .int(deviceKey)])
        }
        try self.db.run("DELETE FROM uploads WHERE account_key = ? AND device_key = ?", [.int(a), .int(deviceKey)])
    }

    func putUploadPart(uploadID: String, part: Int, objects: [LibraryObject], at time: Double) throws {
        guard let a = try self.accountKey(self.accountID) else { throw DomainError.notFound(message: "No such account.") }
        let key: [SQLValue] = [.int(a), .text(uploadID), .int(Int64(part))]
        try self.db.run("DELETE FROM upload_objects WHERE account_key = ? AND upload_id = ? AND part = ?", key)
        try self.db.run("INSERT OR REPLACE INTO upload_parts (account_key, upload_id, part, objects) VALUES (?, ?, ?, ?)",
                        key + [.int(Int64(objects.count))])
        for o in objects {
            try self.db.run("""
                INSERT INTO upload_objects (account_key, upload_id, local_id, part, type, fingerprint, media_type, creation_date,
                                            modification_date, has_adjustments, is_favorite, title, members, app_created, pk_identifier)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
                """, [
                    .int(a), .text(uploadID), .text(o.localIdentifier), .int(Int64(part)), .int(Int64(o.type.rawValue)),
                    .text(o.fingerprint), .text(o.mediaType.rawValue), o.creationDate.map { .text($0) } ?? .null,
                    o.modificationDate.map { .text($0) } ?? .null, .int(o.hasAdjustments ? 1 : 0), .int(o.isFavorite ? 1 : 0),
                    o.title.map { .text($0) } ?? .null, .text(o.members.joined(separator: "\n")), .int(o.appCreated ? 1 : 0),
                    o.photoKitCloudIdentifier.map { .text($0) } ?? .null,
                ])
        }
        try self.db.run("UPDATE uploads SET touched_at = ? WHERE account_key = ? AND upload_id = ?", [.double(time), .int(a), .text(uploadID)])
    }

    func uploadTotals(uploadID: String) throws -> (parts: Int, objects: Int) {
        guard let a = try self.accountKey(self.accountID) else { return (0, 0) }
        var totals = (parts: 0, objects: 0)
        try self.db.query("SELECT count(*), coalesce(sum(objects), 0) FROM upload_parts WHERE account_key = ? AND upload_id = ?",
                          [.int(a), .text(uploadID)]) { s in totals = (Int(s.int(0)), Int(s.int(1))) }
        return totals
    }

    func uploadRepeatedIdentifier(uploadID: String) throws -> String? {
        guard let a = try self.accountKey(self.accountID) else { return nil }
        var repeated: String?
        try self.db.query("""
            SELECT local_id FROM upload_objects WHERE account_key = ? AND upload_id = ?
            GROUP BY local_id HAVING count(*) > 1 ORDER BY local_id LIMIT 1
            """, [.int(a), .text(uploadID)]) { s in repeated = s.text(0) }
        return repeated
    }

    func uploadObjectPage(uploadID: String, containersOnly: Bool, after: String?, limit: Int) throws -> [LibraryObject] {
        guard let a = try self.accountKey(self.accountID) else { return [] }
        var result: [LibraryObject] = []
        result.reserveCapacity(min(limit, 4096))
        try self.db.query("""
            SELECT \(StorageRows.uploadObjectColumns) FROM upload_objects u
            WHERE u.account_key = ?1 AND u.upload_id = ?2 AND u.local_id > ?3 AND (?4 = 0 OR u.type <> \(ObjectType.asset.rawValue))
            ORDER BY u.local_id LIMIT ?5
            """, [.int(a), .text(uploadID), .text(after ?? ""), .int(containersOnly ? 1 : 0), .int(Int64(limit))]) { s in
            result.append(StorageRows.libraryObject(s))
        }
        return result
    }

    /// Through upload_objects_by_part, whose entries end with the primary key's local identifier:
    /// in (part, local identifier) order already, no sort.
    func uploadObjectPageInPartOrder(uploadID: String, after: UploadPosition?, limit: Int) throws -> (objects: [LibraryObject], last: UploadPosition?) {
        guard let a = try self.accountKey(self.accountID) else { return ([], nil) }
        var objects: [LibraryObject] = [], lastPart: Int?
        objects.reserveCapacity(min(limit, 4096))
        try self.db.query("""
            SELECT \(StorageRows.uploadObjectColumns), u.part FROM upload_objects u INDEXED BY upload_objects_by_part
            WHERE u.account_key = ?1 AND u.upload_id = ?2 AND (u.part, u.local_id) > (?3, ?4)
            ORDER BY u.part, u.local_id LIMIT ?5
            """, [.int(a), .text(uploadID), .int(Int64(after?.part ?? Int.min)), .text(after?.localIdentifier ?? ""), .int(Int64(limit))]) { s in
            objects.append(StorageRows.libraryObject(s))
            lastPart = Int(s.int(15))
        }
        return (objects, lastPart.flatMap { p in objects.last.map { UploadPosition(part: p, localIdentifier: $0.localIdentifier) } })
    }

    func uploadObjectTypes(uploadID: String, localIdentifiers: [String]) throws -> [(localIdentifier: String, type: ObjectType)] {
        guard !localIdentifiers.isEmpty, let a = try self.accountKey(self.accountID) else { return [] }
        var result: [(localIdentifier: String, type: ObjectType)] = []
        try self.db.query("""
            SELECT u.local_id, u.type FROM json_each(?3) j
            JOIN upload_objects u ON u.account_key = ?1 AND u.upload_id = ?2 AND u.local_id = j.value
            """, [.int(a), .text(uploadID), .text(jsonArray(localIdentifiers))]) { s in
            if let type = ObjectType(rawValue: Int(s.int(1))) { result.append((s.text(0), type)) }
        }
        return result
    }
}
