import ConcordDomain
import ConcordBytes
import Foundation

/// Cloud records, their keys and links on PostgreSQL (`RecordWrites`). GUIDs travel as `uuid[]`
/// and fingerprints as `bytea[]` (`PostgresCompact`); a GUID that is not a canonical UUID matches
/// nothing. A link is a row of `links`: the record by its creation order, the object by its number
/// (migration 17).
extension PostgresTransaction: RecordWrites {
    func linkStates(_ device: DeviceRef, localIdentifiers: [String]) throws -> [ObjectLinkState?] {
        var result = [ObjectLinkState?](repeating: nil, count: localIdentifiers.count)
        guard !localIdentifiers.isEmpty else { return result }
        try self.planGenerically()
        let keys = try self.keys(device)
        // WITH ORDINALITY numbers the inputs: each row lands at its input position (duplicates included).
        try self.db.query("""
            SELECT u.ord - 1, o.type, o.fingerprint, r.record, r.fingerprint FROM unnest($3::text[]) WITH ORDINALITY AS u(id, ord)
            JOIN objects o ON o.account_key = $1 AND o.device_key = $2 AND o.local_id = u.id
            LEFT JOIN links l ON l.device_key = $2 AND l.object_no = o.object_no
            LEFT JOIN records r ON r.account_key = $1 AND r.created_order = l.record_order
            """, [.int(keys.account), .int(keys.device), .textArray(localIdentifiers)]) { r in
            let i = Int(r.int(0))
            guard i >= 0, i < result.count, let type = ObjectType(rawValue: Int(r.int(1))) else { return }
            result[i] = ObjectLinkState(localIdentifier: localIdentifiers[i], type: type, fingerprint: r.fingerprint(2), linkedGUID: r.optionalGUID(3),
                                        linkedFingerprint: r.isNull(4) ? nil : r.fingerprint(4))
        }
        return result
    }

    func recordLinks(_ device: DeviceRef, guids: [String]) throws -> [(record: CloudRecord, linkedLocalIdentifier: String?)?] {
        var result = [(record: CloudRecord, linkedLocalIdentifier: String?)?](repeating: nil, count: guids.count)
        guard !guids.isEmpty else { return result }
        try self.planGenerically()
        let keys = try self.keys(device)
        try self.db.query("""
            SELECT u.ord - 1, r.type, r.fingerprint, o.local_id FROM unnest($3::uuid[]) WITH ORDINALITY AS u(record, ord)
            JOIN records r ON r.account_key = $1 AND r.record = u.record
            LEFT JOIN links l ON l.account_key = $1 AND l.record_order = r.created_order AND l.device_key = $2
            LEFT JOIN objects o ON o.device_key = $2 AND o.object_no = l.object_no
            """, [.int(keys.account), .int(keys.device), PostgresCompact.guids(guids)]) { r in
            let i = Int(r.int(0))
            guard i >= 0, i < result.count, let type = ObjectType(rawValue: Int(r.int(1))) else { return }
            // The GUID found is the one asked for: only a canonical spelling converts.
            result[i] = (CloudRecord(guid: guids[i], type: type, fingerprint: r.fingerprint(2)), r.optionalText(3))
        }
        return result
    }

    func recordCount() throws -> Int {
        // Every record takes the next creation order, from 1, and records go only with the account.
        Int(try self.db.scalarInt("SELECT next_record_order - 1 FROM accounts WHERE account_id = $1", [.text(self.accountID)]) ?? 0)
    }

    func records(guids: [String]) throws -> [CloudRecord] {
        guard !guids.isEmpty else { return [] }
        var result: [CloudRecord] = []
        try self.db.query("SELECT record, type, fingerprint FROM records WHERE account_key = $1 AND record = ANY($2) ORDER BY created_order",
                          [.int(try self.accountKey()), PostgresCompact.guids(guids)]) { r in
            if let type = ObjectType(rawValue: Int(r.int(1))) { result.append(CloudRecord(guid: r.guid(0), type: type, fingerprint: r.fingerprint(2))) }
        }
        return result
    }

    func linkedObjects(_ device: DeviceRef, guids: [String]) throws -> [(guid: String, localIdentifier: String)] {
        guard !guids.isEmpty else { return [] }
        let keys = try self.keys(device)
        var result: [(guid: String, localIdentifier: String)] = []
        try self.db.query("""
            SELECT r.record, o.local_id FROM records r
            JOIN links l ON l.account_key = $1 AND l.record_order = r.created_order AND l.device_key = $2
            JOIN objects o ON o.device_key = $2 AND o.object_no = l.object_no
            WHERE r.account_key = $1 AND r.record = ANY($3)
            """, [.int(keys.account), .int(keys.device), PostgresCompact.guids(guids)]) { r in result.append((r.guid(0), r.text(1))) }
        return result
    }

    func unlinkedRecords(_ device: DeviceRef, matching keys: [ContentKey]) throws -> [CloudRecord] {
        guard !keys.isEmpty else { return [] }
        try self.planGenerically()
        let owner = try self.keys(device)
        var result: [(order: Int64, record: CloudRecord)] = []
        let add = { (r: PGRow) in
            if let type = ObjectType(rawValue: Int(r.int(1))) { result.append((r.int(3), CloudRecord(guid: r.guid(0), type: type, fingerprint: r.fingerprint(2)))) }
        }
        // records_by_content (a hash index) holds records with a fingerprint only: the query says so.
        let withFingerprint = keys.filter { !$0.fingerprint.isEmpty }
        if !withFingerprint.isEmpty {
            try self.db.query(Self.unlinkedRecordsByContent, [.int(owner.account), .int(owner.device), .intArray(withFingerprint.map { Int64($0.type.rawValue) }),
                      PostgresCompact.fingerprints(withFingerprint.map(\.fingerprint))], row: add)
        }
        let emptyTypes = Set(keys.filter(\.fingerprint.isEmpty).map { Int64($0.type.rawValue) })
        if !emptyTypes.isEmpty {
            try self.db.query("""
                SELECT r.record, r.type, r.fingerprint, r.created_order FROM records r
                WHERE r.account_key = $1 AND r.fingerprint = '' AND r.type = ANY($3)
                  AND NOT EXISTS (SELECT 1 FROM links l WHERE l.account_key = $1 AND l.record_order = r.created_order AND l.device_key = $2)
                ORDER BY r.created_order
                """, [.int(owner.account), .int(owner.device), .intArray(emptyTypes.sorted())], row: add)
            if !withFingerprint.isEmpty { result.sort { $0.order < $1.order } }
        }
        return result.map(\.record)
    }

    /// Records with these fingerprints (`$3` types, `$4` fingerprints, none empty) that no object
    /// of device `$2` links to: through `records_by_content` (`PostgresNarrowSchemaTests` checks the plan).
    static let unlinkedRecordsByContent = """
        SELECT r.record, r.type, r.fingerprint, r.created_order FROM unnest($3::int8[], $4::bytea[]) AS k(type, fingerprint)
        JOIN records r ON r.fingerprint = k.fingerprint AND r.fingerprint <> '' AND r.account_key = $1 AND r.type = k.type
        WHERE NOT EXISTS (SELECT 1 FROM links l WHERE l.account_key = $1 AND l.record_order = r.created_order AND l.device_key = $2)
        ORDER BY r.created_order
        """

    func keyMatches(_ device: DeviceRef, guids: [String]) throws -> [String: [StoredObject]] {
        guard !guids.isEmpty else { return [:] }
        let keys = try self.keys(device)
        var result: [String: [StoredObject]] = [:]
        try self.db.query("""
            SELECT DISTINCT k.record, \(Self.objectColumns) FROM record_keys k
            JOIN objects o ON o.account_key = $1 AND o.device_key = $2 AND o.type = k.type AND o.key_a = k.key_a
            \(Self.linkJoin)
            WHERE k.account_key = $1 AND k.record = ANY($3)
            ORDER BY k.record, o.local_id
            """, [.int(keys.account), .int(keys.device), PostgresCompact.guids(guids)]) { r in
            result[r.guid(0), default: []].append(PostgresObjectRows.storedObject(r, at: 1))
        }
        return result
    }

    func recordKeys(guids: [String]) throws -> [String: [ObjectKey]] {
        guard !guids.isEmpty else { return [:] }
        var result: [String: [ObjectKey]] = [:]
        try self.db.query("SELECT record, type, key_a FROM record_keys WHERE account_key = $1 AND record = ANY($2)",
                          [.int(try self.accountKey()), PostgresCompact.guids(guids)]) { r in
            if let type = ObjectType(rawValue: Int(r.int(1))) { result[r.guid(0), default: []].append(ObjectKey(type: type, a: r.text(2))) }
        }
        return result
    }

    func unlinkedRecords(_ device: DeviceRef, carrying keys: [ObjectKey]) throws -> [(record: CloudRecord, key: ObjectKey)] {
        guard !keys.isEmpty else { return [] }
        let owner = try self.keys(device)
        let columns = ObjectKey.columns(keys)
        var result: [(record: CloudRecord, key: ObjectKey)] = []
        try self.db.query("""
            SELECT r.record, r.type, r.fingerprint, k.key_a FROM unnest($3::int8[], $4::text[]) AS q(type, key_a)
            JOIN record_keys k ON k.account_key = $1 AND k.type = q.type AND k.key_a = q.key_a
            JOIN records r ON r.account_key = $1 AND r.record = k.record
            WHERE NOT EXISTS (SELECT 1 FROM links l WHERE l.account_key = $1 AND l.record_order = r.created_order AND l.device_key = $2)
            ORDER BY r.created_order
            """, [.int(owner.account), .int(owner.device), .intArray(columns.types), .textArray(columns.a)]) { r in
            guard let type = ObjectType(rawValue: Int(r.int(1))) else { return }
            result.append((CloudRecord(guid: r.guid(0), type: type, fingerprint: r.fingerprint(2)), ObjectKey(type: type, a: r.text(3))))
        }
        return result
    }

    func recordsCarryingKeys(of device: DeviceRef, guids: [String]) throws -> Set<String> {
        guard !guids.isEmpty else { return [] }
        let keys = try self.keys(device)
        var result = Set<String>()
        try self.db.query("""
            SELECT DISTINCT k.record FROM record_keys k
            WHERE k.account_key = $1 AND k.record = ANY($3)
              AND EXISTS (SELECT 1 FROM objects o WHERE o.account_key = $1 AND o.device_key = $2 AND o.type = k.type AND o.key_a = k.key_a)
            """, [.int(keys.account), .int(keys.device), PostgresCompact.guids(guids)]) { r in result.insert(r.guid(0)) }
        return result
    }

    func addRecordKeys(_ keys: [(guid: String, key: ObjectKey)]) throws {
        self.observers.didChange(.addRecordKeys(keys))
        guard !keys.isEmpty else { return }
        let columns = ObjectKey.columns(keys.map(\.key))
        try self.db.query("""
            INSERT INTO record_keys (account_key, record, type, key_a)
            SELECT $1, u.record, u.type, u.key_a FROM unnest($2::uuid[], $3::int8[], $4::text[]) AS u(record, type, key_a)
            ON CONFLICT DO NOTHING
            """, [.int(try self.accountKey()), .uuidArray(try keys.map { try PostgresCompact.storedGUID($0.guid) }), .intArray(columns.types),
                  .textArray(columns.a)])
    }

    func fillRecordFingerprints(_ fills: [(guid: String, fingerprint: String)]) throws {
        self.observers.didChange(.fillRecordFingerprints(fills))
        let first = RowByRow.firstFillPerRecord(fills)
        guard !first.isEmpty else { return }
        try self.db.query("""
            UPDATE records r SET fingerprint = u.fingerprint FROM unnest($2::uuid[], $3::bytea[]) AS u(record, fingerprint)
            WHERE r.account_key = $1 AND r.record = u.record AND r.fingerprint = ''
            """, [.int(try self.accountKey()), PostgresCompact.guids(first.map(\.guid)), PostgresCompact.fingerprints(first.map(\.fingerprint))])
    }

    func insertRecords(_ records: [CloudRecord], createdAt: Date) throws {
        // New records leave the device's objects as they were.
        self.unlinkedObjects.keeping { self.observers.didChange(.insertRecords(records)) }
        guard !records.isEmpty else { return }
        self.recordRowsWritten += records.count
        try self.planGenerically()
        let guids = try records.map { try PostgresCompact.storedGUID($0.guid) }
        // Reserve a block of creation orders on the account row and insert the batch: one statement,
        // answering the block's first order and the rows inserted.
        // New GUIDs (version 7 UUIDs) increase, so the rows append to the primary key.
        var first: Int64?, inserted: Int64 = 0
        try self.db.query("""
            WITH a AS (
                UPDATE accounts SET next_record_order = next_record_order + $4 WHERE account_id = $1
                RETURNING account_key, next_record_order - $4 AS first
            ), inserted AS (
                INSERT INTO records (account_key, created_order, record, type, fingerprint)
                SELECT a.account_key, a.first + u.ord - 1, u.record, u.type, u.fingerprint
                FROM a, unnest($2::uuid[], $3::int8[], $5::bytea[]) WITH ORDINALITY AS u(record, type, fingerprint, ord)
                RETURNING 1
            )
            SELECT a.first, (SELECT count(*) FROM inserted) FROM a
            """, [.text(self.accountID), .uuidArray(guids),
                  .intArray(records.map { Int64($0.type.rawValue) }), .int(Int64(records.count)),
                  PostgresCompact.fingerprints(records.map(\.fingerprint))]) { r in
            first = r.int(0)
            inserted = r.int(1)
        }
        guard let first, inserted == Int64(records.count) else { throw DomainError.notFound(message: "No such account.") }
        // The batch's links (setLinks, in this transaction) take these orders as they are.
        self.insertedRecordOrders.reserveCapacity(self.insertedRecordOrders.count + guids.count)
        for (i, guid) in guids.enumerated() { self.insertedRecordOrders[guid] = first + Int64(i) }
    }

    func setLinks(_ device: DeviceRef, _ links: [(localIdentifier: String, guid: String)]) throws {
        try self.setLinks(device, links, rows: [])
    }

    /// Objects whose number the caller gives (`StoredObject.storageRow`: the mapping index's, from
    /// its load) are found by it, their local identifier checked in the same statement (objects this
    /// transaction's own lookup found unlinked keep `insertLinks`' unchecked insert): a probe of
    /// the objects' primary key, where finding one by its identifier probes `objects_by_local_id`
    /// at a random place. If fewer links than given were inserted or changed, a number was stale
    /// (or a link was there already): all of them go the way of links without numbers, which
    /// changes nothing more for those already set.
    func setLinks(_ device: DeviceRef, _ links: [(localIdentifier: String, guid: String)], rows: [Int64?]) throws {
        // The objects given are taken out of `unlinkedObjects` as their links are inserted.
        self.unlinkedObjects.keeping { self.observers.didChange(.setLinks(device: device.deviceID, links)) }
        guard !links.isEmpty else { return }
        let keys = try self.keys(device)
        self.linkRowsWritten += links.count
        try self.planGenerically()
        // Links of objects the device has; inserted in record order (new records' GUIDs increase).
        let positions = RowByRow.lastLinkPositions(links) ?? Array(links.indices)
        guard rows.count == links.count, rows.contains(where: { $0 != nil }) else { return try self.insertLinks(keys, positions.map { links[$0] }) }
        var numbered = (known: (orders: [Int64](), numbers: [Int64](), localIDs: [String]()),
                        looked: (guids: [[UInt8]](), numbers: [Int64](), localIDs: [String]()))
        var numberedLinks: [(localIdentifier: String, guid: String)] = [], rest: [(localIdentifier: String, guid: String)] = []
        for i in positions {
            let link = links[i]
            // An object this transaction's own lookup found unlinked goes in by its number unchecked (`insertLinks`).
            guard let number = rows[i], !self.unlinkedObjects.has(link.localIdentifier, device: keys.device) else { rest.append(link); continue }
            let guid = try PostgresCompact.storedGUID(link.guid)
            if let order = self.insertedRecordOrders[guid] {
                numbered.known.orders.append(order); numbered.known.numbers.append(number); numbered.known.localIDs.append(link.localIdentifier)
            } else {
                numbered.looked.guids.append(guid); numbered.looked.numbers.append(number); numbered.looked.localIDs.append(link.localIdentifier)
            }
            numberedLinks.append(link)
        }
        let (account, device) = (PGValue.int(keys.account), PGValue.int(keys.device))
        var changed = 0
        if !numbered.known.orders.isEmpty {
            let sorted = (0..<numbered.known.orders.count).sorted { numbered.known.orders[$0] < numbered.known.orders[$1] }
            changed += try self.db.query(Self.linksByOrderAndCheckedNumber, [account, device, .intArray(sorted.map { numbered.known.orders[$0] }),
                                                                            .intArray(sorted.map { numbered.known.numbers[$0] }),
                                                                            .textArray(sorted.map { numbered.known.localIDs[$0] })])
        }
        if !numbered.looked.guids.isEmpty {
            changed += try self.db.query(Self.linksByGUIDAndCheckedNumber, [account, device, .uuidArray(numbered.looked.guids),
                                                                           .intArray(numbered.looked.numbers), .textArray(numbered.looked.localIDs)])
        }
        if changed != numberedLinks.count { rest += numberedLinks } else { self.linksSetByNumber += changed }
        if !rest.isEmpty { try self.insertLinks(keys, rest) }
    }

    /// Inserts or changes links (one per object) of objects the device has to records the account
    /// has, in record order (new records append to the primary key). An object this transaction
    /// found unlinked (`unlinkedObjects`) is given by its number and its link is new: a plain
    /// insert, no probe of `objects_by_local_id` and no `ON CONFLICT` (its unique keys still hold:
    /// a second link of the object or the record on this device fails the statement). Other objects
    /// are found by local identifier and their links replaced. Records this transaction inserted
    /// take their orders as they are (no probe of `records_by_guid`); the others join `records`
    /// (a GUID or local identifier not found links nothing).
    func insertLinks(_ keys: (account: Int64, device: Int64), _ links: [(localIdentifier: String, guid: String)]) throws {
        var new = (known: (orders: [Int64](), numbers: [Int64]()), looked: (guids: [[UInt8]](), numbers: [Int64]()))
        var other = (known: (orders: [Int64](), localIDs: [String]()), looked: (guids: [[UInt8]](), localIDs: [String]()))
        for link in links {
            let guid = try PostgresCompact.storedGUID(link.guid)
            let order = self.insertedRecordOrders[guid]
            switch (order, self.unlinkedObjects.take(link.localIdentifier, device: keys.device)) {
            case let (order?, number?):
                new.known.orders.append(order)
                new.known.numbers.append(number)
            case let (nil, number?):
                new.looked.guids.append(guid)
                new.looked.numbers.append(number)
            case let (order?, nil):
                other.known.orders.append(order)
                other.known.localIDs.append(link.localIdentifier)
            case (nil, nil):
                other.looked.guids.append(guid)
                other.looked.localIDs.append(link.localIdentifier)
            }
        }
        // Each object is given once (`lastLinkPerObject`): the statements touch different objects.
        let (account, device) = (PGValue.int(keys.account), PGValue.int(keys.device))
        if !new.known.orders.isEmpty {
            let sorted = zip(new.known.orders, new.known.numbers).sorted { $0.0 < $1.0 }
            try self.db.query(Self.linksByOrderAndNumber, [account, device, .intArray(sorted.map(\.0)), .intArray(sorted.map(\.1))])
        }
        if !new.looked.guids.isEmpty {
            try self.db.query(Self.linksByGUIDAndNumber, [account, device, .uuidArray(new.looked.guids), .intArray(new.looked.numbers)])
        }
        if !other.known.orders.isEmpty {
            try self.db.query(Self.linksByOrderAndLocalID, [account, device, .intArray(other.known.orders), .textArray(other.known.localIDs)])
        }
        if !other.looked.guids.isEmpty {
            try self.db.query(Self.linksByGUIDAndLocalID, [account, device, .uuidArray(other.looked.guids), .textArray(other.looked.localIDs)])
        }
    }

    static let linksByOrderAndNumber = PostgresTransaction.insertLinksStatement(recordOrderKnown: true, objectNumberKnown: true)
    static let linksByGUIDAndNumber = PostgresTransaction.insertLinksStatement(recordOrderKnown: false, objectNumberKnown: true)
    static let linksByOrderAndLocalID = PostgresTransaction.insertLinksStatement(recordOrderKnown: true, objectNumberKnown: false)
    static let linksByGUIDAndLocalID = PostgresTransaction.insertLinksStatement(recordOrderKnown: false, objectNumberKnown: false)
    static let linksByOrderAndCheckedNumber = PostgresTransaction.insertCheckedLinksStatement(recordOrderKnown: true)
    static let linksByGUIDAndCheckedNumber = PostgresTransaction.insertCheckedLinksStatement(recordOrderKnown: false)

    /// Links inserted from three arrays: the record as in `insertLinksStatement`, the object by its
    /// number (`$4::int8[]`) joined to objects by the primary key with its local identifier
    /// (`$5::text[]`) checked, replacing the object's link. A number that is not the object's
    /// inserts nothing (the caller counts).
    static func insertCheckedLinksStatement(recordOrderKnown: Bool) -> String {
        let recordArray = recordOrderKnown ? "$3::int8[]" : "$3::uuid[]", recordColumn = recordOrderKnown ? "record_order" : "record"
        var statement = """
            INSERT INTO links (account_key, record_order, device_key, object_no)
            SELECT $1, \(recordOrderKnown ? "u.record_order" : "r.created_order"), $2, o.object_no
            FROM unnest(\(recordArray), $4::int8[], $5::text[]) AS u(\(recordColumn), object_no, local_id)
            """
        if !recordOrderKnown { statement += "\nJOIN records r ON r.account_key = $1 AND r.record = u.record" }
        statement += "\nJOIN objects o ON o.device_key = $2 AND o.object_no = u.object_no AND o.local_id = u.local_id"
        statement += recordOrderKnown ? "\nORDER BY u.record_order" : "\nORDER BY r.created_order"
        return statement + "\n" + Self.linkConflict
    }

    /// Links inserted from two arrays ($1 the account's key, $2 the device's), by what the
    /// transaction knows of each side: the record by its creation order (`$3::int8[]`) or by its
    /// GUID (`$3::uuid[]`, joined to records), the object by its number
    /// (`$4::int8[]`, an object known unlinked: nothing to conflict with) or by its local identifier
    /// (`$4::text[]`, joined to objects, replacing the object's link). Rows go in increasing
    /// record order, the key's.
    static func insertLinksStatement(recordOrderKnown: Bool, objectNumberKnown: Bool) -> String {
        let recordArray = recordOrderKnown ? "$3::int8[]" : "$3::uuid[]", recordColumn = recordOrderKnown ? "record_order" : "record"
        let objectArray = objectNumberKnown ? "$4::int8[]" : "$4::text[]", objectColumn = objectNumberKnown ? "object_no" : "local_id"
        var statement = """
            INSERT INTO links (account_key, record_order, device_key, object_no)
            SELECT $1, \(recordOrderKnown ? "u.record_order" : "r.created_order"), $2, \(objectNumberKnown ? "u.object_no" : "o.object_no")
            FROM unnest(\(recordArray), \(objectArray)) AS u(\(recordColumn), \(objectColumn))
            """
        if !recordOrderKnown { statement += "\nJOIN records r ON r.account_key = $1 AND r.record = u.record" }
        if !objectNumberKnown { statement += "\nJOIN objects o ON o.device_key = $2 AND o.local_id = u.local_id" }
        // Joined rows come in the join's order: sorted here. Without a join, the caller sorted them.
        if !recordOrderKnown { statement += "\nORDER BY r.created_order" } else if !objectNumberKnown { statement += "\nORDER BY u.record_order" }
        if !objectNumberKnown { statement += "\n" + Self.linkConflict }
        return statement
    }

    /// An object's link is replaced (links_by_object: one link per object).
    static let linkConflict = """
        ON CONFLICT (device_key, object_no) DO UPDATE SET record_order = excluded.record_order
            WHERE links.record_order <> excluded.record_order
        """

    func dropLinks(_ device: DeviceRef, guids: [String]) throws {
        self.observers.didChange(.dropLinks(device: device.deviceID, guids: guids))
        guard !guids.isEmpty else { return }
        let keys = try self.keys(device)
        try self.db.query("""
            DELETE FROM links l USING records r
            WHERE r.account_key = $1 AND r.record = ANY($3) AND l.account_key = $1 AND l.record_order = r.created_order AND l.device_key = $2
            """, [.int(keys.account), .int(keys.device), PostgresCompact.guids(guids)])
    }

    func dropAllLinks(_ device: DeviceRef) throws {
        self.observers.didChange(.dropAllLinks(device: device.deviceID))
        let keys = try self.keys(device)
        try self.db.query("DELETE FROM links WHERE device_key = $1", [.int(keys.device)])
    }
}

/// Objects of one device that a lookup by local identifier (`objects(_:localIdentifiers:)`) in this
/// transaction found without a link: their numbers, by local identifier (its bytes). The account's
/// lock keeps other writers off the device's links, so each stays unlinked until this transaction
/// changes the mapping: any change forgets them all (as the transaction's observer), except those
/// made `keeping` them — records inserted, and links inserted, which `take` their objects out first.
final class UnlinkedObjectNumbers: TransactionObserver {
    private var device = PostgresTransaction.noKey
    private var numbers: [ByteKey: Int64] = [:]
    private var observing = false
    private var keepingThroughChange = false

    /// Ready for the objects a lookup on `device` finds unlinked (`add`); those of another device are forgotten.
    func lookup(device: Int64, observers: TransactionObservers) -> UnlinkedObjectNumbers {
        if !self.observing {
            observers.add(self)
            self.observing = true
        }
        if device != self.device {
            self.numbers.removeAll()
            self.device = device
        }
        return self
    }

    func add(_ localIdentifier: String, number: Int64) { self.numbers[ByteKey(localIdentifier)] = number }

    /// Whether the object is known unlinked (`take` would give its number).
    func has(_ localIdentifier: String, device: Int64) -> Bool {
        device == self.device && !self.numbers.isEmpty && self.numbers[ByteKey(localIdentifier)] != nil
    }

    /// The object's number if it is known unlinked, no longer kept: its link is about to be inserted.
    func take(_ localIdentifier: String, device: Int64) -> Int64? {
        guard device == self.device, !self.numbers.isEmpty else { return nil }
        return self.numbers.removeValue(forKey: ByteKey(localIdentifier))
    }

    /// Runs `body` (a change reported to the observers) keeping the objects known.
    func keeping(_ body: () -> Void) {
        self.keepingThroughChange = true
        defer { self.keepingThroughChange = false }
        body()
    }

    func transactionDidChange(_ mutation: @autoclosure () -> MappingMutation) {
        if !self.keepingThroughChange, !self.numbers.isEmpty { self.numbers.removeAll() }
    }
}
