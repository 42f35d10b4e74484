import ConcordDomain
import Foundation

/// Uploads in parts on PostgreSQL: as on SQLite (`SQLiteTransaction+Uploads`), a part's
/// objects are rows of `upload_objects` keyed by upload and local identifier (byte order, COLLATE
/// "C"); a part is stored with one statement.
extension PostgresTransaction: UploadWrites {
    func uploads(_ device: DeviceRef) throws -> [StoredUpload] {
        var result: [StoredUpload] = []
        try self.db.query("SELECT upload_id, touched_at FROM uploads WHERE account_id = $1 AND device_id = $2 ORDER BY touched_at",
                          [.text(device.accountID), .text(device.deviceID)]) { r in
            result.append(StoredUpload(uploadID: r.text(0), deviceID: device.deviceID, touchedAt: r.double(1)))
        }
        return result
    }

    func upload(_ device: DeviceRef, uploadID: String) throws -> StoredUpload? {
        var result: StoredUpload?
        try self.db.query("SELECT touched_at FROM uploads WHERE account_id = $1 AND upload_id = $2 AND device_id = $3",
                          [.text(device.accountID), .text(uploadID), .text(device.deviceID)]) { r in
            result = StoredUpload(uploadID: uploadID, deviceID: device.deviceID, touchedAt: r.double(0))
        }
        return result
    }

    func insertUpload(_ device: DeviceRef, uploadID: String, at time: Double) throws {
        try self.db.query("INSERT INTO uploads (account_id, upload_id, device_id, touched_at) VALUES ($1, $2, $3, $4)",
                          [.text(device.accountID), .text(uploadID), .text(device.deviceID), .double(time)])
    }

    func deleteUpload(uploadID: String) throws {
        try self.db.query("""
            WITH o AS (DELETE FROM upload_objects WHERE account_id = $1 AND upload_id = $2),
                 p AS (DELETE FROM upload_parts WHERE account_id = $1 AND upload_id = $2)
            DELETE FROM uploads WHERE account_id = $1 AND upload_id = $2
            """, [.text(self.accountID), .text(uploadID)])
    }

    func deleteUploads(touchedBefore time: Double) throws {
        var expired: [String] = []
        try self.db.query("SELECT upload_id FROM uploads WHERE account_id = $1 AND touched_at < $2",
                          [.text(self.accountID), .double(time)]) { r in expired.append(r.text(0)) }
        for id in expired { try self.deleteUpload(uploadID: id) }
    }

    /// A deleted device's uploads go with it (`deleteDevice`).
    func deleteUploads(of device: DeviceRef) throws {
        try self.db.query("""
            WITH u AS (DELETE FROM uploads WHERE account_id = $1 AND device_id = $2 RETURNING upload_id),
                 o AS (DELETE FROM upload_objects WHERE account_id = $1 AND upload_id IN (SELECT upload_id FROM u))
            DELETE FROM upload_parts WHERE account_id = $1 AND upload_id IN (SELECT upload_id FROM u)
            """, [.text(device.accountID), .text(device.deviceID)])
    }

    func putUploadPart(uploadID: String, part: Int, objects: [LibraryObject], at time: Double) throws {
        let key: [PGValue] = [.text(self.accountID), .text(uploadID), .int(Int64(part))]
        try self.db.query("""
            WITH o AS (DELETE FROM upload_objects WHERE account_id = $1 AND upload_id = $2 AND part = $3),
                 t AS (UPDATE uploads SET touched_at = $5 WHERE account_id = $1 AND upload_id = $2)
            INSERT INTO upload_parts (account_id, upload_id, part, objects) VALUES ($1, $2, $3, $4)
            ON CONFLICT (account_id, upload_id, part) DO UPDATE SET objects = excluded.objects
            """, key + [.int(Int64(objects.count)), .double(time)])
        guard !objects.isEmpty else { return }
        try self.db.query("""
            INSERT INTO upload_objects (account_id, upload_id, local_id, part, type, fingerprint, media_type, creation_date,
                                        modification_date, has_adjustments, is_favorite, title, members, app_created, pk_identifier)
            SELECT $1, $2, u.l, $3, u.t, u.f, u.m, u.cd, u.md, u.ha, u.fa, u.ti, u.me, u.ac, u.pk
            FROM unnest($4::text[], $5::int8[], $6::text[], $7::text[], $8::text[], $9::text[],
                        $10::bool[], $11::bool[], $12::text[], $13::text[], $14::bool[], $15::text[])
                 AS u(l, t, f, m, cd, md, ha, fa, ti, me, ac, pk)
            """, key + [
                .textArray(objects.map(\.localIdentifier)), .intArray(objects.map { Int64($0.type.rawValue) }),
                .textArray(objects.map(\.fingerprint)), .textArray(objects.map(\.mediaType.rawValue)),
                .textArray(objects.map(\.creationDate)), .textArray(objects.map(\.modificationDate)),
                .boolArray(objects.map(\.hasAdjustments)), .boolArray(objects.map(\.isFavorite)),
                .textArray(objects.map(\.title)), .textArray(objects.map { $0.members.joined(separator: "\n") }),
                .boolArray(objects.map(\.appCreated)), .textArray(objects.map(\.photoKitCloudIdentifier)),
            ])
    }

    func uploadTotals(uploadID: String) throws -> (parts: Int, objects: Int) {
        var totals = (parts: 0, objects: 0)
        try self.db.query("SELECT count(*), coalesce(sum(objects), 0)::int8 FROM upload_parts WHERE account_id = $1 AND upload_id = $2",
                          [.text(self.accountID), .text(uploadID)]) { r in totals = (Int(r.int(0)), Int(r.int(1))) }
        return totals
    }

    func uploadRepeatedIdentifier(uploadID: String) throws -> String? {
        var repeated: String?
        try self.db.query("""
            SELECT local_id FROM upload_objects WHERE account_id = $1 AND upload_id = $2
            GROUP BY local_id HAVING count(*) > 1 ORDER BY local_id LIMIT 1
            """, [.text(self.accountID), .text(uploadID)]) { r in repeated = r.text(0) }
        return repeated
    }

    func uploadObjectPage(uploadID: String, containersOnly: Bool, after: String?, limit: Int) throws -> [LibraryObject] {
        var result: [LibraryObject] = []
        result.reserveCapacity(min(limit, 4096))
        try self.db.query("""
            SELECT \(StorageRows.uploadObjectColumns) FROM upload_objects u
            WHERE u.account_id = $1 AND u.upload_id = $2 AND u.local_id > $3 AND ($4 = 0 OR u.type <> \(ObjectType.asset.rawValue))
            ORDER BY u.local_id LIMIT $5
            """, [.text(self.accountID), .text(uploadID), .text(after ?? ""), .int(containersOnly ? 1 : 0), .int(Int64(limit))]) { r in
            result.append(StorageRows.libraryObject(r))
        }
        return result
    }

    func uploadObjectTypes(uploadID: String, localIdentifiers: [String]) throws -> [(localIdentifier: String, type: ObjectType)] {
        guard !localIdentifiers.isEmpty else { return [] }
        var result: [(localIdentifier: String, type: ObjectType)] = []
        try self.db.query("""
            SELECT local_id, type FROM upload_objects WHERE account_id = $1 AND upload_id = $2 AND local_id = ANY($3)
            """, [.text(self.accountID), .text(uploadID), .textArray(localIdentifiers)]) { r in
            if let type = ObjectType(rawValue: Int(r.int(1))) { result.append((r.text(0), type)) }
        }
        return result
    }
}
