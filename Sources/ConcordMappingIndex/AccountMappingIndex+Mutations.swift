import ConcordBytes
import ConcordDomain

/// The write transaction's mutations, applied after it commits (`MappingMutation`).
extension AccountMappingIndex {
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

    /// Links each object (when it exists) to the GUID, replacing the object's link. The objects are
    /// found for the whole batch first (`findAll`, its cache misses in flight together), then
    /// linked in order.
    func setLinks(_ deviceID: String, _ links: [(localIdentifier: String, guid: String)]) {
        guard let device = self.devices[deviceID], !links.isEmpty else { return }
        let slots = device.findAll(IdentifierBatch(links.map(\.localIdentifier)))
        for (i, link) in links.enumerated() {
            guard let key = UUIDBits(link.guid) else { self.isExact = false; continue }
            device.setLink(slot: slots[i], guid: key, record: self.number(of: key).map(Int32.init) ?? -1)
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
                       key: s.keyA.map { self.keyTable.intern(type: s.type, a: $0) } ?? Self.noKey, creationSecond: s.creationSecond,
                       storageRow: s.storageRow.map(DeviceTable.Slot.storageRow) ?? 0)
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
                self.recordFingerprints.insert(self.records[Int(n)].fingerprint)
            }
        }
    }
}
