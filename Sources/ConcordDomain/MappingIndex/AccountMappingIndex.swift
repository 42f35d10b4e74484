#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A string compared and hashed as its UTF-8 bytes. Identifiers are byte strings (API.md §2) and
/// storage compares them byte for byte, while Swift's `String ==` uses canonical equivalence (an
/// NFC "É" equals an NFD "É"): the index must not merge what storage keeps apart.
struct ByteKey: Hashable, Sendable {
    let string: String
    init(_ string: String) { self.string = string }

    static func == (a: ByteKey, b: ByteKey) -> Bool {
        var x = a.string, y = b.string
        return x.withUTF8 { p in y.withUTF8 { q in p.count == q.count && (p.count == 0 || memcmp(p.baseAddress!, q.baseAddress!, p.count) == 0) } }
    }

    func hash(into hasher: inout Hasher) {
        var s = self.string
        s.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

/// A record GUID as its 128 bits: hashing and comparing two words instead of a 36-byte string on
/// every lookup. Only the canonical form (upper-case 8-4-4-4-12, what the service writes and the
/// cloud identifier parser produces) has a key; storage compares GUIDs as bytes, so any other
/// spelling is a different GUID, and an account holding one is served from storage.
struct GUIDKey: Hashable, Sendable {
    let high: UInt64
    let low: UInt64

    init?(_ guid: String) {
        var s = guid
        guard let key = s.withUTF8({ b -> GUIDKey? in
            guard b.count == 36 else { return nil }
            var words: (UInt64, UInt64) = (0, 0)
            var digits = 0
            for i in 0..<36 {
                let c = b[i]
                if i == 8 || i == 13 || i == 18 || i == 23 {
                    guard c == UInt8(ascii: "-") else { return nil }
                    continue
                }
                let v: UInt8
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
                case UInt8(ascii: "A")...UInt8(ascii: "F"): v = c - UInt8(ascii: "A") + 10
                default: return nil
                }
                if digits < 16 { words.0 = words.0 << 4 | UInt64(v) } else { words.1 = words.1 << 4 | UInt64(v) }
                digits += 1
            }
            return GUIDKey(high: words.0, low: words.1)
        }) else { return nil }
        self = key
    }

    private init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(self.high ^ (self.low &* 0x9E37_79B9_7F4A_7C15))
    }
}

/// One account's mapping tables in memory: every device's objects (type, fingerprint, link) and the
/// account's cloud records. Each read answers exactly what the storage transaction's read of the
/// same name answers (`MappingReads`); each mutation does to it what the write transaction's method
/// of the same name does to storage. Not thread-safe: `MappingIndex` guards it with the account's lock.
final class AccountMappingIndex {
    /// The account's mapping version this index reflects.
    var version: Int64 = 0
    /// An estimate of the heap bytes held (see `Cost`), kept current by every change.
    private(set) var estimatedBytes = 0
    /// False once a GUID that is not in canonical form was met: the index cannot key it, so the
    /// account is served from storage instead.
    private(set) var isExact = true

    struct Object {
        var type: ObjectType
        var fingerprint: String
        var linkedGUID: String?
    }

    /// One device's library.
    final class Device {
        var objects: [ByteKey: Object] = [:]
        /// Record GUID → the object linked to it (at most one per device).
        var linkByGUID: [GUIDKey: String] = [:]
        /// Content → local identifiers with that type and fingerprint (unordered).
        var byContent: [ContentKey: [String]] = [:]
    }

    struct Record {
        var guid: String
        var type: ObjectType
        var fingerprint: String
        var order: Int64
    }

    private(set) var devices: [String: Device] = [:]
    private var records: [GUIDKey: Record] = [:]
    /// Content → record GUIDs, oldest first.
    private var recordsByContent: [ContentKey: [String]] = [:]
    private var nextRecordOrder: Int64 = 1

    init() {}

    // MARK: - Loading

    /// Streams the account's tables from a storage snapshot (one query per table), checking the
    /// budget as it grows. The version is the caller's to set.
    func load(from tx: any AccountReadTransaction, checkingBudget index: MappingIndex) throws {
        var rows = 0
        try tx.streamMappingTables(devices: { id in
            self.insertDevice(id)
        }, records: { record, order in
            self.addRecord(record, order: order)
            rows += 1
            if rows & 1023 == 0 { try index.checkBudget(self) }
        }, objects: { row in
            self.addObject(row)
            rows += 1
            if rows & 1023 == 0 { try index.checkBudget(self) }
        })
        try index.checkBudget(self)
    }

    /// A record as storage holds it (loading: in creation order).
    func addRecord(_ record: CloudRecord, order: Int64) {
        let key = ContentKey(type: record.type, fingerprint: record.fingerprint)
        // One copy of each fingerprint string: the content key's.
        let fingerprint = self.recordsByContent.index(forKey: key).map { self.recordsByContent.keys[$0].fingerprint } ?? record.fingerprint
        guard let guid = GUIDKey(record.guid) else { self.isExact = false; return }
        self.records[guid] = Record(guid: record.guid, type: record.type, fingerprint: fingerprint, order: order)
        self.recordsByContent[ContentKey(type: record.type, fingerprint: fingerprint), default: []].append(record.guid)
        self.nextRecordOrder = max(self.nextRecordOrder, order + 1)
        self.estimatedBytes += Cost.record + Cost.heap(record.guid) + Cost.heap(fingerprint)
    }

    /// An object row as storage holds it.
    func addObject(_ row: MappingObjectRow) {
        let device = self.devices[row.deviceID] ?? self.insertDevice(row.deviceID)
        self.put(device, localIdentifier: row.localIdentifier, Object(type: row.type, fingerprint: row.fingerprint, linkedGUID: row.linkedGUID))
    }

    // MARK: - Reads (MappingReads' semantics)

    func hasDevice(_ deviceID: String) -> Bool { self.devices[deviceID] != nil }

    func linkStates(_ deviceID: String, localIdentifiers: [String]) -> [ObjectLinkState?] {
        guard let device = self.devices[deviceID] else { return [ObjectLinkState?](repeating: nil, count: localIdentifiers.count) }
        // Local copies of the maps: reading a class's property in the loop would retain it per item.
        let objects = device.objects
        return localIdentifiers.map { id in
            objects[ByteKey(id)].map { ObjectLinkState(localIdentifier: id, type: $0.type, fingerprint: $0.fingerprint, linkedGUID: $0.linkedGUID) }
        }
    }

    func recordLinks(_ deviceID: String, guids: [String]) -> [(record: CloudRecord, linkedLocalIdentifier: String?)?] {
        // Local copies of the maps: reading a class's property in the loop would retain it per item.
        let links = self.devices[deviceID]?.linkByGUID ?? [:]
        let records = self.records
        return guids.map { guid in
            guard let key = GUIDKey(guid), let r = records[key] else { return nil }
            return (CloudRecord(guid: r.guid, type: r.type, fingerprint: r.fingerprint), links[key])
        }
    }

    /// Objects with one of these contents, sorted by local identifier byte order, each with its link.
    func objects(_ deviceID: String, matching keys: [ContentKey]) -> [StoredObject] {
        guard let device = self.devices[deviceID] else { return [] }
        var result: [StoredObject] = []
        for key in keys {
            for id in device.byContent[key] ?? [] {
                guard let o = device.objects[ByteKey(id)] else { continue }
                result.append(StoredObject(object: LibraryObject(localIdentifier: id, type: o.type, fingerprint: o.fingerprint), link: self.link(o)))
            }
        }
        result.sort { $0.object.localIdentifier.utf8.lexicographicallyPrecedes($1.object.localIdentifier.utf8) }
        return result
    }

    /// The record an object links to, as storage's join of objects and records gives it.
    private func link(_ o: Object) -> CloudRecord? {
        guard let guid = o.linkedGUID, let key = GUIDKey(guid), let r = self.records[key] else { return nil }
        return CloudRecord(guid: r.guid, type: r.type, fingerprint: r.fingerprint)
    }

    // MARK: - Mutations (the write transaction's semantics)

    @discardableResult
    func insertDevice(_ deviceID: String) -> Device {
        if let d = self.devices[deviceID] { return d }
        let d = Device()
        self.devices[deviceID] = d
        self.estimatedBytes += Cost.device + Cost.heap(deviceID)
        return d
    }

    /// The device with its objects and links.
    func deleteDevice(_ deviceID: String) {
        guard let device = self.devices.removeValue(forKey: deviceID) else { return }
        for (key, o) in device.objects { self.estimatedBytes -= Cost.object(key.string, o) }
        self.estimatedBytes -= Cost.device + Cost.heap(deviceID)
    }

    /// New records, newer than every existing one, in array order.
    func insertRecords(_ records: [CloudRecord]) {
        for r in records {
            self.addRecord(r, order: self.nextRecordOrder)
        }
    }

    /// Links each object (when it exists) to the GUID, replacing the object's link.
    func setLinks(_ deviceID: String, _ links: [(localIdentifier: String, guid: String)]) {
        guard let device = self.devices[deviceID] else { return }
        for (local, guid) in links {
            let key = ByteKey(local)
            guard var o = device.objects[key] else { continue }
            guard let guidKey = GUIDKey(guid) else { self.isExact = false; continue }
            self.unlink(device, key, &o)
            o.linkedGUID = self.records[guidKey]?.guid ?? guid
            device.linkByGUID[guidKey] = key.string
            device.objects[key] = o
            self.estimatedBytes += Cost.heap(guid)
        }
    }

    /// Drops the links of these records on the device.
    func dropLinks(_ deviceID: String, guids: [String]) {
        guard let device = self.devices[deviceID] else { return }
        for guid in guids {
            guard let guidKey = GUIDKey(guid), let local = device.linkByGUID[guidKey] else { continue }
            let key = ByteKey(local)
            if var o = device.objects[key], o.linkedGUID == guid {
                self.unlink(device, key, &o)
                device.objects[key] = o
            } else {
                device.linkByGUID[guidKey] = nil
            }
        }
    }

    func dropAllLinks(_ deviceID: String) {
        guard let device = self.devices[deviceID] else { return }
        for (key, var o) in device.objects where o.linkedGUID != nil {
            self.unlink(device, key, &o)
            device.objects[key] = o
        }
    }

    /// Inserts or replaces objects, each with the given link (nil: unlinked).
    func putObjects(_ deviceID: String, _ objects: [StoredObject]) {
        guard let device = self.devices[deviceID] else { return }
        for s in objects {
            self.put(device, localIdentifier: s.object.localIdentifier,
                     Object(type: s.object.type, fingerprint: s.object.fingerprint, linkedGUID: s.link?.guid))
        }
    }

    func deleteObjects(_ deviceID: String, localIdentifiers: [String]) {
        guard let device = self.devices[deviceID] else { return }
        for id in localIdentifiers { self.remove(device, ByteKey(id)) }
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
        }
    }

    // MARK: - Keeping the maps consistent

    private func put(_ device: Device, localIdentifier: String, _ new: Object) {
        let key = ByteKey(localIdentifier)
        self.remove(device, key)
        var o = new
        // Share the fingerprint and GUID strings the records hold, rather than a copy per object.
        let content = ContentKey(type: o.type, fingerprint: o.fingerprint)
        if let i = self.recordsByContent.index(forKey: content) { o.fingerprint = self.recordsByContent.keys[i].fingerprint }
        if let guid = o.linkedGUID {
            guard let guidKey = GUIDKey(guid) else { self.isExact = false; return }
            if let r = self.records[guidKey] { o.linkedGUID = r.guid }
            device.linkByGUID[guidKey] = key.string
        }
        device.objects[key] = o
        device.byContent[ContentKey(type: o.type, fingerprint: o.fingerprint), default: []].append(key.string)
        self.estimatedBytes += Cost.object(key.string, o)
    }

    private func remove(_ device: Device, _ key: ByteKey) {
        guard let old = device.objects.removeValue(forKey: key) else { return }
        let content = ContentKey(type: old.type, fingerprint: old.fingerprint)
        if var ids = device.byContent[content] {
            if let i = ids.firstIndex(where: { ByteKey($0) == key }) { ids.remove(at: i) }
            device.byContent[content] = ids.isEmpty ? nil : ids
        }
        if let guid = old.linkedGUID, let guidKey = GUIDKey(guid), let linked = device.linkByGUID[guidKey], ByteKey(linked) == key {
            device.linkByGUID[guidKey] = nil
        }
        self.estimatedBytes -= Cost.object(key.string, old)
    }

    /// Clears `o`'s link (the caller stores `o` back).
    private func unlink(_ device: Device, _ key: ByteKey, _ o: inout Object) {
        guard let guid = o.linkedGUID else { return }
        if let guidKey = GUIDKey(guid), let linked = device.linkByGUID[guidKey], ByteKey(linked) == key { device.linkByGUID[guidKey] = nil }
        o.linkedGUID = nil
        self.estimatedBytes -= Cost.heap(guid)
    }

    /// The estimate of what each part costs, in bytes. A dictionary entry is counted at its key and
    /// value sizes times 2 (hash tables run at most 75 % full, and grow by doubling); a string of
    /// more than 15 UTF-8 bytes adds its heap allocation (a 32-byte header plus its bytes, rounded up
    /// to 16), shorter ones live inline. Measured against RSS in docs/benchmarks.md.
    enum Cost {
        /// `objects` entry (16 + 48) and `byContent` element (16) and its share of the key (24),
        /// times two; the `linkByGUID` entry (32 × 2) when linked is in `heap(guid)` below plus 64.
        static func object(_ localIdentifier: String, _ o: Object) -> Int {
            2 * (16 + 48 + 16) + 24 + heap(localIdentifier) + (o.linkedGUID == nil ? 0 : 64)
        }
        /// `records` entry (16 + 32) and `recordsByContent` element (16), times two.
        static let record = 2 * (16 + 32 + 16) + 24
        static let device = 3 * 64
        static func heap(_ s: String) -> Int {
            let n = s.utf8.count
            return n <= 15 ? 0 : 32 + (n + 15) / 16 * 16
        }
    }
}

/// The index's answers through the `MappingReads` protocol the mapping rules read.
struct IndexedMappingReads: MappingReads {
    let index: AccountMappingIndex

    func linkStates(_ device: DeviceRef, localIdentifiers: [String]) throws -> [ObjectLinkState?] {
        self.index.linkStates(device.deviceID, localIdentifiers: localIdentifiers)
    }

    func recordLinks(_ device: DeviceRef, guids: [String]) throws -> [(record: CloudRecord, linkedLocalIdentifier: String?)?] {
        self.index.recordLinks(device.deviceID, guids: guids)
    }

    func objects(_ device: DeviceRef, matching keys: [ContentKey]) throws -> [StoredObject] {
        self.index.objects(device.deviceID, matching: keys)
    }
}
