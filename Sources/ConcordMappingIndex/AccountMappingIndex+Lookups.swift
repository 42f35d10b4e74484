import ConcordBytes
import ConcordDomain
import CConcordSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The reads of both mapping directions and journal photos (`MappingReads`' semantics).
extension AccountMappingIndex {
    // MARK: - Reads (MappingReads' semantics)

    /// Local → cloud: per identifier, in order, whether the device has it and its link's cloud identifier.
    ///
    /// After `findAll`, two more prefetching passes (the fingerprint's slice, then its bytes) before
    /// the answers are written into one buffer sized exactly: each pass's loads are independent
    /// across the batch, so their cache misses overlap.
    func linkLookups(_ deviceID: String, localIdentifiers: IdentifierBatch) -> LinkLookups {
        guard let device = self.devices[deviceID] else {
            return LinkLookups(repeating: .missing, count: localIdentifiers.count)
        }
        let found = device.findAll(localIdentifiers)
        var lookups = LinkLookups(repeating: .missing, count: found.count)
        device.objectSlots.withUnsafeBufferPointer { slots in
          self.records.withUnsafeBufferPointer { records in
            self.fingerprintSlices.withUnsafeBufferPointer { slices in
                self.fingerprintBytes.withUnsafeBufferPointer { fingerprints in
                    // The identifier is spelled with the record's fingerprint (not necessarily the object's).
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
                    lookups.write(capacity: total) { out in
                        for (i, n) in found.enumerated() where n >= 0 {
                            let o = slots[Int(n)]
                            guard o.hasLink else { out.set(i, .unlinked); continue }
                            let guid = o.record >= 0 ? records[Int(o.record)].guid : device.orphanGUID(ofSlot: n)
                            out.set(i) { at in
                                Self.writeCloudIdentifier(guid: guid, type: o.type, fingerprint: slices[Int(fingerprint(o))], from: fingerprints, to: at)
                            }
                        }
                    }
                }
            }
          }
        }
        return lookups
    }

    /// Cloud → local for a batch, read from its bytes, where that decides an item: found by its
    /// link (step 2), not well formed (step 1), and, when no object carries one of its record's
    /// keys, step 4 by content (not found, one object, several) unless it would store a link; an
    /// empty fingerprint part matches by the record's own fingerprint.
    /// Items with keys to weigh (step 3) or a link to store are `.undecided`: the caller resolves
    /// them in full.
    ///
    /// The warm path of cloud → local, made like local → cloud's: no string or value per found
    /// item, passes over the batch that prefetch what the next reads (record numbers, the device's
    /// links, the fingerprints, the identifiers' bytes), and the answers copied into one buffer
    /// sized exactly. A warm batch leaves nothing undecided but the key matches of step 3.
    func quickLocalIdentifiers(_ deviceID: String, cloudIdentifiers batch: IdentifierBatch, contentMatch: Bool) -> QuickLocalIdentifiers {
        let n = batch.count
        // The misses are set in the answers themselves (no array of them to convert and let go).
        var result = QuickLocalIdentifiers(undecided: n)
        guard let device = self.devices[deviceID], n > 0 else { return result }
        var keys = [UUIDBits?](repeating: nil, count: n)
        var types = [ObjectType](repeating: .asset, count: n)
        batch.bytes.withUnsafeBufferPointer { b in
            for (i, span) in batch.spans.enumerated() {
                let id = UnsafeBufferPointer(rebasing: b[Int(span.start)..<Int(span.start) + Int(span.length)])
                guard let type = CloudIdentifier.wellFormedType(id),
                      let key = UUIDBits(bytes: UnsafeBufferPointer(rebasing: id[id.startIndex..<id.startIndex + 36]), anyCase: true) else {
                    result.answers.set(i, QuickLocalIdentifiers.invalid)
                    continue
                }
                keys[i] = key
                types[i] = type
            }
        }
        // Only a record of the identifier's type is its record.
        let numbers = self.records.withUnsafeBufferPointer { self.recordTable.numbers(of: keys, types: types, records: $0) }
        // The object each answer spells: the linked one (step 2), else the only one with the content (step 4).
        var answers = device.linkedSlots(records: numbers)
        // Not linked, and no object carrying one of the record's keys (step 3 stays undecided):
        // step 4 by content, decided here unless it stores a link (the full path then writes it).
        var byContent: [Int] = []
        var contents: [UnsafeBufferPointer<UInt8>] = []
        // An empty fingerprint part stands for the record's own fingerprint (both spellings name
        // the record): its number is known, no lookup. -1: look the item's own part up.
        var recordContents: [Int32] = []
        // The unlinked records' fingerprints are compared with the identifiers' below, each two
        // dependent misses (its slice, then its bytes): fetched for all of them first.
        if contentMatch { self.prefetchFingerprints(ofRecords: numbers, where: { answers[$0] < 0 }) }
        batch.bytes.withUnsafeBufferPointer { b in
            for i in 0..<n where answers[i] < 0 && keys[i] != nil {
                let record = numbers[i]
                if record >= 0 && self.deviceCarriesAKey(of: Int(record), device) { continue }
                guard contentMatch else { result.answers.set(i, QuickLocalIdentifiers.notFound); continue }
                let span = batch.spans[i]
                let fingerprint = UnsafeBufferPointer(rebasing: b[Int(span.start) + Self.cloudIdentifierPrefix..<Int(span.start) + Int(span.length)])
                if fingerprint.isEmpty {
                    // No record, or a record without a fingerprint: no content to match.
                    guard record >= 0, !self.isEmpty(fingerprint: self.records[Int(record)].fingerprint) else {
                        result.answers.set(i, QuickLocalIdentifiers.notFound)
                        continue
                    }
                    recordContents.append(Int32(self.records[Int(record)].fingerprint))
                } else if record >= 0, self.fingerprint(self.records[Int(record)].fingerprint, isBytes: fingerprint) {
                    // Spelled with its record's own fingerprint (the usual identifier): its number
                    // is the record's, no lookup by the bytes.
                    recordContents.append(Int32(self.records[Int(record)].fingerprint))
                } else {
                    recordContents.append(-1)
                    contents.append(fingerprint)
                }
                byContent.append(i)
            }
            // `contents` points into the batch's bytes: used only inside this closure.
            let looked = self.fingerprints.numbers(of: contents)
            var next = 0
            let fingerprints = recordContents.map { known -> Int32 in
                guard known < 0 else { return known }
                defer { next += 1 }
                return looked[next]
            }
            device.prefetchContent(fingerprints)
            for (j, i) in byContent.enumerated() {
                let slots = fingerprints[j] < 0 ? [] : device.slots(withContent: UInt32(fingerprints[j]), type: types[i])
                switch slots.count {
                case 0: result.answers.set(i, QuickLocalIdentifiers.notFound)
                case 1:
                    // A link is stored when the record exists with exactly this content and the
                    // object has none (`MappingService.resolve`): that case goes the full way.
                    let object = device.objectSlots[Int(slots[0])]
                    let record = numbers[i]
                    if object.record >= 0 || record < 0 || self.records[Int(record)].fingerprint != UInt32(fingerprints[j]) {
                        answers[i] = slots[0]
                    }
                default:
                    var candidates = slots.map { device.identifier(ofSlot: $0) }
                    candidates.sort { $0.utf8Precedes($1) }
                    result.setMultiple(i, candidates)
                }
            }
        }
        device.withLookup { l in
            var total = 0
            for s in answers where s >= 0 { total += device.spelledLength(ofSlot: s, l) }
            // Whether the identifiers' own bytes are plain ASCII, tested as they are copied: the
            // route then writes them without testing the answers again.
            var notPlain: UInt64 = 0
            result.answers.write(capacity: total) { out in
                // Each answer's bytes fetched a few answers ahead of their copy: those `linkedSlots`
                // prefetched for the whole batch may have left the nearest cache by now.
                let found = answers.indices.filter { answers[$0] >= 0 }
                for (k, i) in found.enumerated() {
                    if k + Self.spellAhead < found.count { l.prefetchBytes(ofSlot: answers[found[k + Self.spellAhead]]) }
                    out.set(i) { at in device.spell(slot: answers[i], l, into: at, notPlain: &notPlain) }
                }
            }
            if notPlain == 0 { result.answers.vouchPlainASCII() }
        }
        return result
    }

    /// How many answers ahead of its copy an answer's bytes are fetched.
    static let spellAhead = 8

    /// Prefetches the fingerprint of each record numbered in `records` (-1: none) at the positions
    /// `included` takes: its slice, then its bytes once the slices have had a pass to arrive.
    func prefetchFingerprints(ofRecords records: [Int32], where included: (Int) -> Bool) {
        self.records.withUnsafeBufferPointer { table in
            self.fingerprints.slices.withUnsafeBufferPointer { slices in
                for (i, r) in records.enumerated() where r >= 0 && included(i) {
                    concord_prefetch(slices.baseAddress! + Int(table[Int(r)].fingerprint))
                }
                self.fingerprints.arena.withUnsafeBufferPointer { arena in
                    guard let base = arena.baseAddress else { return }
                    for (i, r) in records.enumerated() where r >= 0 && included(i) {
                        let slice = slices[Int(table[Int(r)].fingerprint)]
                        concord_prefetch(base + Int(slice.offset))
                        concord_prefetch(base + Int(slice.offset) + max(0, Int(slice.length) - 1))
                    }
                }
            }
        }
    }

    /// Whether an object of the device carries one of the record's keys.
    func deviceCarriesAKey(of record: Int, _ device: DeviceTable) -> Bool {
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
    func storedObject(_ device: DeviceTable, slot: Int32) -> StoredObject {
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
                            link: link, storageRow: o.storageRow == 0 ? nil : Int64(o.storageRow))
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
                result.append(StoredObject(object: LibraryObject(localIdentifier: id, type: o.type, fingerprint: key.fingerprint), link: link,
                                           storageRow: o.storageRow == 0 ? nil : Int64(o.storageRow)))
            }
        }
        return result.inLocalIdentifierOrder()
    }

    /// What `MappingObjectReads.mappingObjects` reads from storage (`WritePathReads`): the
    /// objects the device has of these identifiers with their links, each in the order asked (missing
    /// ones omitted). The PhotoKit cloud identifier is spelled `A:C:` from the object's key (the
    /// only part the mapping rules read). Nil when one has a link whose record the index does not
    /// hold (an orphan link): storage answers then. With `withStorageRows`, nil as well when one's
    /// storage row is not known, found before any object is built.
    func mappingObjects(_ deviceID: String, localIdentifiers ids: [String], withStorageRows: Bool = false) -> [StoredObject]? {
        guard let device = self.devices[deviceID] else { return [] }
        let found = device.findAll(IdentifierBatch(ids))
        if withStorageRows, found.contains(where: { $0 >= 0 && device.objectSlots[Int($0)].storageRow == 0 }) { return nil }
        var result: [StoredObject] = []
        result.reserveCapacity(ids.count)
        for (i, n) in found.enumerated() where n >= 0 {
            let o = device.objectSlots[Int(n)]
            var link: CloudRecord?
            if o.record >= 0 {
                let r = self.records[Int(o.record)]
                link = CloudRecord(guid: r.guid.string, type: r.type, fingerprint: self.fingerprint(r.fingerprint))
            } else if o.hasLink {
                return nil
            }
            let photoKitCloudIdentifier = o.key == Self.noKey ? nil : "\(self.keyTable.a(o.key)):\(o.type.code):"
            result.append(StoredObject(object: LibraryObject(localIdentifier: ids[i], type: o.type, fingerprint: self.fingerprint(o.fingerprint),
                                                             photoKitCloudIdentifier: photoKitCloudIdentifier),
                                       link: link, storageRow: o.storageRow == 0 ? nil : Int64(o.storageRow)))
        }
        return result
    }

    /// Of `ids`, those the device has, in the order given (`WritePathReads`).
    func identifiersPresent(_ deviceID: String, among ids: [String]) -> [String] {
        guard let device = self.devices[deviceID], !ids.isEmpty else { return [] }
        let found = device.findAll(IdentifierBatch(ids))
        return found.indices.compactMap { found[$0] >= 0 ? ids[$0] : nil }
    }

    /// Of `keys`, those whose fingerprint some record of the account carries (any type): the others
    /// have no record to find by content (`WritePathReads`).
    func contentsSomeRecordCarries(_ keys: [ContentKey]) -> [ContentKey] {
        keys.filter { key in
            var wanted = key.fingerprint
            guard let n = wanted.withUTF8({ self.fingerprints.number($0) }) else { return false }
            return self.recordFingerprints.contains(n)
        }
    }

    /// Appends `<GUID>:<type>:<fingerprint>` to `bytes`.
    /// "GUID:TYP:" before the fingerprint of a cloud identifier.
    static let cloudIdentifierPrefix = 41

    /// Writes `GUID:type:fingerprint` at `out`; returns its length.
    static func writeCloudIdentifier(guid: UUIDBits, type: ObjectType, fingerprint: (offset: UInt32, length: UInt8),
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
