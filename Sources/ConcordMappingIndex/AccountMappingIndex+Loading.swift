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
