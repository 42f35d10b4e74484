import ConcordDomain
import Foundation

/// Uploads in parts on PostgreSQL: `uploads` and `upload_parts` hold an upload and its parts (a row
/// each); the parts' objects are staged in the upload's own table (`UploadStagingSchema`: why),
/// dropped when the upload goes. Statements on a staging table are not prepared (libpq's unnamed
/// statement): their text names a table that lives for one upload, and a named statement per
/// upload would stay in every connection that ran it.
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

    /// The upload's row and its staging table (numbered by `uploads.staging`'s default, a sequence).
    /// CREATE TABLE locks the new table only: uploads of other accounts, on this instance or another,
    /// open at the same time.
    func insertUpload(_ device: DeviceRef, uploadID: String, at time: Double) throws {
        var staging: Int64 = 0
        try self.db.query("INSERT INTO uploads (account_id, upload_id, device_id, touched_at) VALUES ($1, $2, $3, $4) RETURNING staging",
                          [.text(device.accountID), .text(uploadID), .text(device.deviceID), .double(time)]) { r in staging = r.int(0) }
        try self.db.execute(UploadStagingSchema.createStatements(UploadStagingSchema.table(staging)).joined(separator: ";\n"))
    }

    func deleteUpload(uploadID: String) throws {
        try self.dropStaging("""
            WITH u AS (DELETE FROM uploads WHERE account_id = $1 AND upload_id = $2 RETURNING staging),
                 p AS (DELETE FROM upload_parts WHERE account_id = $1 AND upload_id = $2)
            SELECT staging FROM u
            """, [.text(self.accountID), .text(uploadID)])
    }

    func deleteUploads(touchedBefore time: Double) throws {
        try self.dropStaging("""
            WITH u AS (DELETE FROM uploads WHERE account_id = $1 AND touched_at < $2 RETURNING upload_id, staging),
                 p AS (DELETE FROM upload_parts WHERE account_id = $1 AND upload_id IN (SELECT upload_id FROM u))
            SELECT staging FROM u
            """, [.text(self.accountID), .double(time)])
    }

    /// A deleted device's uploads go with it (`deleteDevice`).
    func deleteUploads(of device: DeviceRef) throws {
        try self.dropStaging("""
            WITH u AS (DELETE FROM uploads WHERE account_id = $1 AND device_id = $2 RETURNING upload_id, staging),
                 p AS (DELETE FROM upload_parts WHERE account_id = $1 AND upload_id IN (SELECT upload_id FROM u))
            SELECT staging FROM u
            """, [.text(device.accountID), .text(device.deviceID)])
    }

    /// The staging tables of every upload of the account, dropped before `deleteAccount` deletes
    /// the account's rows (`uploads` with them).
    func dropAccountUploadStaging() throws {
        try self.dropStaging("SELECT staging FROM uploads WHERE account_id = $1", [.text(self.accountID)])
    }

    /// Drops the staging tables whose numbers `numbers` returns, in one statement.
    private func dropStaging(_ numbers: String, _ parameters: [PGValue]) throws {
        var tables: [String] = []
        try self.db.query(numbers, parameters) { r in tables.append(UploadStagingSchema.table(r.int(0))) }
        guard !tables.isEmpty else { return }
        try self.db.execute("DROP TABLE IF EXISTS " + tables.joined(separator: ", "))
    }

    /// The staging table of the account's upload `uploadID`, nil when there is no such upload.
    private func staging(_ uploadID: String) throws -> String? {
        try self.db.scalarInt("SELECT staging FROM uploads WHERE account_id = $1 AND upload_id = $2",
                              [.text(self.accountID), .text(uploadID)]).map(UploadStagingSchema.table)
    }

    /// The part's row (replaced when the part is sent again) and the upload touched in one statement,
    /// which also names the staging table and says how many objects a part of that number held
    /// before; its objects go in with one more (an old part's objects are deleted first).
    func putUploadPart(uploadID: String, part: Int, objects: [LibraryObject], at time: Double) throws {
        var staging: Int64?, replaced: Int64 = 0
        try self.db.query("""
            WITH old AS (SELECT objects FROM upload_parts WHERE account_id = $1 AND upload_id = $2 AND part = $3),
                 t AS (UPDATE uploads SET touched_at = $5 WHERE account_id = $1 AND upload_id = $2 RETURNING staging),
                 p AS (INSERT INTO upload_parts (account_id, upload_id, part, objects) VALUES ($1, $2, $3, $4)
                       ON CONFLICT (account_id, upload_id, part) DO UPDATE SET objects = excluded.objects)
            SELECT t.staging, coalesce((SELECT objects FROM old), 0) FROM t
            """, [.text(self.accountID), .text(uploadID), .int(Int64(part)), .int(Int64(objects.count)), .double(time)]) { r in
            staging = r.int(0)
            replaced = r.int(1)
        }
        guard let staging else { return }
        let table = UploadStagingSchema.table(staging)
        if replaced > 0 {
            try self.db.queryUnprepared("DELETE FROM \(table) WHERE part = $1", [.int(Int64(part))])
        }
        guard !objects.isEmpty else { return }
        try self.db.queryUnprepared("""
            INSERT INTO \(table) (\(UploadStagingSchema.columns))
            SELECT u.l, $1, u.t, u.f, u.m, u.cd, u.md, u.ha, u.fa, u.ti, u.me, u.ac, u.pk
            FROM unnest($2::text[], $3::int8[], $4::text[], $5::text[], $6::text[], $7::text[],
                        $8::bool[], $9::bool[], $10::text[], $11::text[], $12::bool[], $13::text[])
                 AS u(l, t, f, m, cd, md, ha, fa, ti, me, ac, pk)
            """, [
                .int(Int64(part)),
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
        guard let table = try self.staging(uploadID) else { return nil }
        var repeated: String?
        try self.db.queryUnprepared("SELECT local_id FROM \(table) GROUP BY local_id HAVING count(*) > 1 ORDER BY local_id LIMIT 1") { r in
            repeated = r.text(0)
        }
        return repeated
    }

    func uploadObjectPage(uploadID: String, containersOnly: Bool, after: String?, limit: Int) throws -> [LibraryObject] {
        guard let table = try self.staging(uploadID) else { return [] }
        var result: [LibraryObject] = []
        result.reserveCapacity(min(limit, 4096))
        // Albums and folders through their partial index (its condition spelled as it is).
        let containers = containersOnly ? " AND u.type <> \(ObjectType.asset.rawValue)" : ""
        try self.db.queryUnprepared("""
            SELECT \(StorageRows.uploadObjectColumns) FROM \(table) u
            WHERE u.local_id > $1\(containers) ORDER BY u.local_id LIMIT $2
            """, [.text(after ?? ""), .int(Int64(limit))]) { r in
            result.append(StorageRows.libraryObject(r))
        }
        return result
    }

    /// Through the staging table's index by (part, local identifier): no sort.
    func uploadObjectPageInPartOrder(uploadID: String, after: UploadPosition?, limit: Int) throws -> (objects: [LibraryObject], last: UploadPosition?) {
        guard let table = try self.staging(uploadID) else { return ([], nil) }
        var objects: [LibraryObject] = [], lastPart: Int?
        objects.reserveCapacity(min(limit, 4096))
        try self.db.queryUnprepared("""
            SELECT \(StorageRows.uploadObjectColumns), u.part FROM \(table) u
            WHERE (u.part, u.local_id) > ($1, $2) ORDER BY u.part, u.local_id LIMIT $3
            """, [.int(Int64(after?.part ?? Int.min)), .text(after?.localIdentifier ?? ""), .int(Int64(limit))]) { r in
            objects.append(StorageRows.libraryObject(r))
            lastPart = Int(r.int(15))
        }
        return (objects, lastPart.flatMap { p in objects.last.map { UploadPosition(part: p, localIdentifier: $0.localIdentifier) } })
    }

    func uploadObjectTypes(uploadID: String, localIdentifiers: [String]) throws -> [(localIdentifier: String, type: ObjectType)] {
        guard !localIdentifiers.isEmpty, let table = try self.staging(uploadID) else { return [] }
        var result: [(localIdentifier: String, type: ObjectType)] = []
        try self.db.queryUnprepared("SELECT local_id, type FROM \(table) WHERE local_id = ANY($1)", [.textArray(localIdentifiers)]) { r in
            if let type = ObjectType(rawValue: Int(r.int(1))) { result.append((r.text(0), type)) }
        }
        return result
    }
}
