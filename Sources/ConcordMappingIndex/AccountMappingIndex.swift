import ConcordBytes
import ConcordDomain
import CConcordSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One account's mapping tables in memory: every device's objects (type, fingerprint, link) and the
/// account's cloud records. Each read answers exactly what storage answers (`MappingReads`); each
/// mutation does to it what the write transaction's method of the same name does to storage. Not
/// thread-safe: `MappingIndex` guards it with the account's lock.
///
/// Layout, for memory and for the hot path: identifier and fingerprint bytes live in byte arenas,
/// objects and records in contiguous arrays of plain values, and the hash tables map to array
/// positions. A lookup therefore reads plain memory and copies bytes into the answer, and never
/// retains a string another thread may be retaining at the same moment.
final class AccountMappingIndex {
    /// The account's mapping version this index reflects.
    var version: Int64 = 0
    /// False once a GUID that is not in canonical form was met: the index cannot key it, so the
    /// account is served from storage instead.
    private(set) var isExact = true
    /// Loaded from the account's snapshot (which is then still current on disk).
    private(set) var loadedFromSnapshot = false

    // MARK: Fingerprints, interned per account

    /// Each distinct fingerprint once, numbered.
    private var fingerprints = ByteTable()
    private var fingerprintBytes: [UInt8] { self.fingerprints.arena }
    private var fingerprintSlices: [(offset: UInt32, length: UInt8)] { self.fingerprints.slices }

    // MARK: Records

    struct Record: BitwiseCopyable {
        var guid: UUIDBits
        var fingerprint: UInt32
        var type: ObjectType
        /// The first key's A number (`noKey`: none); more keys in `moreRecordKeys`.
        var key: UInt32

        /// Size, stride and each field's offset (IndexSnapshot's layout check).
        static var snapshotLayout: [Int] {
            [MemoryLayout<Self>.size, MemoryLayout<Self>.stride]
                + ([\Self.guid, \Self.fingerprint, \Self.type, \Self.key] as [PartialKeyPath<Self>]).map { MemoryLayout<Self>.offset(of: $0) ?? -1 }
        }
    }
    private var records: [Record] = []
    /// Record number → its keys after the first (rare: a record whose objects' keys differed).
    private var moreRecordKeys: [UInt32: [UInt32]] = [:]

    // MARK: Keys, numbered per account

    static let noKey = UInt32.max
    private var keyTable = KeyTable()
    private var recordTable = RecordTable()

    // MARK: Devices

    private(set) var devices: [String: DeviceTable] = [:]

    init() {}

    /// An estimate of the heap bytes held: array and table capacities times their element sizes,
    /// arena bytes, and the dictionaries' entries at twice their size (at most 75 % full, growing by
    /// doubling). Measured against the process's resident size in docs/benchmarks.md.
    var estimatedBytes: Int {
        var total = self.fingerprints.estimatedBytes
        // An interned key: its dictionary entry (twice its size) and the string's heap copy.
        total += self.keyTable.estimatedBytes + self.moreRecordKeys.count * 2 * 48
        for answers in self.deviceAnswers.values { total += answers.wanted.capacity * 4 + 96 }
        total += self.records.capacity * MemoryLayout<Record>.stride + self.recordTable.estimatedBytes
        for device in self.devices.values { total += device.estimatedBytes }
        return total
    }

    // MARK: - Loading

    /// Loads the account: from its index snapshot when storage says that snapshot is the account's
    /// current state (IndexSnapshot.swift), else from its tables. A snapshot found unusable is
    /// removed. The version is the caller's to set.
    func load(from tx: any AccountReadTransaction, account accountID: String, checkingBudget index: MappingIndex) throws {
        if let snapshots = index.snapshots, let input = snapshots.open(account: accountID) {
            defer { input.close() }
            do {
                try self.restore(from: input, account: accountID, tx: tx, checkingBudget: index)
                self.loadedFromSnapshot = true
                index.countSnapshotLoad()
                return
            } catch is MappingIndex.OverBudget {
                throw MappingIndex.OverBudget()
            } catch {
                snapshots.remove(account: accountID)
                index.countRejectedSnapshot()
            }
        }
        try self.load(from: tx, checkingBudget: index)
    }

    /// Streams the account's tables from a storage snapshot (one query per table), checking the
    /// budget as it grows. The version is the caller's to set.
    func load(from tx: any AccountReadTransaction, checkingBudget index: MappingIndex) throws {
        var rows = 0
        var lastDevice: (id: String, table: DeviceTable)?
        try tx.streamMappingTables(devices: { id in
            self.insertDevice(id)
        }, records: { record, _ in
            self.appendRecord(record)
            rows += 1
            if rows & 4095 == 0 { try index.checkBudget(self) }
        }, recordKeys: { guid, key in
            self.addRecordKey(guid: guid, key: key)
        }, objects: { row in
            // Rows come grouped by device (storage's key order): compare the ID rather than hash it.
            if row.deviceID != lastDevice?.id { lastDevice = self.devices[row.deviceID].map { (row.deviceID, $0) } }
            guard let device = lastDevice?.table else { return }
            let guid = row.linkedGUID.flatMap(UUIDBits.init)
            if row.linkedGUID != nil, guid == nil { self.isExact = false }
            let record = guid.flatMap { self.number(of: $0) }
            // A linked object's fingerprint is usually its record's: that number, without a lookup.
            var fingerprint: UInt32
            if let record, self.fingerprint(self.records[Int(record)].fingerprint, is: row.fingerprint) {
                fingerprint = self.records[Int(record)].fingerprint
            } else {
                fingerprint = self.intern(row.fingerprint)
            }
            device.put(row.localIdentifier, type: row.type, fingerprint: fingerprint, record: record.map(Int32.init) ?? -1,
                       linkedGUID: guid, key: row.keyA.map { self.keyTable.intern(type: row.type, a: $0) } ?? Self.noKey,
                       creationSecond: row.creationSecond, isNew: true)   // a device's identifiers are unique in storage
            rows += 1
            if rows & 4095 == 0 { try index.checkBudget(self) }
        })
        self.records = self.records.withUnsafeBufferPointer { Array($0) }
        self.fingerprints.shrinkToFit()
        for device in self.devices.values { device.shrinkToFit() }
        try index.checkBudget(self)
    }

    // MARK: - Snapshots (IndexSnapshot.swift)

    /// Writes the index as it lies, after a header naming the account, the snapshot's ID and the
    /// version it reflects. The answers cached per device are not written (they are recomputed).
    func writeSnapshot(_ output: any MappingIndexSnapshotOutput, account accountID: String, snapshotID: String) throws {
        var w = SnapshotWriter(output)
        try SnapshotHeader(accountID: accountID, snapshotID: snapshotID, version: self.version, estimatedBytes: Int64(self.estimatedBytes)).write(&w)
        try w.value(self.isExact ? UInt8(1) : 0)
        try self.fingerprints.write(snapshot: &w)
        try w.array(self.records)
        let more = self.moreRecordKeys.sorted { $0.key < $1.key }
        try w.array(more.map(\.key))
        for (_, keys) in more { try w.array(keys) }
        try self.keyTable.write(snapshot: &w)
        try self.recordTable.write(snapshot: &w)
        let devices = self.devices.sorted { $0.key < $1.key }
        try w.value(UInt64(devices.count))
        for (id, table) in devices {
            try w.string(id)
            try table.write(snapshot: &w)
        }
        try w.finish()
    }

    /// Reads a snapshot into this (empty) index, when it is the account's at the version and with
    /// the snapshot ID storage holds, and fits the budget; nothing is kept from a snapshot that fails.
    private func restore(from input: any MappingIndexSnapshotInput, account accountID: String, tx: any AccountReadTransaction,
                         checkingBudget index: MappingIndex) throws {
        var r = SnapshotReader(input)
        let header = try SnapshotHeader.read(&r)
        guard header.accountID == accountID, header.snapshotID == (try tx.indexSnapshotID()), header.version == (try tx.mappingVersion()) else {
            throw UnusableSnapshot(reason: "not the account's current state")
        }
        guard header.estimatedBytes <= index.budgetBytes else { throw MappingIndex.OverBudget() }
        let isExact = try r.value(UInt8.self) == 1
        let fingerprints = try ByteTable(snapshot: &r)
        let records: [Record] = try r.array()
        let moreKeys: [UInt32] = try r.array()
        var moreRecordKeys: [UInt32: [UInt32]] = [:]
        for n in moreKeys { moreRecordKeys[n] = try r.array() }
        let keyTable = try KeyTable(snapshot: &r)
        let recordTable = try RecordTable(snapshot: &r, recordCount: records.count)
        var devices: [String: DeviceTable] = [:]
        let deviceCount = try r.value(UInt64.self)
        guard deviceCount <= UInt64(input.remaining) else { throw UnusableSnapshot(reason: "a device count longer than the file") }
        for _ in 0..<deviceCount {
            let id = try r.string()
            devices[id] = try DeviceTable(snapshot: &r, recordCount: records.count)
        }
        try r.finish()
        guard fingerprints.count > 0 || records.isEmpty else { throw UnusableSnapshot(reason: "records without fingerprints") }
        self.isExact = isExact
        self.fingerprints = fingerprints
        self.records = records
        self.moreRecordKeys = moreRecordKeys
        self.keyTable = keyTable
        self.recordTable = recordTable
        self.devices = devices
        try index.checkBudget(self)
    }

    private func number(of key: UUIDBits) -> UInt32? {
        self.recordTable.number(of: key) { self.records[Int($0)].guid }
    }

    /// Records come in creation order, so array order is "oldest first".
    private func appendRecord(_ record: CloudRecord) {
        guard let key = UUIDBits(record.guid) else { self.isExact = false; return }
        let number = UInt32(self.records.count)
        self.records.append(Record(guid: key, fingerprint: self.intern(record.fingerprint), type: record.type, key: Self.noKey))
        self.recordTable.insert(key, number: number) { self.records[Int($0)].guid }
        for device in self.devices.values { device.recordAdded(key, number: number) }
    }

    private func intern(_ fingerprint: String) -> UInt32 {
        var s = fingerprint
        return s.withUTF8 { self.fingerprints.intern($0) }
    }

    /// The record's key numbers.
    private func keys(ofRecord n: Int) -> [UInt32] {
        let first = self.records[n].key
        guard first != Self.noKey else { return [] }
        return [first] + (self.moreRecordKeys[UInt32(n)] ?? [])
    }

    /// The record takes the key (once).
    private func addRecordKey(guid: String, key: ObjectKey) {
        guard let n = self.recordNumber(for: guid) else { return }
        let k = self.keyTable.intern(type: key.type, a: key.a)
        if self.records[Int(n)].key == Self.noKey { self.records[Int(n)].key = k; return }
        if self.keys(ofRecord: Int(n)).contains(k) { return }
        self.moreRecordKeys[n, default: []].append(k)
    }

    /// Whether fingerprint number `n` is `fingerprint`, byte for byte.
    private func fingerprint(_ n: UInt32, is fingerprint: String) -> Bool {
        var wanted = fingerprint
        let slice = self.fingerprints.slices[Int(n)]
        return wanted.withUTF8 { w in
            w.count == Int(slice.length) && self.fingerprints.arena.withUnsafeBufferPointer { a in
                w.isEmpty || memcmp(a.baseAddress! + Int(slice.offset), w.baseAddress!, w.count) == 0
            }
        }
    }

    /// Whether the fingerprint number is the empty fingerprint (none).
    private func isEmpty(fingerprint n: UInt32) -> Bool { self.fingerprintSlices[Int(n)].length == 0 }

    private func recordNumber(for guid: String) -> UInt32? {
        UUIDBits(guid).flatMap { self.number(of: $0) }
    }

    private func fingerprint(_ n: UInt32) -> String {
        let slice = self.fingerprintSlices[Int(n)]
        return self.fingerprintBytes.withUnsafeBufferPointer { b in
            String(decoding: UnsafeBufferPointer(rebasing: b[Int(slice.offset)..<Int(slice.offset) + Int(slice.length)]), as: UTF8.self)
        }
    }

    // MARK: - Reads (MappingReads' semantics)

    /// Local → cloud: per identifier, in order, whether the device has it and its link's cloud identifier.
    ///
    /// After `findAll`, two more prefetching passes (the fingerprint's slice, then its bytes) before
    /// the answers are written into one buffer sized exactly: each pass's loads are independent
    /// across the batch, so their cache misses overlap.
    func linkLookups(_ deviceID: String, localIdentifiers: IdentifierBatch) -> LinkLookups {
        guard let device = self.devices[deviceID] else {
            return LinkLookups(lookups: [LinkLookup](repeating: .missing, count: localIdentifiers.count))
        }
        let found = device.findAll(localIdentifiers)
        var lookups = [LinkLookup](repeating: .missing, count: found.count)
        var bytes: [UInt8] = []
        device.objectSlots.withUnsafeBufferPointer { slots in
          self.records.withUnsafeBufferPointer { records in
            self.fingerprintSlices.withUnsafeBufferPointer { slices in
                self.fingerprintBytes.withUnsafeBufferPointer { fingerprints in
                    // The identifier is spelled with the record's fingerprint (§5: not necessarily the object's).
                    @inline(__always) func fingerprint(_ o: DeviceTable.Slot) -> UInt32 { o.record >= 0 ? records[Int(o.record)].fingerprint : o.fingerprint }
                    for n in found where n >= 0 && slots[Int(n)].hasLink && slots[Int(n)].record >= 0 {
                        concord_prefetch(records.baseAddress! + Int(slots[Int(n)].record))
                    }
                    for n in found where n >= 0 && slots[Int(n)].hasLink {
                        concord_prefetch(slices.baseAddress! + Int(fingerprint(slots[Int(n)])))
                    }
                    var total = 0
                    for n in found where n >= 0 && slots[Int(n)].hasLink {
                        let slice = slices[Int(fingerprint(slots[Int(n)]))]
                        total += Self.cloudIdentifierPrefix + Int(slice.length)
                        concord_prefetch(fingerprints.baseAddress! + Int(slice.offset))
                        concord_prefetch(fingerprints.baseAddress! + Int(slice.offset) + Int(slice.length))
                    }
                    bytes = [UInt8](unsafeUninitializedCapacity: total) { out, written in
                        var at = 0
                        for (i, n) in found.enumerated() where n >= 0 {
                            let o = slots[Int(n)]
                            guard o.hasLink else { lookups[i] = .unlinked; continue }
                            let guid = o.record >= 0 ? records[Int(o.record)].guid : device.orphanGUID(ofSlot: n)
                            let count = Self.writeCloudIdentifier(guid: guid, type: o.type, fingerprint: slices[Int(fingerprint(o))],
                                                                  from: fingerprints, to: out.baseAddress! + at)
                            lookups[i] = .linked(start: at, count: count)
                            at += count
                        }
                        written = at
                    }
                }
            }
          }
        }
        return LinkLookups(lookups: lookups, bytes: bytes)
    }

    /// Cloud → local for a batch, read from its bytes, where that decides an item: found by its
    /// link (step 2), not well formed (step 1), and, when no object carries one of its record's
    /// keys, step 4 by content (not found, one object, several) unless it would store a link.
    /// Items with keys to weigh (step 3) or a link to store are `.undecided`: the caller resolves
    /// them in full.
    ///
    /// The warm path of cloud → local, made like local → cloud's: no string or value per found
    /// item, passes over the batch that prefetch what the next reads (record numbers, the device's
    /// links, the fingerprints, the identifiers' bytes), and the answers copied into one buffer
    /// sized exactly. A warm batch leaves nothing undecided but the key matches of step 3.
    func quickLocalIdentifiers(_ deviceID: String, cloudIdentifiers batch: IdentifierBatch, contentMatch: Bool) -> QuickLocalIdentifiers {
        let n = batch.count
        var lookups = [QuickLocalIdentifiers.Lookup](repeating: .undecided, count: n)
        guard let device = self.devices[deviceID], n > 0 else { return QuickLocalIdentifiers(lookups: lookups) }
        var keys = [UUIDBits?](repeating: nil, count: n)
        var types = [ObjectType](repeating: .asset, count: n)
        batch.bytes.withUnsafeBufferPointer { b in
            for (i, span) in batch.spans.enumerated() {
                let id = UnsafeBufferPointer(rebasing: b[Int(span.start)..<Int(span.start) + Int(span.length)])
                guard let type = CloudIdentifier.wellFormedType(id),
                      let key = UUIDBits(bytes: UnsafeBufferPointer(rebasing: id[id.startIndex..<id.startIndex + 36]), anyCase: true) else {
                    lookups[i] = .invalid
                    continue
                }
                keys[i] = key
                types[i] = type
            }
        }
        var numbers = self.records.withUnsafeBufferPointer { self.recordTable.numbers(of: keys, records: $0) }
        self.records.withUnsafeBufferPointer { records in
            for i in 0..<n where numbers[i] >= 0 && records[Int(numbers[i])].type != types[i] { numbers[i] = -1 }
        }
        // The object each answer spells: the linked one (step 2), else the only one with the content (step 4).
        var answers = device.linkedSlots(records: numbers)
        // Not linked, and no object carrying one of the record's keys (step 3 stays undecided):
        // step 4 by content, decided here unless it stores a link (the full path then writes it).
        var byContent: [Int] = []
        var contents: [UnsafeBufferPointer<UInt8>] = []
        batch.bytes.withUnsafeBufferPointer { b in
            for i in 0..<n where answers[i] < 0 && keys[i] != nil {
                let record = numbers[i]
                if record >= 0 && self.deviceCarriesAKey(of: Int(record), device) { continue }
                let span = batch.spans[i]
                let fingerprint = UnsafeBufferPointer(rebasing: b[Int(span.start) + Self.cloudIdentifierPrefix..<Int(span.start) + Int(span.length)])
                if fingerprint.isEmpty || !contentMatch { lookups[i] = .notFound; continue }
                byContent.append(i)
                contents.append(fingerprint)
            }
            // `contents` points into the batch's bytes: used only inside this closure.
            let fingerprints = self.fingerprints.numbers(of: contents)
            device.prefetchContent(fingerprints)
            for (j, i) in byContent.enumerated() {
                let slots = fingerprints[j] < 0 ? [] : device.slots(withContent: UInt32(fingerprints[j]), type: types[i])
                switch slots.count {
                case 0: lookups[i] = .notFound
                case 1:
                    // A link is stored when the record exists with exactly this content and the
                    // object has none (`MappingService.resolve`): that case goes the full way.
                    let object = device.objectSlots[Int(slots[0])]
                    let record = numbers[i]
                    if object.record >= 0 || record < 0 || self.records[Int(record)].fingerprint != UInt32(fingerprints[j]) {
                        answers[i] = slots[0]
                    }
                default:
                    lookups[i] = .multiple(slots.map { device.identifier(ofSlot: $0) }.sorted { $0.utf8Precedes($1) })
                }
            }
        }
        let bytes = device.withLookup { l -> [UInt8] in
            var total = 0
            for s in answers where s >= 0 { total += device.spelledLength(ofSlot: s, l) }
            return [UInt8](unsafeUninitializedCapacity: total) { out, written in
                var at = 0
                for (i, s) in answers.enumerated() where s >= 0 {
                    let count = device.spell(slot: s, l, into: out.baseAddress! + at)
                    lookups[i] = .found(start: at, count: count)
                    at += count
                }
                written = at
            }
        }
        return QuickLocalIdentifiers(lookups: lookups, bytes: bytes)
    }

    /// Whether an object of the device carries one of the record's keys.
    private func deviceCarriesAKey(of record: Int, _ device: DeviceTable) -> Bool {
        let first = self.records[record].key
        guard first != Self.noKey else { return false }
        if device.hasKey(first) { return true }
        return self.moreRecordKeys[UInt32(record)]?.contains { device.hasKey($0) } ?? false
    }

    /// Cloud → local steps 2–4 inputs: per identifier, the device's object linked to its record
    /// (when the record exists with the identifier's type) and the record itself when it has
    /// exactly the identifier's content.
    ///
    /// In passes over the batch (see `RecordTable.numbers` and `DeviceTable.linkedSlots`): record
    /// numbers, then the device's links, then the bytes each answer is made of, each prefetched.
    func recordLookups(_ deviceID: String, identifiers: [CloudIdentifier]) -> [RecordLookup] {
        let device = self.devices[deviceID]
        return self.records.withUnsafeBufferPointer { records in
            self.fingerprintSlices.withUnsafeBufferPointer { slices in
                self.fingerprintBytes.withUnsafeBufferPointer { fingerprints in
                    var numbers = self.recordTable.numbers(of: identifiers.map { UUIDBits($0.guid) }, records: records)
                    for (i, c) in identifiers.enumerated() where numbers[i] >= 0 && records[Int(numbers[i])].type != c.type { numbers[i] = -1 }
                    let linked = device?.linkedSlots(records: numbers) ?? [Int32](repeating: -1, count: numbers.count)
                    // Records no object of the device is linked to are compared by content.
                    for (i, n) in numbers.enumerated() where n >= 0 && linked[i] < 0 {
                        concord_prefetch(fingerprints.baseAddress! + Int(slices[Int(records[Int(n)].fingerprint)].offset))
                    }
                    return identifiers.indices.map { i -> RecordLookup in
                        let n = numbers[i]
                        guard n >= 0 else { return RecordLookup() }
                        // Step 2, the warm path: the linked object is the whole answer.
                        if let device, linked[i] >= 0 { return RecordLookup(linkedLocalIdentifier: device.identifier(ofSlot: linked[i])) }
                        let c = identifiers[i]
                        let r = records[Int(n)]
                        var wanted = c.fingerprint
                        let slice = slices[Int(r.fingerprint)]
                        let same = wanted.withUTF8 { w in
                            w.count == Int(slice.length) && (w.count == 0 || memcmp(w.baseAddress!, fingerprints.baseAddress! + Int(slice.offset), w.count) == 0)
                        }
                        let record = CloudRecord(guid: c.guid, type: r.type, fingerprint: same ? c.fingerprint : self.fingerprint(r.fingerprint))
                        guard let device, r.key != Self.noKey else { return RecordLookup(record: record) }
                        // Step 3: the device's objects carrying one of the record's keys.
                        var matches: [StoredObject] = []
                        for key in self.keys(ofRecord: Int(n)) {
                            for slot in device.slots(withKey: key) { matches.append(self.storedObject(device, slot: slot)) }
                        }
                        matches.sort { $0.object.localIdentifier.utf8.lexicographicallyPrecedes($1.object.localIdentifier.utf8) }
                        return RecordLookup(record: record, keyMatches: matches)
                    }
                }
            }
        }
    }

    /// The object in `slot`: identity, type, fingerprint and link.
    private func storedObject(_ device: DeviceTable, slot: Int32) -> StoredObject {
        let o = device.objectSlots[Int(slot)]
        var link: CloudRecord?
        if o.hasLink {
            if o.record >= 0 {
                let r = self.records[Int(o.record)]
                link = CloudRecord(guid: r.guid.string, type: r.type, fingerprint: self.fingerprint(r.fingerprint))
            } else {
                link = CloudRecord(guid: device.orphanGUID(ofSlot: slot).string, type: o.type, fingerprint: self.fingerprint(o.fingerprint))
            }
        }
        return StoredObject(object: LibraryObject(localIdentifier: device.identifier(of: o), type: o.type, fingerprint: self.fingerprint(o.fingerprint)),
                            link: link)
    }

    // MARK: - Fingerprints on demand (§5)

    /// The wanted candidates of a device, by one pass over the account's records in memory: a
    /// record with a fingerprint, no link on the device, a link on another, and no key the device's
    /// objects carry; with its linked objects' creation seconds.
    private func wantedCandidates(_ device: DeviceTable) -> WantedCandidates {
        // Local copies (copy-on-write references): plain array reads in the loop, no class access each.
        let records = self.records, slices = self.fingerprintSlices
        let mine = device.linksByRecord
        let others = self.devices.values.filter { $0 !== device }.map { (links: $0.linksByRecord, slots: $0.objectSlots) }
        var undated = [false, false, false], any = [false, false, false]
        var seconds: [[Int64]] = [[], [], []]
        for n in records.indices {
            let r = records[n]
            guard slices[Int(r.fingerprint)].length > 0, n >= mine.count || mine[n] < 0 else { continue }
            var linkedElsewhere = false
            for other in others where n < other.links.count && other.links[n] >= 0 { linkedElsewhere = true; break }
            guard linkedElsewhere else { continue }
            if r.key != Self.noKey {
                if device.hasKey(r.key) { continue }
                if let more = self.moreRecordKeys[UInt32(n)], more.contains(where: { device.hasKey($0) }) { continue }
            }
            let t = r.type.partOrder
            any[t] = true
            var dated = false
            for other in others where n < other.links.count && other.links[n] >= 0 {
                let second = other.slots[Int(other.links[n])].creationSecond
                if second != Int64.min { seconds[t].append(second); dated = true }
            }
            if !dated { undated[t] = true }
        }
        var candidates = WantedCandidates()
        for type in ObjectType.allCases where any[type.partOrder] {
            candidates.types.insert(type)
            if undated[type.partOrder] { candidates.undated.insert(type) } else { candidates.seconds[type] = Set(seconds[type.partOrder]) }
        }
        return candidates
    }

    /// A device's wanted list and counts as of one mapping version: computed by the first read
    /// after a mapping write of the account, so paging through the list and polling the counts
    /// cost a binary search each, not a pass over the account (docs/api-notes.md).
    struct DeviceAnswers {
        var version: Int64
        /// The wanted objects' slots, in local identifier byte order.
        var wanted: [Int32]
        var status: LibraryStatus
    }
    private var deviceAnswers: [String: DeviceAnswers] = [:]

    /// The device's answers at this index's version (computed now when the version moved on).
    private func answers(_ deviceID: String, _ device: DeviceTable) -> DeviceAnswers {
        if let cached = self.deviceAnswers[deviceID], cached.version == self.version { return cached }
        var status = LibraryStatus(objects: 0, withFingerprint: 0, withKey: 0, linked: 0, wanted: 0)
        var unknown: [Int32] = []   // no fingerprint, no link: what could be wanted
        for (n, o) in device.objectSlots.enumerated() where o.live {
            status.objects += 1
            let hasFingerprint = !self.isEmpty(fingerprint: o.fingerprint)
            if hasFingerprint { status.withFingerprint += 1 }
            if o.key != Self.noKey { status.withKey += 1 }
            if o.hasLink { status.linked += 1 } else if !hasFingerprint { unknown.append(Int32(n)) }
        }
        var wanted: [Int32] = []
        if !unknown.isEmpty {
            let candidates = self.wantedCandidates(device)
            let slots = device.objectSlots
            for n in unknown {
                let o = slots[Int(n)]
                if candidates.wants(type: o.type, creationSecond: o.creationSecond == Int64.min ? nil : o.creationSecond) { wanted.append(n) }
            }
            device.sortByIdentifier(&wanted)
        }
        status.wanted = wanted.count
        let answers = DeviceAnswers(version: self.version, wanted: wanted, status: status)
        self.deviceAnswers[deviceID] = answers
        return answers
    }

    func wantedPage(_ deviceID: String, after: String?, limit: Int) -> WantedPage {
        guard let device = self.devices[deviceID] else { return WantedPage(objects: [], next: nil, total: 0) }
        let answers = self.answers(deviceID, device)
        let list = answers.wanted
        // The first wanted object strictly after `after`, by binary search over the sorted slots.
        var low = 0, high = list.count
        if let after {
            while low < high {
                let mid = (low + high) / 2
                if after.utf8.lexicographicallyPrecedes(device.identifier(ofSlot: list[mid]).utf8) { high = mid } else { low = mid + 1 }
            }
        }
        let end = min(list.count, low + limit)
        let objects = list[low..<end].map { n in
            WantedObject(localIdentifier: device.identifier(ofSlot: n), type: device.objectSlots[Int(n)].type)
        }
        return WantedPage(objects: objects, next: end < list.count ? objects.last?.localIdentifier : nil, total: list.count)
    }

    func libraryStatus(_ deviceID: String) -> LibraryStatus {
        guard let device = self.devices[deviceID] else { return LibraryStatus(objects: 0, withFingerprint: 0, withKey: 0, linked: 0, wanted: 0) }
        return self.answers(deviceID, device).status
    }

    /// Objects with one of these contents, sorted by local identifier byte order, each with its link.
    func objects(_ deviceID: String, matching keys: [ContentKey]) -> [StoredObject] {
        guard let device = self.devices[deviceID] else { return [] }
        var result: [StoredObject] = []
        for key in keys {
            var wanted = key.fingerprint
            guard let fp = wanted.withUTF8({ self.fingerprints.number($0) }) else { continue }
            for slot in device.slots(withContent: fp, type: key.type) {
                let o = device.objectSlots[Int(slot)]
                let id = device.identifier(of: o)
                var link: CloudRecord?
                if o.record >= 0 {
                    let r = self.records[Int(o.record)]
                    link = CloudRecord(guid: r.guid.string, type: r.type, fingerprint: self.fingerprint(r.fingerprint))
                }
                result.append(StoredObject(object: LibraryObject(localIdentifier: id, type: o.type, fingerprint: key.fingerprint), link: link))
            }
        }
        result.sort { $0.object.localIdentifier.utf8.lexicographicallyPrecedes($1.object.localIdentifier.utf8) }
        return result
    }

    /// Appends `<GUID>:<type>:<fingerprint>` to `bytes`.
    /// "GUID:TYP:" before the fingerprint of a cloud identifier.
    private static let cloudIdentifierPrefix = 41

    /// Writes `GUID:type:fingerprint` at `out`; returns its length.
    private static func writeCloudIdentifier(guid: UUIDBits, type: ObjectType, fingerprint: (offset: UInt32, length: UInt8),
                                             from fingerprints: UnsafeBufferPointer<UInt8>, to out: UnsafeMutablePointer<UInt8>) -> Int {
        guid.write(into: out)
        out[36] = UInt8(ascii: ":")
        let code = type.codeBytes
        out[37] = code.0; out[38] = code.1; out[39] = code.2
        out[40] = UInt8(ascii: ":")
        let length = Int(fingerprint.length)
        if length > 0 { (out + cloudIdentifierPrefix).update(from: fingerprints.baseAddress! + Int(fingerprint.offset), count: length) }
        return cloudIdentifierPrefix + length
    }

    // MARK: - Mutations (the write transaction's semantics)

    @discardableResult
    func insertDevice(_ deviceID: String) -> DeviceTable {
        if let d = self.devices[deviceID] { return d }
        let d = DeviceTable(recordCount: self.records.count)
        self.devices[deviceID] = d
        return d
    }

    /// The device with its objects and links.
    func deleteDevice(_ deviceID: String) {
        self.devices[deviceID] = nil
        self.deviceAnswers[deviceID] = nil
    }

    /// New records, newer than every existing one, in array order.
    func insertRecords(_ records: [CloudRecord]) {
        for r in records { self.appendRecord(r) }
    }

    /// Links each object (when it exists) to the GUID, replacing the object's link.
    func setLinks(_ deviceID: String, _ links: [(localIdentifier: String, guid: String)]) {
        guard let device = self.devices[deviceID] else { return }
        for (local, guid) in links {
            guard let key = UUIDBits(guid) else { self.isExact = false; continue }
            device.setLink(local, guid: key, record: self.number(of: key).map(Int32.init) ?? -1)
        }
    }

    /// Drops the links of these records on the device.
    func dropLinks(_ deviceID: String, guids: [String]) {
        guard let device = self.devices[deviceID] else { return }
        for guid in guids {
            guard let key = UUIDBits(guid) else { continue }   // no stored GUID is spelt that way
            device.dropLink(guid: key, record: self.number(of: key).map(Int32.init) ?? -1)
        }
    }

    func dropAllLinks(_ deviceID: String) {
        self.devices[deviceID]?.dropAllLinks()
    }

    /// Inserts or replaces objects, each with the given link (nil: unlinked).
    func putObjects(_ deviceID: String, _ objects: PackedObjectRows) {
        guard let device = self.devices[deviceID] else { return }
        objects.forEach(device: deviceID) { s in
            var key: UUIDBits?
            if let guid = s.linkedGUID {
                key = UUIDBits(guid)
                if key == nil { self.isExact = false; return }
            }
            device.put(s.localIdentifier, type: s.type, fingerprint: self.intern(s.fingerprint),
                       record: key.flatMap { self.number(of: $0) }.map(Int32.init) ?? -1, linkedGUID: key,
                       key: s.keyA.map { self.keyTable.intern(type: s.type, a: $0) } ?? Self.noKey, creationSecond: s.creationSecond)
        }
    }

    func deleteObjects(_ deviceID: String, localIdentifiers: [String]) {
        guard let device = self.devices[deviceID] else { return }
        for id in localIdentifiers { device.remove(id) }
    }

    func apply(_ mutation: MappingMutation) {
        switch mutation {
        case .insertDevice(let id): self.insertDevice(id)
        case .deleteDevice(let id): self.deleteDevice(id)
        case .insertRecords(let records): self.insertRecords(records)
        case .setLinks(let device, let links): self.setLinks(device, links)
        case .dropLinks(let device, let guids): self.dropLinks(device, guids: guids)
        case .dropAllLinks(let device): self.dropAllLinks(device)
        case .putObjects(let device, let objects): self.putObjects(device, objects)
        case .deleteObjects(let device, let ids): self.deleteObjects(device, localIdentifiers: ids)
        case .addRecordKeys(let keys): for (guid, key) in keys { self.addRecordKey(guid: guid, key: key) }
        case .fillRecordFingerprints(let fills):
            for (guid, fingerprint) in fills where !fingerprint.isEmpty {
                guard let n = self.recordNumber(for: guid), self.isEmpty(fingerprint: self.records[Int(n)].fingerprint) else { continue }
                self.records[Int(n)].fingerprint = self.intern(fingerprint)
            }
        }
    }
}

extension ObjectType {
    /// The three ASCII digits of `code`.
    var codeBytes: (UInt8, UInt8, UInt8) {
        switch self {
        case .asset: (0x30, 0x30, 0x31)
        case .assetCollection: (0x30, 0x34, 0x30)
        case .collectionList: (0x30, 0x32, 0x30)
        }
    }
}

/// The index's answers through the `MappingReads` protocol the mapping rules read.
struct IndexedMappingReads: MappingReads {
    let index: AccountMappingIndex

    func linkLookups(_ device: DeviceRef, localIdentifiers: IdentifierBatch) throws -> LinkLookups {
        self.index.linkLookups(device.deviceID, localIdentifiers: localIdentifiers)
    }

    func recordLookups(_ device: DeviceRef, identifiers: [CloudIdentifier]) throws -> [RecordLookup] {
        self.index.recordLookups(device.deviceID, identifiers: identifiers)
    }

    func quickLocalIdentifiers(_ device: DeviceRef, cloudIdentifiers batch: IdentifierBatch, contentMatch: Bool) throws -> QuickLocalIdentifiers? {
        self.index.quickLocalIdentifiers(device.deviceID, cloudIdentifiers: batch, contentMatch: contentMatch)
    }

    func objects(_ device: DeviceRef, matching keys: [ContentKey]) throws -> [StoredObject] {
        self.index.objects(device.deviceID, matching: keys)
    }

    func wantedPage(_ device: DeviceRef, after: String?, limit: Int) throws -> WantedPage {
        self.index.wantedPage(device.deviceID, after: after, limit: limit)
    }

    func libraryStatus(_ device: DeviceRef) throws -> LibraryStatus {
        self.index.libraryStatus(device.deviceID)
    }
}
