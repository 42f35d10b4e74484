import ConcordDomain
import Foundation

/// A device's library on PostgreSQL (`ObjectWrites`).
extension PostgresTransaction: ObjectWrites {
    func objects(_ device: DeviceRef, localIdentifiers: [String]) throws -> [StoredObject] {
        guard !localIdentifiers.isEmpty else { return [] }
        var result: [StoredObject] = []
        result.reserveCapacity(localIdentifiers.count)
        try self.db.query("""
            SELECT \(Self.objectColumns) FROM objects o \(Self.linkJoin)
            WHERE o.account_id = $1 AND o.device_id = $2 AND o.local_id = ANY($3)
            """, [.text(device.accountID), .text(device.deviceID), .textArray(localIdentifiers)]) { r in result.append(StorageRows.storedObject(r)) }
        return result
    }

    func allObjects(_ device: DeviceRef) throws -> [StoredObject] {
        var result: [StoredObject] = []
        try self.db.query("""
            SELECT \(Self.objectColumns) FROM objects o \(Self.linkJoin)
            WHERE o.account_id = $1 AND o.device_id = $2
            """, [.text(device.accountID), .text(device.deviceID)]) { r in result.append(StorageRows.storedObject(r)) }
        return result
    }

    func storedObjectPage(_ device: DeviceRef, after: String?, limit: Int) throws -> [StoredObject] {
        var result: [StoredObject] = []
        result.reserveCapacity(min(limit, 4096))
        try self.db.query("""
            SELECT \(StorageRows.objectColumns) FROM objects o \(Self.linkJoin)
            WHERE o.account_id = $1 AND o.device_id = $2 AND o.local_id > $3
            ORDER BY o.local_id LIMIT $4
            """, [.text(device.accountID), .text(device.deviceID), .text(after ?? ""), .int(Int64(limit))]) { r in
            result.append(StorageRows.storedObject(r))
        }
        return result
    }

    func objectPage(_ device: DeviceRef, type: ObjectType, after: String?, limit: Int) throws -> [LibraryObject] {
        var result: [LibraryObject] = []
        try self.db.query("""
            SELECT \(Self.objectColumns) FROM objects o \(Self.linkJoin)
            WHERE o.account_id = $1 AND o.device_id = $2 AND o.type = $3 AND o.local_id > $4 \(type == .asset ? "" : "AND o.type <> 1")
            ORDER BY o.local_id LIMIT $5
            """, [.text(device.accountID), .text(device.deviceID), .int(Int64(type.rawValue)), .text(after ?? ""), .int(Int64(limit))]) { r in
            result.append(StorageRows.libraryObject(r))
        }
        return result
    }

    func putObjects(_ device: DeviceRef, _ objects: [StoredObject]) throws {
        self.observers.didChange(.putting(objects, on: device))
        guard !objects.isEmpty else { return }
        self.objectRowsWritten += objects.count
        // One statement for the whole batch; a later duplicate of an identifier wins, as row-by-row would.
        // Duplicates by bytes: Swift's String == would merge an NFC and an NFD spelling.
        var index: [[UInt8]: Int] = [:]
        var rows: [StoredObject] = []
        rows.reserveCapacity(objects.count)
        for s in objects {
            let key = Array(s.object.localIdentifier.utf8)
            if let i = index[key] { rows[i] = s } else { index[key] = rows.count; rows.append(s) }
        }
        try self.db.query("""
            INSERT INTO objects (account_id, device_id, local_id, type, fingerprint, media_type, creation_date, modification_date,
                                 has_adjustments, is_favorite, title, members, app_created, record_guid,
                                 pk_identifier, key_a, creation_second)
            SELECT $1, $2, u.l, u.t, u.f, u.m, u.cd, u.md, u.ha, u.fa, u.ti, u.me, u.ac, u.rg, u.pk, u.ka, u.cs::bigint
            FROM unnest($3::text[], $4::int8[], $5::text[], $6::text[], $7::text[], $8::text[],
                        $9::bool[], $10::bool[], $11::text[], $12::text[], $13::bool[], $14::text[],
                        $15::text[], $16::text[], $17::text[]) AS u(l, t, f, m, cd, md, ha, fa, ti, me, ac, rg, pk, ka, cs)
            ON CONFLICT (account_id, device_id, local_id) DO UPDATE SET \(StorageRows.objectUpsertSet)
            """, [
                .text(device.accountID), .text(device.deviceID),
                .textArray(rows.map(\.object.localIdentifier)), .intArray(rows.map { Int64($0.object.type.rawValue) }),
                .textArray(rows.map(\.object.fingerprint)), .textArray(rows.map(\.object.mediaType.rawValue)),
                .textArray(rows.map(\.object.creationDate)), .textArray(rows.map(\.object.modificationDate)),
                .boolArray(rows.map(\.object.hasAdjustments)), .boolArray(rows.map(\.object.isFavorite)),
                .textArray(rows.map(\.object.title)), .textArray(rows.map { $0.object.members.joined(separator: "\n") }),
                .boolArray(rows.map(\.object.appCreated)), .textArray(rows.map { $0.link?.guid }),
                .textArray(rows.map(\.object.photoKitCloudIdentifier)), .textArray(rows.map { $0.object.key?.a }),
                .textArray(rows.map { $0.object.creationSecond.map(String.init) }),
            ])
    }

    func deleteObjects(_ device: DeviceRef, localIdentifiers: [String]) throws {
        self.observers.didChange(.deleteObjects(device: device.deviceID, localIdentifiers: localIdentifiers))
        guard !localIdentifiers.isEmpty else { return }
        self.objectRowsWritten += localIdentifiers.count
        try self.db.query("DELETE FROM objects WHERE account_id = $1 AND device_id = $2 AND local_id = ANY($3)",
                          [.text(device.accountID), .text(device.deviceID), .textArray(localIdentifiers)])
    }
}
