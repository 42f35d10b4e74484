import CConcordSystem
import ConcordBytes
import ConcordDomain
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Loading an account: from its tables (one streamed query per table) or from its snapshot.
extension AccountMappingIndex {
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

    /// Streams the account's tables from a storage snapshot (one query per table, as bytes:
    /// `MappingTableBytesReads`), checking the budget as it grows. The version is the caller's to set.
    func load(from tx: any AccountReadTransaction, checkingBudget index: MappingIndex) throws {
        let loader = TableBytesLoader(self, budget: index)
        try tx.streamMappingTableBytes(into: loader)
        try loader.finish()
        self.records = self.records.withHeadroom()
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
    func restore(from input: any MappingIndexSnapshotInput, account accountID: String, tx: any AccountReadTransaction,
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
        self.recordFingerprints = FingerprintBits()
        for r in records { self.recordFingerprints.insert(r.fingerprint) }
        self.moreRecordKeys = moreRecordKeys
        self.keyTable = keyTable
        self.recordTable = recordTable
        self.devices = devices
        try index.checkBudget(self)
    }
}

/// `AccountMappingIndex.load` from bytes (`MappingTableBytesReads`), with no `String` per row. A
/// link comes as its record's creation order, which gives the record here (`LinkTargets`: no GUID
/// to parse and look up); an identifier's bytes go straight into its device's arena; each device's
/// table is sized from its object count first.
///
/// Devices may load at the same time on different threads (`takesDevicesConcurrently`): each
/// thread writes only its device's table and reads the records through `LinkTargets`, which no
/// longer changes then; the account's shared tables (fingerprints, keys) take a lock, which a
/// mapped library rarely needs (a linked object's fingerprint is its record's, known already).
private final class TableBytesLoader: MappingTableSink {
    let target: AccountMappingIndex
    let budget: MappingIndex
    var deviceIDs: [String] = [], objectCounts: [Int] = []
    var tables: [DeviceTable] = []
    /// Each device's objects waiting to go into its table (`DeviceTable.putNew(_:)`), one batch per
    /// device; plain memory, so that a row reaches its device's batch with no reference counted and
    /// no access checked (only the device's own thread touches it).
    private var pending: UnsafeMutablePointer<DeviceTable.NewObjects>?
    private var pendingCount = 0
    /// Records waiting to go into the index together (`putNewRecords`).
    private var newRecords = NewRecords()
    var links = LinkTargets()
    var rows = 0
    /// Set by `beginObjects`: objects may come from several threads from then on.
    private var concurrent = false
    /// Guards the account's fingerprint and key tables while devices load concurrently.
    private let shared = Mutex(())

    init(_ target: AccountMappingIndex, budget: MappingIndex) {
        self.target = target
        self.budget = budget
    }

    deinit {
        self.links.deallocate()
        if let pending {
            pending.deinitialize(count: self.pendingCount)
            pending.deallocate()
        }
    }

    /// Every batch still pending put into the index (after the last object).
    func finish() throws {
        if !self.newRecords.records.isEmpty { try self.putNewRecords() }
        for n in 0..<self.pendingCount { self.tables[n].putNew(&self.pending![n]) }
    }

    var takesDevicesConcurrently: Bool { true }

    /// A row the bytes could not carry was skipped or left unlinked: the account is then not kept.
    func markInexact() { self.target.isExact = false }

    func device(_ id: String, objects: Int) throws {
        self.deviceIDs.append(id)
        self.objectCounts.append(objects)
    }

    func expectRecords(_ count: Int) {
        // With the headroom `withHeadroom` keeps after the load: the first record appended after
        // it (another instance's first mapping, caught up with) then copies no array.
        self.target.records.reserveCapacity(Headroom.capacity(for: count))
        // The tables at the size the records' inserts one by one would grow them to, grown once.
        self.target.recordTable.reserve(count)
        self.target.fingerprints.reserve(count)
        self.links.reserve(orders: count + 1)
    }

    func record(guid: UUIDBits, type: ObjectType, fingerprint: UnsafeBufferPointer<UInt8>, fingerprintKey: UnsafeRawBufferPointer, order: Int64) throws {
        self.newRecords.append(guid: guid, type: type, fingerprint: fingerprint, key: fingerprintKey, order: order)
        if self.newRecords.isFull { try self.putNewRecords() }
    }

    /// The records waiting in `newRecords` into the index. Each record writes its fingerprint's
    /// bucket and its GUID's at random: those of the whole batch are prefetched first, so that
    /// their cache misses are in flight together rather than one after another.
    private func putNewRecords() throws {
        let index = self.target
        let batch = self.newRecords
        self.newRecords.removeAll()
        try batch.bytes.withUnsafeBufferPointer { bytes in
            try batch.records.withUnsafeBufferPointer { records in
                var hashes = [UInt32](repeating: 0, count: records.count)
                for (i, r) in records.enumerated() {
                    hashes[i] = DeviceTable.hash(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[r.fingerprint])))
                    index.fingerprints.prefetch(hash: hashes[i])
                    index.recordTable.prefetch(r.guid)
                }
                for (i, r) in records.enumerated() {
                    let number = UInt32(index.records.count)
                    let f = index.fingerprints.intern(UnsafeBufferPointer(rebasing: bytes[r.fingerprint]), hash: hashes[i])
                    index.records.append(AccountMappingIndex.Record(guid: r.guid, fingerprint: f, type: r.type, key: AccountMappingIndex.noKey))
                    index.recordFingerprints.insert(f)
                    index.recordTable.insert(r.guid, number: number) { index.records[Int($0)].guid }
                    self.links.set(order: r.order, record: Int32(number), fingerprint: f, guid: r.guid, key: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[r.key])))
                    try self.counted()
                }
            }
        }
    }

    func recordKey(guid: UUIDBits, type: ObjectType, a: UnsafeBufferPointer<UInt8>) throws {
        if !self.newRecords.records.isEmpty { try self.putNewRecords() }
        guard let n = self.target.number(of: guid) else { return }
        self.target.addRecordKey(number: n, key: self.target.keyTable.intern(type: type, a: a))
    }

    /// Every device's table, sized; past this point objects may come from several threads, so the
    /// budget is checked here, against the tables' sizes plus their identifiers' bytes to come.
    func beginObjects() throws {
        if !self.newRecords.records.isEmpty { try self.putNewRecords() }
        for n in self.deviceIDs.indices {
            let table = DeviceTable(recordCount: self.target.records.count)
            table.reserve(objects: self.objectCounts[n])
            self.tables.append(table)
            self.target.devices[self.deviceIDs[n]] = table
        }
        let pending = UnsafeMutablePointer<DeviceTable.NewObjects>.allocate(capacity: max(1, self.tables.count))
        pending.initialize(repeating: DeviceTable.NewObjects(), count: self.tables.count)
        for n in 0..<self.tables.count { pending[n] = DeviceTable.NewObjects() }   // each its own buffers
        self.pending = pending
        self.pendingCount = self.tables.count
        let identifierBytes = self.objectCounts.reduce(0, +) * 32
        if self.target.estimatedBytes + identifierBytes > self.budget.budgetBytes { throw MappingIndex.OverBudget() }
        self.concurrent = true
    }

    func object(device: Int, localIdentifier: UnsafeBufferPointer<UInt8>, type: ObjectType, fingerprint: UnsafeBufferPointer<UInt8>,
                fingerprintKey: UnsafeRawBufferPointer, linkedOrder: Int64, laterLinkedOrder: Int64, keyA: UnsafeBufferPointer<UInt8>?,
                creationSecond: Int64?, storageRow: Int64) throws {
        self.links.prefetch(order: laterLinkedOrder)
        var record: Int32 = -1, guid: UUIDBits?
        var fingerprintNumber: UInt32?
        if let link = self.links.target(order: linkedOrder) {
            record = link.record
            guid = link.guid
            // A linked object's fingerprint is usually its record's: that number, without a lookup.
            fingerprintNumber = link.fingerprint(ifKey: fingerprintKey)
        }
        let key = keyA.map { a in self.sharing { self.target.keyTable.intern(type: type, a: a) } } ?? AccountMappingIndex.noKey
        precondition(device >= 0 && device < self.pendingCount)
        let batch = self.pending! + device
        batch.pointee.append(localIdentifier, type: type, fingerprint: fingerprintNumber ?? self.sharing { self.target.fingerprints.intern(fingerprint) },
                             record: record, linkedGUID: guid, key: key, creationSecond: creationSecond,
                             storageRow: DeviceTable.Slot.storageRow(storageRow))
        if batch.pointee.isFull { self.tables[device].putNew(&batch.pointee) }
        if !self.concurrent { try self.counted() }
    }

    /// `body` on the account's shared tables: under the lock once devices may load concurrently.
    @inline(__always)
    private func sharing(_ body: () -> UInt32) -> UInt32 {
        self.concurrent ? self.shared.withLock { _ in body() } : body()
    }

    private func counted() throws {
        self.rows += 1
        if self.rows & 4095 == 0 { try self.budget.checkBudget(self.target) }
    }
}

/// Records of a load on their way into the index, a batch at a time: each one's fields, with its
/// fingerprint's text and storage key copied into `bytes`.
private struct NewRecords {
    static let capacity = 64

    struct Record {
        var guid: UUIDBits
        var type: ObjectType
        var order: Int64
        var fingerprint: Range<Int>
        var key: Range<Int>
    }

    private(set) var bytes: [UInt8] = []
    private(set) var records: [Record] = []

    var isFull: Bool { self.records.count >= Self.capacity }

    mutating func append(guid: UUIDBits, type: ObjectType, fingerprint: UnsafeBufferPointer<UInt8>, key: UnsafeRawBufferPointer, order: Int64) {
        let start = self.bytes.count
        self.bytes.append(contentsOf: fingerprint)
        let middle = self.bytes.count
        self.bytes.append(contentsOf: key)
        self.records.append(Record(guid: guid, type: type, order: order, fingerprint: start..<middle, key: middle..<self.bytes.count))
    }

    mutating func removeAll() {
        self.bytes.removeAll(keepingCapacity: true)
        self.records.removeAll(keepingCapacity: true)
    }
}

/// The records as an object's link reads them while loading, by creation order: the record's
/// number, its fingerprint's number and stored form, and its GUID in one 64-byte line. The index's
/// own arrays give the same in three dependent reads (record → fingerprint slice → its bytes), each
/// a cache miss when objects come in another order than their records; here it is one. Freed with
/// the loader.
private struct LinkTargets {
    static let stride = 64
    /// Offsets in a line: GUID (16 bytes), record number (-1: no record has this order), fingerprint
    /// number, the key's length (`tooLong`: over `keyBytes`, compared through the index), the key.
    static let recordAt = 16, fingerprintAt = 20, lengthAt = 24, keyAt = 25
    static let keyBytes = stride - keyAt
    static let tooLong = UInt8.max

    private var lines: UnsafeMutableRawPointer?
    private var capacity = 0

    mutating func reserve(orders: Int) {
        guard orders > self.capacity else { return }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: orders * Self.stride, alignment: Self.stride)
        if let lines { grown.copyMemory(from: lines, byteCount: self.capacity * Self.stride) }
        for n in self.capacity..<orders { grown.storeBytes(of: -1, toByteOffset: n * Self.stride + Self.recordAt, as: Int32.self) }
        self.lines?.deallocate()
        self.lines = grown
        self.capacity = orders
    }

    func deallocate() { self.lines?.deallocate() }

    mutating func set(order: Int64, record: Int32, fingerprint: UInt32, guid: UUIDBits, key: UnsafeRawBufferPointer) {
        // Creation orders run from 1 with no gaps (storage gives each record the next): sized from the count.
        guard order > 0, order < Int64(Int32.max) else { return }
        if Int(order) >= self.capacity { self.reserve(orders: max(Int(order) + 1, self.capacity * 2)) }
        let line = self.lines! + Int(order) * Self.stride
        line.storeBytes(of: guid.high, as: UInt64.self)
        line.storeBytes(of: guid.low, toByteOffset: 8, as: UInt64.self)
        line.storeBytes(of: record, toByteOffset: Self.recordAt, as: Int32.self)
        line.storeBytes(of: fingerprint, toByteOffset: Self.fingerprintAt, as: UInt32.self)
        if key.count <= Self.keyBytes {
            line.storeBytes(of: UInt8(key.count), toByteOffset: Self.lengthAt, as: UInt8.self)
            if key.count > 0 { (line + Self.keyAt).copyMemory(from: key.baseAddress!, byteCount: key.count) }
        } else {
            line.storeBytes(of: Self.tooLong, toByteOffset: Self.lengthAt, as: UInt8.self)
        }
    }

    /// Starts fetching the line of `order` into the cache (a later object's link).
    @inline(__always)
    func prefetch(order: Int64) {
        guard order > 0, order < Int64(self.capacity) else { return }
        concord_prefetch(self.lines! + Int(order) * Self.stride)
    }

    /// The record of creation order `order`, nil when none has it.
    func target(order: Int64) -> LinkTarget? {
        guard order > 0, order < Int64(self.capacity) else { return nil }
        let line = UnsafeRawPointer(self.lines! + Int(order) * Self.stride)
        guard line.load(fromByteOffset: Self.recordAt, as: Int32.self) >= 0 else { return nil }
        return LinkTarget(line: line)
    }
}

/// One line of `LinkTargets`.
private struct LinkTarget {
    let line: UnsafeRawPointer

    var guid: UUIDBits { UUIDBits(high: self.line.load(as: UInt64.self), low: self.line.load(fromByteOffset: 8, as: UInt64.self)) }
    var record: Int32 { self.line.load(fromByteOffset: LinkTargets.recordAt, as: Int32.self) }

    /// The record's fingerprint number when `key` is its fingerprint's key; nil when it is another
    /// fingerprint, or one too long to keep here (the caller then interns the object's own).
    func fingerprint(ifKey key: UnsafeRawBufferPointer) -> UInt32? {
        let length = self.line.load(fromByteOffset: LinkTargets.lengthAt, as: UInt8.self)
        guard length != LinkTargets.tooLong, Int(length) == key.count,
              key.count == 0 || memcmp(self.line + LinkTargets.keyAt, key.baseAddress!, key.count) == 0 else { return nil }
        return self.line.load(fromByteOffset: LinkTargets.fingerprintAt, as: UInt32.self)
    }
}
