import ConcordBytes

// The mapping log: each write transaction that bumps an account's mapping version also stores, in
// the same transaction, the mapping changes it made (the `MappingMutation`s its observer heard), so
// that another instance sharing the database, whose index is a few versions behind, applies them
// instead of reloading the account. PostgreSQL keeps one (several instances share it); SQLite does
// not (one process per file: its index never falls behind another writer).

/// Storage that keeps the mapping log: its write transactions append, its read transactions read.
/// A transaction that does not conform keeps none (every reader behind then reloads).
public protocol MappingLogWrites: AnyObject {
    /// Stores `changes` (`MappingLogCodec`) as what the transaction's mapping version `version` changed,
    /// and prunes the account's older entries. Called after `bumpMappingVersion`, in its transaction.
    func appendMappingLog(version: Int64, changes: [UInt8]) throws
}

public protocol MappingLogReads: AnyObject {
    /// The log's entries of the account's versions `after + 1 ... through`, in version order; the
    /// versions pruned (or never logged: too large) are missing from the answer.
    func mappingLog(after: Int64, through: Int64) throws -> [(version: Int64, changes: [UInt8])]
}

/// The byte form of one write transaction's mapping changes in the mapping log (docs/formats.md,
/// "Mapping log entry"): a version byte (1), then each mutation as a tag byte and its fields;
/// strings and counts are `Varint` lengths, an object batch is `PackedObjectRows`' own bytes.
public enum MappingLogCodec {
    public static let version: UInt8 = 1
    /// A transaction whose changes would take more than this is not logged: a reader behind it
    /// reloads the account (a million-object upload is cheaper to reload than to replay).
    public static let maxBytes = 4 << 20

    private enum Tag: UInt8 {
        case insertDevice = 1, deleteDevice, insertRecords, setLinks, dropLinks, dropAllLinks, putObjects, deleteObjects, addRecordKeys,
             fillRecordFingerprints
    }

    /// Roughly the bytes `mutation` takes encoded, to give up on a transaction too large to log
    /// before holding all of its changes.
    public static func estimatedBytes(_ mutation: MappingMutation) -> Int {
        switch mutation {
        case .insertDevice(let d), .deleteDevice(let d), .dropAllLinks(let d): d.utf8.count + 2
        case .insertRecords(let records): records.count * 90
        case .setLinks(_, let links): links.count * 80
        case .dropLinks(_, let guids): guids.count * 37
        case .putObjects(_, let rows): rows.packedBytes.count + 16
        case .deleteObjects(_, let ids): ids.count * 40
        case .addRecordKeys(let keys): keys.count * 60
        case .fillRecordFingerprints(let fills): fills.count * 80
        }
    }

    /// The entry holding `mutations`; nil when it would exceed `limit` bytes.
    public static func encode(_ mutations: [MappingMutation], limit: Int = maxBytes) -> [UInt8]? {
        var w = Writer()
        w.out.reserveCapacity(min(limit, mutations.reduce(1) { $0 + Self.estimatedBytes($1) }) + 64)
        w.out.append(self.version)
        for m in mutations {
            switch m {
            case .insertDevice(let d): w.tag(.insertDevice); w.string(d)
            case .deleteDevice(let d): w.tag(.deleteDevice); w.string(d)
            case .insertRecords(let records):
                w.tag(.insertRecords); w.count(records.count)
                for r in records { w.string(r.guid); w.count(r.type.rawValue); w.string(r.fingerprint) }
            case .setLinks(let d, let links):
                w.tag(.setLinks); w.string(d); w.count(links.count)
                for l in links { w.string(l.localIdentifier); w.string(l.guid) }
            case .dropLinks(let d, let guids):
                w.tag(.dropLinks); w.string(d); w.count(guids.count)
                for g in guids { w.string(g) }
            case .dropAllLinks(let d): w.tag(.dropAllLinks); w.string(d)
            case .putObjects(let d, let rows):
                w.tag(.putObjects); w.string(d); w.count(rows.count); w.count(rows.packedBytes.count)
                w.out.append(contentsOf: rows.packedBytes)
            case .deleteObjects(let d, let ids):
                w.tag(.deleteObjects); w.string(d); w.count(ids.count)
                for id in ids { w.string(id) }
            case .addRecordKeys(let keys):
                w.tag(.addRecordKeys); w.count(keys.count)
                for k in keys { w.string(k.guid); w.count(k.key.type.rawValue); w.string(k.key.a) }
            case .fillRecordFingerprints(let fills):
                w.tag(.fillRecordFingerprints); w.count(fills.count)
                for f in fills { w.string(f.guid); w.string(f.fingerprint) }
            }
            if w.out.count > limit { return nil }
        }
        return w.out
    }

    /// The mutations of an entry, in order; nil for another version or damaged bytes (the reader
    /// then reloads the account, never guesses).
    public static func decode(_ bytes: [UInt8]) -> [MappingMutation]? {
        bytes.withUnsafeBytes { raw -> [MappingMutation]? in
            var r = Reader(bytes: raw)
            guard r.byte() == self.version else { return nil }
            var result: [MappingMutation] = []
            while !r.atEnd {
                guard let m = Self.mutation(&r) else { return nil }
                result.append(m)
            }
            return result
        }
    }

    private static func mutation(_ r: inout Reader) -> MappingMutation? {
        guard let raw = r.byte(), let tag = Tag(rawValue: raw) else { return nil }
        switch tag {
        case .insertDevice: return r.string().map { .insertDevice($0) }
        case .deleteDevice: return r.string().map { .deleteDevice($0) }
        case .dropAllLinks: return r.string().map { .dropAllLinks(device: $0) }
        case .insertRecords:
            return r.list { r in
                guard let guid = r.string(), let type = r.type(), let fingerprint = r.string() else { return nil }
                return CloudRecord(guid: guid, type: type, fingerprint: fingerprint)
            }.map { .insertRecords($0) }
        case .setLinks:
            guard let d = r.string(), let links = r.list({ r -> (localIdentifier: String, guid: String)? in
                guard let local = r.string(), let guid = r.string() else { return nil }
                return (local, guid)
            }) else { return nil }
            return .setLinks(device: d, links)
        case .dropLinks:
            guard let d = r.string(), let guids = r.list({ $0.string() }) else { return nil }
            return .dropLinks(device: d, guids: guids)
        case .putObjects:
            guard let d = r.string(), let count = r.count(), let length = r.count(), let packed = r.bytes(length),
                  let rows = PackedObjectRows(packedBytes: packed, count: count) else { return nil }
            return .putObjects(device: d, rows)
        case .deleteObjects:
            guard let d = r.string(), let ids = r.list({ $0.string() }) else { return nil }
            return .deleteObjects(device: d, localIdentifiers: ids)
        case .addRecordKeys:
            return r.list { r -> (guid: String, key: ObjectKey)? in
                guard let guid = r.string(), let type = r.type(), let a = r.string() else { return nil }
                return (guid, ObjectKey(type: type, a: a))
            }.map { .addRecordKeys($0) }
        case .fillRecordFingerprints:
            return r.list { r -> (guid: String, fingerprint: String)? in
                guard let guid = r.string(), let fingerprint = r.string() else { return nil }
                return (guid, fingerprint)
            }.map { .fillRecordFingerprints($0) }
        }
    }

    private struct Writer {
        var out: [UInt8] = []
        mutating func tag(_ t: Tag) { self.out.append(t.rawValue) }
        mutating func count(_ n: Int) { Varint.append(UInt64(n), to: &self.out) }
        mutating func string(_ s: String) {
            var s = s
            s.withUTF8 { utf8 in
                self.count(utf8.count)
                self.out.append(contentsOf: utf8)
            }
        }
    }

    /// Every read checked against the end: nil instead of reading past it.
    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var at = 0
        var atEnd: Bool { self.at >= self.bytes.count }

        mutating func byte() -> UInt8? {
            guard self.at < self.bytes.count else { return nil }
            defer { self.at += 1 }
            return self.bytes[self.at]
        }

        mutating func count() -> Int? { Varint.read(self.bytes, &self.at) }

        mutating func bytes(_ n: Int) -> UnsafeRawBufferPointer? {
            guard n >= 0, n <= self.bytes.count - self.at else { return nil }
            defer { self.at += n }
            return UnsafeRawBufferPointer(rebasing: self.bytes[self.at..<self.at + n])
        }

        mutating func string() -> String? {
            guard let n = self.count(), let b = self.bytes(n) else { return nil }
            return String(decoding: b, as: UTF8.self)
        }

        mutating func type() -> ObjectType? { self.count().flatMap(ObjectType.init(rawValue:)) }

        /// A count, then that many elements; nil when any is damaged.
        mutating func list<T>(_ element: (inout Reader) -> T?) -> [T]? {
            guard let n = self.count(), n <= self.bytes.count - self.at else { return nil }   // each element takes a byte at least
            var result: [T] = []
            result.reserveCapacity(n)
            for _ in 0..<n {
                guard let e = element(&self) else { return nil }
                result.append(e)
            }
            return result
        }
    }
}
