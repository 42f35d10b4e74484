import ConcordBytes
import ConcordDomain

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

    /// Streams the account's tables from a storage snapshot (one query per table), checking the
    /// budget as it grows: as bytes when storage reads them so (`MappingTableBytesReads`), else as
    /// rows of strings. The version is the caller's to set.
    func load(from tx: any AccountReadTransaction, checkingBudget index: MappingIndex) throws {
        if let bytes = tx as? any MappingTableBytesReads {
            let loader = TableBytesLoader(self, budget: index)
            try bytes.streamMappingTableBytes(into: loader)
            loader.finish()
        } else {
            try self.loadRows(from: tx, checkingBudget: index)
        }
        self.records = self.records.withHeadroom()
        self.fingerprints.shrinkToFit()
        for device in self.devices.values { device.shrinkToFit() }
        try index.checkBudget(self)
    }

    /// `load` from rows of strings (`streamMappingTables`).
    func loadRows(from tx: any AccountReadTransaction, checkingBudget index: MappingIndex) throws {
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
        self.moreRecordKeys = moreRecordKeys
        self.keyTable = keyTable
        self.recordTable = recordTable
        self.devices = devices
        try index.checkBudget(self)
    }
}

/// `AccountMappingIndex.load` from bytes (`MappingTableBytesReads`): what the rows of strings do,
/// with no `String` per row. A link comes as its record's creation order, which gives the record's
/// number here (no GUID to parse and look up); an identifier's bytes go straight into its device's
/// arena; each device's table is sized from its object count first.
private final class TableBytesLoader: MappingTableSink {
    let target: AccountMappingIndex
    let budget: MappingIndex
    var deviceIDs: [String] = [], objectCounts: [Int] = []
    var tables: [DeviceTable?] = []
    /// Creation order → record number (-1: none).
    var numberByOrder: [Int32] = []
    var rows = 0

    init(_ target: AccountMappingIndex, budget: MappingIndex) {
        self.target = target
        self.budget = budget
    }

    func device(_ id: String, objects: Int) throws {
        self.deviceIDs.append(id)
        self.objectCounts.append(objects)
        self.tables.append(nil)
    }

    func expectRecords(_ count: Int) {
        self.target.records.reserveCapacity(count)
        self.numberByOrder.reserveCapacity(count + 1)
    }

    func record(guid: UUIDBits, type: ObjectType, fingerprint: UnsafeBufferPointer<UInt8>, order: Int64) throws {
        let index = self.target
        let number = UInt32(index.records.count)
        index.records.append(AccountMappingIndex.Record(guid: guid, fingerprint: index.fingerprints.intern(fingerprint), type: type,
                                                        key: AccountMappingIndex.noKey))
        index.recordTable.insert(guid, number: number) { index.records[Int($0)].guid }
        if order >= 0, order < Int64(Int32.max) {
            if self.numberByOrder.count <= Int(order) {
                self.numberByOrder.append(contentsOf: repeatElement(-1, count: Int(order) + 1 - self.numberByOrder.count))
            }
            self.numberByOrder[Int(order)] = Int32(number)
        }
        try self.counted()
    }

    func recordKey(guid: UUIDBits, type: ObjectType, a: UnsafeBufferPointer<UInt8>) throws {
        guard let n = self.target.number(of: guid) else { return }
        self.target.addRecordKey(number: n, key: self.target.keyTable.intern(type: type, a: a))
    }

    func object(device: Int, localIdentifier: UnsafeBufferPointer<UInt8>, type: ObjectType, fingerprint: UnsafeBufferPointer<UInt8>,
                linkedOrder: Int64, keyA: UnsafeBufferPointer<UInt8>?, creationSecond: Int64?) throws {
        let index = self.target
        let table = self.tables[device] ?? self.table(device)
        let record: Int32 = linkedOrder > 0 && linkedOrder < Int64(self.numberByOrder.count) ? self.numberByOrder[Int(linkedOrder)] : -1
        // A linked object's fingerprint is usually its record's: that number, without a lookup.
        let fingerprintNumber: UInt32
        if record >= 0, case let f = index.records[Int(record)].fingerprint, index.fingerprint(f, isBytes: fingerprint) {
            fingerprintNumber = f
        } else {
            fingerprintNumber = index.fingerprints.intern(fingerprint)
        }
        table.putNew(localIdentifier, type: type, fingerprint: fingerprintNumber, record: record,
                     linkedGUID: record >= 0 ? index.records[Int(record)].guid : nil,
                     key: keyA.map { index.keyTable.intern(type: type, a: $0) } ?? AccountMappingIndex.noKey, creationSecond: creationSecond)
        try self.counted()
    }

    /// Device number `n`'s table, made now that the records are in (its links by record number).
    private func table(_ n: Int) -> DeviceTable {
        let table = DeviceTable(recordCount: self.target.records.count)
        table.reserve(objects: self.objectCounts[n])
        self.tables[n] = table
        self.target.devices[self.deviceIDs[n]] = table
        return table
    }

    private func counted() throws {
        self.rows += 1
        if self.rows & 4095 == 0 { try self.budget.checkBudget(self.target) }
    }

    /// Every device has its table, those without objects too.
    func finish() {
        for n in self.tables.indices where self.tables[n] == nil { _ = self.table(n) }
    }
}
