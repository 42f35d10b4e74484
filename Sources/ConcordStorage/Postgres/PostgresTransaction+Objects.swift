import ConcordBytes
import ConcordDomain
import Foundation

/// A device's library on PostgreSQL (`ObjectWrites`). Rows are keyed by the account's and device's
/// integer keys (`keys(_:)`) and numbered per device (`object_no`, migration 17); an object's link
/// is a row of `links`.
extension PostgresTransaction: ObjectWrites {
    func objects(_ device: DeviceRef, localIdentifiers: [String]) throws -> [StoredObject] {
        guard !localIdentifiers.isEmpty else { return [] }
        let keys = try self.keys(device)
        var result: [StoredObject] = []
        result.reserveCapacity(localIdentifiers.count)
        // Each object's number and whether it has a link, after the object's columns (`UnlinkedObjectNumbers`).
        let found = self.unlinkedObjects.lookup(device: keys.device, observers: self.observers)
        // Every object's number, and the identifiers not found, for `putObjects` (`LookedUpObjectNumbers`).
        let looked = self.lookedUpObjects.lookup(device: keys.device, count: localIdentifiers.count, observers: self.observers)
        // Each identifier once (by bytes, as the database compares them), each a probe of the
        // local-identifier index, its link and record probes of theirs (`probedObjects`).
        var seen = Set<ByteKey>()
        seen.reserveCapacity(localIdentifiers.count)
        let unique = localIdentifiers.filter { seen.insert(ByteKey($0)).inserted }
        try self.db.query("""
            SELECT \(Self.objectColumns), o.object_no, l.object_no IS NULL \(Self.probedObjects)
            """, [.int(keys.account), .int(keys.device), .textArray(unique)]) { r in
            let object = PostgresObjectRows.storedObject(r)
            let number = r.int(PostgresObjectRows.count)
            if r.bool(PostgresObjectRows.count + 1) { found.add(object.object.localIdentifier, number: number) }
            looked?.found(object.object.localIdentifier, number: number)
            result.append(object)
        }
        looked?.notFound(localIdentifiers)
        return result
    }

    func allObjects(_ device: DeviceRef) throws -> [StoredObject] {
        let keys = try self.keys(device)
        var result: [StoredObject] = []
        try self.db.query("""
            SELECT \(Self.objectColumns) FROM objects o \(Self.linkJoin)
            WHERE o.account_key = $1 AND o.device_key = $2
            """, [.int(keys.account), .int(keys.device)]) { r in result.append(PostgresObjectRows.storedObject(r)) }
        return result
    }

    func storedObjectPage(_ device: DeviceRef, after: String?, limit: Int) throws -> [StoredObject] {
        let keys = try self.keys(device)
        var result: [StoredObject] = []
        result.reserveCapacity(min(limit, 4096))
        try self.db.query("""
            SELECT \(Self.objectColumns) FROM objects o \(Self.linkJoin)
            WHERE o.account_key = $1 AND o.device_key = $2 AND o.local_id > $3
            ORDER BY o.local_id LIMIT $4
            """, [.int(keys.account), .int(keys.device), .text(after ?? ""), .int(Int64(limit))]) { r in
            result.append(PostgresObjectRows.storedObject(r))
        }
        return result
    }

    func objectPage(_ device: DeviceRef, type: ObjectType, after: String?, limit: Int) throws -> [LibraryObject] {
        let keys = try self.keys(device)
        var result: [LibraryObject] = []
        try self.db.query("""
            SELECT \(Self.objectColumns) FROM objects o \(Self.linkJoin)
            WHERE o.account_key = $1 AND o.device_key = $2 AND o.type = $3 AND o.local_id > $4 \(type == .asset ? "" : "AND o.type <> 1")
            ORDER BY o.local_id LIMIT $5
            """, [.int(keys.account), .int(keys.device), .int(Int64(type.rawValue)), .text(after ?? ""), .int(Int64(limit))]) { r in
            result.append(PostgresObjectRows.libraryObject(r))
        }
        return result
    }

    func putObjects(_ device: DeviceRef, _ objects: [StoredObject]) throws {
        try self.writeObjects(device, objects, newOnly: false)
    }

    /// The objects are new: no probe of the local-identifier index, a plain insert (the unique
    /// index on `(device_key, local_id)` still refuses one that is not).
    func insertNewObjects(_ device: DeviceRef, _ objects: [StoredObject]) throws {
        try self.writeObjects(device, objects, newOnly: true)
    }

    private func writeObjects(_ device: DeviceRef, _ objects: [StoredObject], newOnly: Bool) throws {
        // What this transaction's lookups found, taken: the write changes the objects, and its report
        // (below) forgets it anyway.
        let looked = self.lookedUpObjects.taken()
        guard !objects.isEmpty else {
            self.observers.didChange(.putting(objects, on: device))
            // Nothing changed: what the lookup found still holds (for `deleteObjects`, next).
            self.lookedUpObjects.restore(looked)
            return
        }
        let keys = try self.writeKeys(device)
        self.objectRowsWritten += objects.count
        // One statement for the whole batch; a later duplicate of an identifier wins, as row-by-row would.
        // Duplicates by bytes: Swift's String == would merge an NFC and an NFD spelling.
        var index: [ByteKey: Int] = [:]
        index.reserveCapacity(objects.count)
        var rows: [StoredObject] = []
        rows.reserveCapacity(objects.count)
        // Each object's row of the statement: an earlier duplicate's is the later one's, which replaced it.
        var rowOf: [Int] = []
        rowOf.reserveCapacity(objects.count)
        for s in objects {
            let key = ByteKey(s.object.localIdentifier)
            if let i = index[key] {
                rows[i] = s
                rowOf.append(i)
            } else {
                index[key] = rows.count
                rowOf.append(rows.count)
                rows.append(s)
            }
        }
        let creation = rows.map { PostgresCompact.creation($0.object) }
        let modification = rows.map { PostgresCompact.modification($0.object) }
        // An upsert that changes no indexed column (dates, flags, title) is an update in place (HOT).
        // New rows take the device's next object numbers, reserved on its row in the same statement
        // (writers of an account are serialised: the rows the statement finds new are new). A new
        // row's number is the running count of new rows up to it: a window over the batch, never a
        // join of the batch with itself. Each row's existing object is found by a probe of the
        // local-identifier index (a LATERAL … LIMIT 1 stays a per-row probe): a join could be
        // planned as a hash of every object of the device, and inside one large transaction (an
        // upload's commit) the statistics still say the device is empty. The same probe gives the
        // existing objects sent without a link their numbers, whose links go (`x`): a new object
        // has none, so an upload's commit, all new objects, looks up no link at all.
        //
        // When this transaction's lookup (`objects(_:localIdentifiers:)`, which a change batch makes
        // first) already answered for every row, its numbers are bound (`$19`, NULL: new) instead:
        // the local-identifier index is not probed a second time for the same identifiers. New
        // objects (`insertNewObjects`) bind NULL for every row without a lookup.
        let known = newOnly ? [Int64?](repeating: nil, count: rows.count) : looked?.numbers(device: keys.device, rows.map(\.object.localIdentifier))
        let existing = known == nil ? """
                SELECT u.*, e.object_no AS existing, e.object_no IS NULL AS is_new
                FROM unnest($3::text[], $4::int8[], $5::bytea[], $6::text[], $7::int8[], $8::text[], $9::int8[], $10::text[],
                            $11::bool[], $12::bool[], $13::text[], $14::text[], $15::bool[], $16::text[], $17::text[], $18::bool[])
                    WITH ORDINALITY AS u(l, t, f, m, cs, cd, ms, md, ha, fa, ti, me, ac, pk, ka, unlink, ord)
                LEFT JOIN LATERAL (SELECT o.object_no FROM objects o WHERE o.device_key = $2 AND o.local_id = u.l LIMIT 1) e ON true
            """ : """
                SELECT u.*, u.e AS existing, u.e IS NULL AS is_new
                FROM unnest($3::text[], $4::int8[], $5::bytea[], $6::text[], $7::int8[], $8::text[], $9::int8[], $10::text[],
                            $11::bool[], $12::bool[], $13::text[], $14::text[], $15::bool[], $16::text[], $17::text[], $18::bool[], $19::int8[])
                    WITH ORDINALITY AS u(l, t, f, m, cs, cd, ms, md, ha, fa, ti, me, ac, pk, ka, unlink, e, ord)
            """
        var parameters: [PGValue] = [
            .int(keys.account), .int(keys.device),
            .textArray(rows.map(\.object.localIdentifier)), .intArray(rows.map { Int64($0.object.type.rawValue) }),
            PostgresCompact.fingerprints(rows.map(\.object.fingerprint)),
            .textArray(rows.map { PostgresObjectRows.mediaTypeCode($0.object.mediaType) }),
            .optionalIntArray(creation.map(\.second)), .textArray(creation.map(\.text)),
            .optionalIntArray(modification.map(\.second)), .textArray(modification.map(\.text)),
            .boolArray(rows.map(\.object.hasAdjustments)), .boolArray(rows.map(\.object.isFavorite)),
            .textArray(rows.map(\.object.title)), .textArray(rows.map { $0.object.members.joined(separator: "\n") }),
            .boolArray(rows.map(\.object.appCreated)),
            .textArray(rows.map(\.object.photoKitCloudIdentifier)), .textArray(rows.map { $0.object.key?.a }),
            .boolArray(rows.map { $0.link == nil }),
        ]
        if let known { parameters.append(.optionalIntArray(known)) }
        // Every row new by this transaction's lookup (a batch of new objects) or by the caller's word
        // (`insertNewObjects`): a plain insert. The upsert's speculative insertion probes the
        // local-identifier index once more per row before inserting; the account's lock keeps other
        // writers off the device.
        let allNew = known?.allSatisfy { $0 == nil } ?? false
        // The statement answers the first new number: new rows are numbered from it in row order, the
        // others keep their numbers — bound (`known`), or else answered with their position (those the
        // probe found; none in a batch of new objects). Not a row per object, as `RETURNING` would send.
        let answer = known == nil ? "SELECT d.first, u.ord, u.existing FROM d LEFT JOIN u ON NOT u.is_new" : "SELECT d.first, NULL, NULL FROM d"
        var first: Int64?, numbers = known ?? [Int64?](repeating: nil, count: rows.count)
        try self.db.query("""
            WITH u AS (
            \(existing)
            ), x AS (
                DELETE FROM links l
                WHERE l.device_key = $2 AND l.object_no = ANY (ARRAY(SELECT u.existing FROM u WHERE u.unlink AND u.existing IS NOT NULL))
            ), n AS (
                SELECT u.*, sum(CASE WHEN u.is_new THEN 1 ELSE 0 END) OVER (ORDER BY u.ord ROWS UNBOUNDED PRECEDING) AS i FROM u
            ), d AS (
                UPDATE devices SET next_object_no = next_object_no + (SELECT count(*) FROM u WHERE u.is_new) WHERE device_key = $2
                RETURNING next_object_no - (SELECT count(*) FROM u WHERE u.is_new) AS first
            ), w AS (
                INSERT INTO objects (account_key, device_key, object_no, local_id, type, fingerprint, media_type, creation_second, creation_date,
                                     modification_second, modification_date, has_adjustments, is_favorite, title, members, app_created,
                                     pk_identifier, key_a)
                SELECT $1, $2, CASE WHEN n.is_new THEN d.first + n.i - 1 ELSE 0 END, n.l, n.t, n.f, n.m, n.cs, n.cd, n.ms, n.md, n.ha, n.fa,
                       n.ti, n.me, n.ac, n.pk, n.ka
                FROM n CROSS JOIN d
                ORDER BY n.ord
                \(allNew ? "" : Self.upsertTail)
            )
            \(answer)
            """, parameters) { r in
            first = r.int(0)
            if !r.isNull(1) { numbers[Int(r.int(1)) - 1] = r.int(2) }
        }
        // Reported after the statement, with each object's number (`StoredObject.storageRow`, which
        // the mapping index keeps), and before the links are set: the report forgets what lookups
        // found (`UnlinkedObjectNumbers` too), so the links go in as they did when it came first.
        // No answer: the device has no row, and nothing was written.
        var reported: [Int64]?
        if var next = first {
            for i in numbers.indices where numbers[i] == nil {
                numbers[i] = next
                next += 1
            }
            reported = rowOf.map { numbers[$0]! }
        }
        self.observers.didChange(.putting(objects, on: device, rows: reported))
        // The rows' links as given: kept, changed or (above) dropped.
        let linked = rows.compactMap { s in s.link.map { (localIdentifier: s.object.localIdentifier, guid: $0.guid) } }
        if !linked.isEmpty { try self.upsertLinks(keys, linked) }
    }

    /// The upsert's conflict clause: an existing object's columns take the sent ones.
    static let upsertTail = """
        ON CONFLICT (device_key, local_id) DO UPDATE SET
                type = excluded.type, fingerprint = excluded.fingerprint, media_type = excluded.media_type,
                creation_second = excluded.creation_second, creation_date = excluded.creation_date,
                modification_second = excluded.modification_second, modification_date = excluded.modification_date,
                has_adjustments = excluded.has_adjustments, is_favorite = excluded.is_favorite, title = excluded.title,
                members = excluded.members, app_created = excluded.app_created, pk_identifier = excluded.pk_identifier,
                key_a = excluded.key_a
        """

    /// Sets each object's link (one per object: the last given wins) with one statement.
    func upsertLinks(_ keys: (account: Int64, device: Int64), _ links: [(localIdentifier: String, guid: String)]) throws {
        let links = RowByRow.lastLinkPerObject(links)
        self.linkRowsWritten += links.count
        try self.insertLinks(keys, links)
    }

    func deleteObjects(_ device: DeviceRef, localIdentifiers: [String]) throws {
        let looked = self.lookedUpObjects.taken()
        self.observers.didChange(.deleteObjects(device: device.deviceID, localIdentifiers: localIdentifiers))
        guard !localIdentifiers.isEmpty else { return }
        let keys = try self.keys(device)
        self.objectRowsWritten += localIdentifiers.count
        // When this transaction's lookup (which a change batch makes first) found every object,
        // its numbers are bound: the local-identifier index is not probed a second time.
        if let known = looked?.numbers(device: keys.device, localIdentifiers), known.allSatisfy({ $0 != nil }) {
            try self.db.query("""
                WITH o AS (DELETE FROM objects WHERE device_key = $1 AND object_no = ANY ($2::int8[]) RETURNING object_no)
                DELETE FROM links WHERE device_key = $1 AND object_no = ANY (ARRAY(SELECT object_no FROM o))
                """, [.int(keys.device), .optionalIntArray(known)])
            return
        }
        // By number: each identifier a probe of the local-identifier index, then the rows and their
        // links by their keys. `local_id = ANY(…)` and `IN (SELECT …)` were planned, with a large
        // batch, as scans of every object and every link of the device.
        try self.db.query("""
            WITH o AS (
                DELETE FROM objects WHERE device_key = $2 AND object_no = ANY (ARRAY(
                    SELECT e.object_no FROM unnest($3::text[]) AS u(l)
                    CROSS JOIN LATERAL (SELECT o.object_no FROM objects o
                                        WHERE o.device_key = $2 AND o.local_id = u.l AND o.account_key = $1 LIMIT 1) e))
                RETURNING object_no
            )
            DELETE FROM links WHERE device_key = $2 AND object_no = ANY (ARRAY(SELECT object_no FROM o))
            """, [.int(keys.account), .int(keys.device), .textArray(localIdentifiers)])
    }

    /// `FROM` the objects of `$1`/`$2` whose local identifiers are in `$3` (given once each), with
    /// their links and records, for `objectColumns`: every row found by index probes (a `LATERAL …
    /// LIMIT 1` is never flattened into a join). A join on `local_id = ANY($3)` was planned, for a
    /// batch of 10 000, as a parallel scan of every object and a hash of every link of the device.
    static let probedObjects = """
        FROM unnest($3::text[]) AS u(l)
        CROSS JOIN LATERAL (SELECT * FROM objects o WHERE o.device_key = $2 AND o.local_id = u.l AND o.account_key = $1 LIMIT 1) o
        LEFT JOIN LATERAL (SELECT l.object_no, l.account_key, l.record_order FROM links l
                           WHERE l.device_key = $2 AND l.object_no = o.object_no LIMIT 1) l ON true
        LEFT JOIN LATERAL (SELECT r.record, r.type, r.fingerprint FROM records r
                           WHERE r.account_key = l.account_key AND r.created_order = l.record_order LIMIT 1) r ON true
        """
}

/// What this transaction's lookups by local identifier (`objects(_:localIdentifiers:)`) on one
/// device found: each identifier looked up, with its object's number or none. The account's lock
/// keeps other writers off the device, so the answer holds until this transaction changes the
/// mapping (the objects included): any change forgets it (as the transaction's observer).
/// `putObjects` binds these numbers instead of probing the local-identifier index again. Lookups
/// of more than `maxKept` identifiers (a library's replacement) are not kept.
final class LookedUpObjectNumbers: TransactionObserver {
    static let maxKept = 65_536
    /// What a lookup found, by local identifier (its bytes): the object's number, or `absent`.
    struct Found {
        static let absent = Int64.min
        let device: Int64
        var numbers: [ByteKey: Int64]

        /// Each identifier's number (nil: no such object), or nil when one was not looked up.
        func numbers(device: Int64, _ localIdentifiers: [String]) -> [Int64?]? {
            guard device == self.device, localIdentifiers.count <= self.numbers.count else { return nil }
            var result: [Int64?] = []
            result.reserveCapacity(localIdentifiers.count)
            for id in localIdentifiers {
                guard let n = self.numbers[ByteKey(id)] else { return nil }
                result.append(n == Self.absent ? nil : n)
            }
            return result
        }
    }

    private var current: Found?
    private var observing = false

    /// Ready to record a lookup of `count` identifiers on `device` (nil: too many to keep); the
    /// lookups of another device are forgotten.
    func lookup(device: Int64, count: Int, observers: TransactionObservers) -> LookedUpObjectNumbers? {
        if !self.observing {
            observers.add(self)
            self.observing = true
        }
        if self.current?.device != device { self.current = Found(device: device, numbers: [:]) }
        guard (self.current?.numbers.count ?? 0) + count <= Self.maxKept else {
            self.current = nil
            return nil
        }
        return self
    }

    func found(_ localIdentifier: String, number: Int64) { self.current?.numbers[ByteKey(localIdentifier)] = number }

    /// The identifiers of a lookup that it did not find (those found were recorded first).
    func notFound(_ localIdentifiers: [String]) {
        guard self.current != nil else { return }
        for id in localIdentifiers where self.current?.numbers[ByteKey(id)] == nil { self.current?.numbers[ByteKey(id)] = Found.absent }
    }

    /// What is known, forgotten here: the caller is about to change the device's objects.
    func taken() -> Found? {
        defer { self.current = nil }
        return self.current
    }

    /// What `taken()` returned, kept again: the caller changed nothing after all.
    func restore(_ found: Found?) { self.current = found }

    func transactionDidChange(_ mutation: @autoclosure () -> MappingMutation) { self.current = nil }
}
