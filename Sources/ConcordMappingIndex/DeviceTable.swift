import ConcordBytes
import ConcordDomain
import CConcordSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One device's library in an `AccountMappingIndex`: an open-addressing hash table (linear probing)
/// over an array of plain slots, with the local identifiers' bytes in one arena. Identifiers are
/// hashed and compared as bytes. Not thread-safe (the account's lock guards it).
final class DeviceTable {
    /// 40 bytes a slot, every field 4 bytes wide or less (an `Int64` would pad it to 48): a
    /// million-object library's slots take 40 MB. The identifier's hash is not kept (its bytes are
    /// compared instead, and a rehash reads them again), nor the GUID of a link (its record's).
    struct Slot: BitwiseCopyable {
        /// The identifier's bytes in `arena`.
        var offset: UInt32
        var fingerprint: UInt32
        /// The linked record's number in the account, -1 when unlinked or when no record has the
        /// GUID (an orphan link: its GUID is in `orphanGUIDs`).
        var record: Int32
        /// The next slot with the same fingerprint (any type; -1 ends it).
        var nextSameContent: Int32
        /// The key's number in the account (`AccountMappingIndex.noKey`: none), and the next slot
        /// with the same key (-1 ends it; several objects of a device rarely share one).
        var key: UInt32
        var nextSameKey: Int32
        /// The store's number for the object's row (`StoredObject.storageRow`), 0 when not known
        /// (the store keeps none, or the number does not fit in 32 bits).
        var storageRow: UInt32
        /// `creationDate` in whole seconds (`Int64.min`: none), in two halves.
        private var creationLow: UInt32
        private var creationHigh: Int32
        var length: UInt16
        var type: ObjectType
        private var flags: UInt8

        init(offset: UInt32, fingerprint: UInt32, record: Int32, key: UInt32, creationSecond: Int64, length: UInt16, type: ObjectType, hasLink: Bool,
             storageRow: UInt32) {
            self.offset = offset
            self.fingerprint = fingerprint
            self.record = record
            self.nextSameContent = -1
            self.key = key
            self.nextSameKey = -1
            self.storageRow = storageRow
            self.creationLow = UInt32(truncatingIfNeeded: creationSecond)
            self.creationHigh = Int32(truncatingIfNeeded: creationSecond >> 32)
            self.length = length
            self.type = type
            self.flags = 1 | (hasLink ? 2 : 0)
        }

        var creationSecond: Int64 { Int64(self.creationHigh) << 32 | Int64(self.creationLow) }

        /// A store's row number as a slot keeps it: 0 (not known) when it does not fit.
        static func storageRow(_ row: Int64) -> UInt32 { row > 0 && row <= Int64(UInt32.max) ? UInt32(row) : 0 }
        var live: Bool {
            get { self.flags & 1 != 0 }
            set { self.flags = newValue ? self.flags | 1 : self.flags & ~1 }
        }
        var hasLink: Bool {
            get { self.flags & 2 != 0 }
            set { self.flags = newValue ? self.flags | 2 : self.flags & ~2 }
        }
    }

    private(set) var objectSlots: [Slot] = []
    private var freeSlots: [Int32] = []
    private var arena: [UInt8] = []
    /// Arena bytes no live slot uses (replaced or deleted objects); compacted past half the arena.
    private var garbage = 0
    /// Slot numbers, -1 empty, -2 deleted; the capacity is a power of two.
    private var buckets: [Int32] = [Int32](repeating: -1, count: 16)
    private var live = 0
    private var tombstones = 0
    /// Fingerprint number (the account's) → first slot with it, -1 when none; grown on demand.
    private var contentHeads: [Int32] = []
    /// Key number → first slot carrying it, -1 when none (grown to the account's key count).
    private var keyHeads: [Int32] = []
    /// Record number → the slot linked to it, -1 when none (a record links to one object per device).
    private var linkOfRecord: [Int32]
    /// Links to GUIDs no record has (storage allows them; the service never makes them), both ways.
    private var orphanLinks: [UUIDBits: Int32] = [:]
    private var orphanGUIDs: [Int32: UUIDBits] = [:]

    init(recordCount: Int) {
        // Room for the records to come (`Headroom`): each one appends here on every device.
        var links = [Int32]()
        links.reserveCapacity(Headroom.capacity(for: recordCount))
        links.append(contentsOf: repeatElement(-1, count: recordCount))
        self.linkOfRecord = links
    }

    /// How many records' links fit before the table's array grows (tests: a load leaves headroom).
    var recordCapacity: Int { self.linkOfRecord.capacity }

    var estimatedBytes: Int {
        self.arena.capacity + self.objectSlots.capacity * MemoryLayout<Slot>.stride + self.buckets.capacity * 4
            + self.freeSlots.capacity * 4 + self.contentHeads.capacity * 4 + self.keyHeads.capacity * 4 + self.linkOfRecord.capacity * 4
            + self.orphanLinks.count * 2 * 24 + 256
    }

    /// Lets go of the spare capacity the arrays grew into while loading (up to half of each),
    /// keeping a little for the next writes (`Headroom`).
    func shrinkToFit() {
        self.objectSlots = self.objectSlots.withHeadroom()
        self.arena = self.arena.withHeadroom()
        self.linkOfRecord = self.linkOfRecord.withHeadroom()
    }

    // MARK: - Identifiers as stored

    /// PhotoKit's local identifiers begin with an upper-case UUID (`…/L0/001`): stored as the byte
    /// 0x01 (never in an identifier: no control characters), the UUID's 16 bytes (big-endian,
    /// so byte order is the digits' order), then the rest — 24 bytes for 43. Any other identifier
    /// is stored as it is. An identifier asked for is put in the same form before it is hashed and
    /// compared, so one identifier has one stored form.
    static let compactMarker: UInt8 = 1

    /// Writes the stored form of `id` at `out` (room for `id.count` bytes); returns its length.
    static func store(_ id: UnsafeBufferPointer<UInt8>, into out: UnsafeMutablePointer<UInt8>) -> Int {
        if id.count >= 36, let key = UUIDBits(bytes: UnsafeBufferPointer(rebasing: id[id.startIndex..<id.startIndex + 36])) {
            out[0] = Self.compactMarker
            UnsafeMutableRawPointer(out + 1).storeBytes(of: key.high.bigEndian, as: UInt64.self)
            UnsafeMutableRawPointer(out + 9).storeBytes(of: key.low.bigEndian, as: UInt64.self)
            if id.count > 36 { (out + 17).update(from: id.baseAddress! + 36, count: id.count - 36) }
            return 17 + id.count - 36
        }
        if !id.isEmpty { out.update(from: id.baseAddress!, count: id.count) }
        return id.count
    }

    /// `body` with the stored form of `id`.
    static func withStored<T>(_ id: String, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
        var s = id
        return s.withUTF8 { b in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(1, b.count)) { out in
                body(UnsafeBufferPointer(start: out.baseAddress!, count: Self.store(b, into: out.baseAddress!)))
            }
        }
    }

    /// The length of the identifier whose stored form is `count` bytes at `stored`.
    @inline(__always)
    static func spelledLength(_ stored: UnsafePointer<UInt8>, _ count: Int) -> Int {
        count > 0 && stored[0] == Self.compactMarker ? count + 19 : count
    }

    /// Writes the identifier whose stored form is `count` bytes at `stored`; returns its length.
    @inline(__always)
    static func spell(_ stored: UnsafePointer<UInt8>, _ count: Int, into out: UnsafeMutablePointer<UInt8>) -> Int {
        guard count > 0, stored[0] == Self.compactMarker else {
            if count > 0 { out.update(from: stored, count: count) }
            return count
        }
        let high = UInt64(bigEndian: UnsafeRawPointer(stored + 1).loadUnaligned(as: UInt64.self))
        let low = UInt64(bigEndian: UnsafeRawPointer(stored + 9).loadUnaligned(as: UInt64.self))
        UUIDBits(high: high, low: low).write(into: out)
        if count > 17 { (out + 36).update(from: stored + 17, count: count - 17) }
        return count + 19
    }

    // MARK: - Hashing and finding

    /// The identifier's hash (`ByteHash`; not keyed: identifiers come from the account's own
    /// devices, which can only slow their own account down).
    @inline(__always)
    static func hash(_ b: UnsafeRawBufferPointer) -> UInt32 { ByteHash.hash(b) }

    /// Read access for one batch: plain pointers into the table, valid inside `body` only.
    struct Lookup {
        let buckets: UnsafeBufferPointer<Int32>
        let slots: UnsafeBufferPointer<Slot>
        let arena: UnsafePointer<UInt8>?

        /// True when `slot` holds exactly these identifier bytes.
        @inline(__always)
        func matches(_ slot: Slot, _ id: UnsafeBufferPointer<UInt8>) -> Bool {
            Int(slot.length) == id.count && (id.count == 0 || memcmp(self.arena! + Int(slot.offset), id.baseAddress!, id.count) == 0)
        }

        /// Prefetches the stored bytes of slot `n`, whose slot is in the cache already (both ends:
        /// they may straddle two cache lines).
        @inline(__always)
        func prefetchBytes(ofSlot n: Int32) {
            guard let arena = self.arena else { return }
            let s = self.slots[Int(n)]
            concord_prefetch(arena + Int(s.offset))
            concord_prefetch(arena + Int(s.offset) + max(0, Int(s.length) - 1))
        }

        /// Prefetches slot `n` (a slot may straddle two cache lines).
        func prefetchSlot(_ n: Int) {
            let p = UnsafeRawPointer(self.slots.baseAddress! + n)
            concord_prefetch(p)
            concord_prefetch(p + (MemoryLayout<Slot>.size - 1))
        }

        /// The bucket and slot number of `id` (hash `hash`), probing from bucket `start`; nil when absent.
        func locate(_ id: UnsafeBufferPointer<UInt8>, hash h: UInt32, from start: Int) -> (bucket: Int, slot: Int32)? {
            let mask = self.buckets.count - 1
            var i = start
            while true {
                let n = self.buckets[i]
                if n == -1 { return nil }
                if n >= 0, self.matches(self.slots[Int(n)], id) { return (i, n) }
                i = (i + 1) & mask
            }
        }

        /// The bucket and slot number of `id`, nil when the device does not have it.
        func locate(_ id: String) -> (bucket: Int, slot: Int32)? {
            DeviceTable.withStored(id) { b in
                let h = DeviceTable.hash(UnsafeRawBufferPointer(b))
                return self.locate(b, hash: h, from: Int(h) & (self.buckets.count - 1))
            }
        }
    }

    /// The slot number of each identifier (-1: the device does not have it), in input order.
    ///
    /// In passes over the whole batch rather than one identifier at a time: a lookup in a large
    /// library is a chain of cache misses (bucket → slot → identifier bytes). Each pass asks the
    /// processor to prefetch what the next pass reads for every identifier, so the batch's misses
    /// are in flight together instead of being waited for one after another.
    func findAll(_ ids: IdentifierBatch) -> [Int32] {
        let n = ids.count
        var found = [Int32](repeating: -1, count: n)
        guard n > 0, self.live > 0 else { return found }
        // The identifiers' stored forms, in one buffer no larger than the batch's.
        var spans = [IdentifierBatch.Span](repeating: IdentifierBatch.Span(start: 0, length: 0), count: n)
        let stored = ids.bytes.withUnsafeBufferPointer { bytes in
            [UInt8](unsafeUninitializedCapacity: max(1, bytes.count)) { out, written in
                var at = 0
                for (i, span) in ids.spans.enumerated() {
                    let id = UnsafeBufferPointer(rebasing: bytes[Int(span.start)..<Int(span.start) + Int(span.length)])
                    let count = Self.store(id, into: out.baseAddress! + at)
                    spans[i] = IdentifierBatch.Span(start: UInt32(at), length: UInt32(count))
                    at += count
                }
                written = at
            }
        }
        stored.withUnsafeBufferPointer { bytes in
            spans.withUnsafeBufferPointer { spans in
                found.withUnsafeMutableBufferPointer { found in
                    self.withLookup { lookup in
                        Self.findAll(bytes, spans, lookup, into: found)
                    }
                }
            }
        }
        return found
    }

    private static func findAll(_ bytes: UnsafeBufferPointer<UInt8>, _ spans: UnsafeBufferPointer<IdentifierBatch.Span>, _ lookup: Lookup,
                                into found: UnsafeMutableBufferPointer<Int32>) {
        let n = spans.count
        let mask = lookup.buckets.count - 1
        func id(_ i: Int) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(start: bytes.baseAddress.map { $0 + Int(spans[i].start) }, count: Int(spans[i].length))
        }
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: n) { hashes in
            // Pass 1: hash each identifier; prefetch its first bucket.
            for i in 0..<n {
                let h = DeviceTable.hash(UnsafeRawBufferPointer(id(i)))
                hashes[i] = h
                concord_prefetch(lookup.buckets.baseAddress! + (Int(h) & mask))
            }
            // Pass 2: read the bucket; prefetch its slot.
            for i in 0..<n {
                let slot = lookup.buckets[Int(hashes[i]) & mask]
                found[i] = slot
                if slot >= 0 { lookup.prefetchSlot(Int(slot)) }
            }
            // Pass 3: for candidates whose slot has the same length, prefetch their bytes; mark the
            // others (-3) to probe on.
            for i in 0..<n where found[i] >= 0 {
                let slot = lookup.slots[Int(found[i])]
                guard slot.length == spans[i].length, let arena = lookup.arena else { found[i] = -3; continue }
                // Both ends: the bytes may straddle two cache lines.
                concord_prefetch(arena + Int(slot.offset))
                concord_prefetch(arena + Int(slot.offset) + max(0, Int(slot.length) - 1))
            }
            // Pass 4: compare the bytes; anything else probes on from the next bucket.
            for i in 0..<n where found[i] != -1 {
                if found[i] >= 0, lookup.matches(lookup.slots[Int(found[i])], id(i)) { continue }
                let h = hashes[i]
                found[i] = lookup.locate(id(i), hash: h, from: (Int(h) + 1) & mask)?.slot ?? -1
            }
        }
    }

    func withLookup<T>(_ body: (Lookup) -> T) -> T {
        self.buckets.withUnsafeBufferPointer { buckets in
            self.objectSlots.withUnsafeBufferPointer { slots in
                self.arena.withUnsafeBufferPointer { arena in
                    body(Lookup(buckets: buckets, slots: slots, arena: arena.baseAddress))
                }
            }
        }
    }

    /// The bucket holding `id`'s slot, or nil.
    private func bucket(of id: String) -> (bucket: Int, slot: Int32)? {
        self.withLookup { $0.locate(id) }
    }

    func identifier(of slot: Slot) -> String {
        self.arena.withUnsafeBufferPointer { a in
            let stored = a.baseAddress! + Int(slot.offset)
            return String(unsafeUninitializedCapacity: Self.spelledLength(stored, Int(slot.length))) { out in
                Self.spell(stored, Int(slot.length), into: out.baseAddress!)
            }
        }
    }

    /// The identifier's length in slot `n`, and a copy of it at `out`, for answers made of bytes.
    func spelledLength(ofSlot n: Int32, _ l: Lookup) -> Int {
        let slot = l.slots[Int(n)]
        return Self.spelledLength(l.arena! + Int(slot.offset), Int(slot.length))
    }

    func spell(slot n: Int32, _ l: Lookup, into out: UnsafeMutablePointer<UInt8>) -> Int {
        let slot = l.slots[Int(n)]
        return Self.spell(l.arena! + Int(slot.offset), Int(slot.length), into: out)
    }

    /// `spell(slot:_:into:)`, with the bytes copied from the stored form (a compact identifier's
    /// UUID is spelled plain from its bits) tested for plain ASCII into `notPlain`
    /// (`ByteLanes.notPlainASCII`: zero while every byte is).
    @inline(__always)
    func spell(slot n: Int32, _ l: Lookup, into out: UnsafeMutablePointer<UInt8>, notPlain: inout UInt64) -> Int {
        let slot = l.slots[Int(n)]
        let stored = l.arena! + Int(slot.offset)
        let count = Self.spell(stored, Int(slot.length), into: out)
        let spelledPlain = slot.length > 0 && stored[0] == Self.compactMarker ? 36 : 0
        notPlain |= ByteLanes.notPlainASCII(out, from: spelledPlain, to: count)
        return count
    }

    /// The slot linked to each record number (-1 for none, or where the number is -1), and its
    /// identifier bytes prefetched: the answers are made of them next.
    func linkedSlots(records: [Int32]) -> [Int32] {
        var slots = [Int32](repeating: -1, count: records.count)
        self.linkOfRecord.withUnsafeBufferPointer { links in
            for n in records where n >= 0 && Int(n) < links.count { concord_prefetch(links.baseAddress! + Int(n)) }
            self.withLookup { lookup in
                for (i, n) in records.enumerated() where n >= 0 && Int(n) < links.count {
                    slots[i] = links[Int(n)]
                    if slots[i] >= 0 { lookup.prefetchSlot(Int(slots[i])) }
                }
                for slot in slots where slot >= 0 { lookup.prefetchBytes(ofSlot: slot) }
            }
        }
        return slots
    }

    func identifier(ofSlot n: Int32) -> String {
        self.identifier(of: self.objectSlots[Int(n)])
    }

    /// The slots with this content.
    func slots(withContent fingerprint: UInt32, type: ObjectType) -> [Int32] {
        var result: [Int32] = []
        var n = Int(fingerprint) < self.contentHeads.count ? self.contentHeads[Int(fingerprint)] : -1
        while n >= 0 {
            if self.objectSlots[Int(n)].type == type { result.append(n) }
            n = self.objectSlots[Int(n)].nextSameContent
        }
        return result
    }

    /// Prefetches where `slots(withContent:)` starts for each fingerprint number (-1: none): each
    /// head, then the first slot each head names (a second dependent load, issued once the heads
    /// have had the first pass's time to arrive).
    func prefetchContent(_ fingerprints: [Int32]) {
        self.contentHeads.withUnsafeBufferPointer { heads in
            for f in fingerprints where f >= 0 && Int(f) < heads.count { concord_prefetch(heads.baseAddress! + Int(f)) }
            self.objectSlots.withUnsafeBufferPointer { slots in
                for f in fingerprints where f >= 0 && Int(f) < heads.count {
                    let n = heads[Int(f)]
                    if n >= 0 && Int(n) < slots.count { concord_prefetch(slots.baseAddress! + Int(n)) }
                }
            }
        }
    }

    /// The GUID of an orphan link (a slot linked with `record` -1).
    func orphanGUID(ofSlot n: Int32) -> UUIDBits { self.orphanGUIDs[n] ?? .zero }

    /// The slots carrying this key.
    func slots(withKey key: UInt32) -> [Int32] {
        var result: [Int32] = []
        var n = Int(key) < self.keyHeads.count ? self.keyHeads[Int(key)] : -1
        while n >= 0 {
            result.append(n)
            n = self.objectSlots[Int(n)].nextSameKey
        }
        return result
    }

    /// Whether some object carries this key.
    func hasKey(_ key: UInt32) -> Bool { Int(key) < self.keyHeads.count && self.keyHeads[Int(key)] >= 0 }

    /// Record number → the slot linked to it (-1: none); shorter than the record count when the
    /// newest records came after this table's last growth (those have no link here).
    var linksByRecord: [Int32] { self.linkOfRecord }

    /// Sorts slot numbers by their identifiers' bytes (spelled out into two buffers, no string each).
    func sortByIdentifier(_ numbers: inout [Int32]) {
        self.withLookup { l in
            guard l.arena != nil else { return }
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 512) { buffer in
                let x = buffer.baseAddress!, y = buffer.baseAddress! + 256
                numbers.sort { a, b in
                    let m = self.spell(slot: a, l, into: x), n = self.spell(slot: b, l, into: y)
                    let shorter = min(m, n)
                    let c = shorter == 0 ? 0 : memcmp(x, y, shorter)
                    return c != 0 ? c < 0 : m < n
                }
            }
        }
    }


    // MARK: - Changes

    /// Inserts or replaces the object.
    /// `isNew`: the device does not have the identifier (a load from storage), so no lookup first.
    func put(_ id: String, type: ObjectType, fingerprint: UInt32, record: Int32, linkedGUID: UUIDBits?,
             key: UInt32 = AccountMappingIndex.noKey, creationSecond: Int64? = nil, isNew: Bool = false, storageRow: UInt32 = 0) {
        Self.withStored(id) { bytes in
            let h = Self.hash(UnsafeRawBufferPointer(bytes))
            if !isNew, let (bucket, n) = self.withLookup({ $0.locate(bytes, hash: h, from: Int(h) & ($0.buckets.count - 1)) }) {
                self.remove(bucket: bucket, slot: n)
            }
            self.insert(stored: bytes, hash: h, type: type, fingerprint: fingerprint, record: record, linkedGUID: linkedGUID,
                        key: key, creationSecond: creationSecond, storageRow: storageRow)
        }
    }

    /// `put` of an object the device does not have yet (a load from storage), its identifier given
    /// as UTF-8: no `String`, no lookup first.
    func putNew(_ id: UnsafeBufferPointer<UInt8>, type: ObjectType, fingerprint: UInt32, record: Int32, linkedGUID: UUIDBits?,
                key: UInt32, creationSecond: Int64?, storageRow: UInt32 = 0) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(1, id.count)) { out in
            let stored = UnsafeBufferPointer(start: out.baseAddress!, count: Self.store(id, into: out.baseAddress!))
            self.insert(stored: stored, hash: Self.hash(UnsafeRawBufferPointer(stored)), type: type, fingerprint: fingerprint, record: record,
                        linkedGUID: linkedGUID, key: key, creationSecond: creationSecond, storageRow: storageRow)
        }
    }

    /// Objects of a load on their way into the table, a batch at a time (`putNew(_:)`): their
    /// identifiers' stored forms and hashes, computed while each row's bytes are at hand.
    struct NewObjects {
        static let capacity = 64

        struct Object {
            var offset: UInt32
            var hash: UInt32
            var fingerprint: UInt32
            var record: Int32
            var key: UInt32
            var length: UInt16
            var type: ObjectType
            var creationSecond: Int64
            var linkedGUID: UUIDBits?
            var storageRow: UInt32
        }

        fileprivate var bytes: [UInt8] = []
        fileprivate var objects: [Object] = []

        init() {
            self.bytes.reserveCapacity(Self.capacity * 48)
            self.objects.reserveCapacity(Self.capacity)
        }

        var isFull: Bool { self.objects.count >= Self.capacity }

        /// `putNew`'s arguments, kept for the batch.
        mutating func append(_ id: UnsafeBufferPointer<UInt8>, type: ObjectType, fingerprint: UInt32, record: Int32, linkedGUID: UUIDBits?,
                             key: UInt32, creationSecond: Int64?, storageRow: UInt32) {
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(1, id.count)) { out in
                let stored = UnsafeBufferPointer(start: out.baseAddress!, count: DeviceTable.store(id, into: out.baseAddress!))
                self.objects.append(Object(offset: UInt32(self.bytes.count), hash: DeviceTable.hash(UnsafeRawBufferPointer(stored)),
                                           fingerprint: fingerprint, record: record, key: key, length: UInt16(stored.count), type: type,
                                           creationSecond: creationSecond ?? Int64.min, linkedGUID: linkedGUID, storageRow: storageRow))
                self.bytes.append(contentsOf: stored)
            }
        }
    }

    /// `putNew` of each object in the batch (none of which the device has), which it empties.
    ///
    /// Each insert writes three places of the table at random (its bucket, its fingerprint's
    /// content list, its record's link): one object at a time, three cache misses waited for in
    /// turn. Here the whole batch's are prefetched first, so they are in flight together; and the
    /// table's arrays are opened once per batch rather than once per object.
    func putNew(_ batch: inout NewObjects) {
        defer {
            batch.objects.removeAll(keepingCapacity: true)
            batch.bytes.removeAll(keepingCapacity: true)
        }
        let count = batch.objects.count
        guard count > 0 else { return }
        // No rehash within the batch (`insert`'s bound for each of its objects), no slot to reuse.
        guard self.freeSlots.isEmpty, (self.live + self.tombstones + count) * 2 < self.buckets.count,
              self.arena.count + batch.bytes.count <= Int(UInt32.max) else {
            batch.bytes.withUnsafeBufferPointer { bytes in
                for o in batch.objects {
                    self.insert(stored: UnsafeBufferPointer(rebasing: bytes[Int(o.offset)..<Int(o.offset) + Int(o.length)]), hash: o.hash,
                                type: o.type, fingerprint: o.fingerprint, record: o.record, linkedGUID: o.linkedGUID, key: o.key,
                                creationSecond: o.creationSecond, storageRow: o.storageRow)
                }
            }
            return
        }
        // The lists' heads grown as `insert` grows them, object by object.
        for o in batch.objects {
            let f = Int(o.fingerprint)
            if f >= self.contentHeads.count {
                self.contentHeads.append(contentsOf: repeatElement(-1, count: max(f + 1, self.contentHeads.count * 2) - self.contentHeads.count))
            }
            if o.key != AccountMappingIndex.noKey, Int(o.key) >= self.keyHeads.count {
                self.keyHeads.append(contentsOf: repeatElement(-1, count: Int(o.key) + 1 - self.keyHeads.count))
            }
        }
        let base = UInt32(self.arena.count)
        self.arena.append(contentsOf: batch.bytes)
        let first = self.objectSlots.count
        self.objectSlots.append(contentsOf: batch.objects.lazy.map { o in
            Slot(offset: base + o.offset, fingerprint: o.fingerprint, record: o.linkedGUID == nil ? -1 : o.record, key: o.key,
                 creationSecond: o.creationSecond, length: o.length, type: o.type, hasLink: o.linkedGUID != nil, storageRow: o.storageRow)
        })
        var reusedTombstones = 0
        var orphans: [(slot: Int32, guid: UUIDBits)] = []
        batch.objects.withUnsafeBufferPointer { objects in
            self.buckets.withUnsafeMutableBufferPointer { buckets in
                self.objectSlots.withUnsafeMutableBufferPointer { slots in
                    self.contentHeads.withUnsafeMutableBufferPointer { contentHeads in
                        self.keyHeads.withUnsafeMutableBufferPointer { keyHeads in
                            self.linkOfRecord.withUnsafeMutableBufferPointer { links in
                                let mask = buckets.count - 1
                                for o in objects {
                                    concord_prefetch(buckets.baseAddress! + (Int(o.hash) & mask))
                                    concord_prefetch(contentHeads.baseAddress! + Int(o.fingerprint))
                                    if o.linkedGUID != nil, o.record >= 0, Int(o.record) < links.count { concord_prefetch(links.baseAddress! + Int(o.record)) }
                                }
                                for (k, o) in objects.enumerated() {
                                    let n = Int32(first + k)
                                    var i = Int(o.hash) & mask
                                    while buckets[i] >= 0 { i = (i + 1) & mask }
                                    if buckets[i] == -2 { reusedTombstones += 1 }
                                    buckets[i] = n
                                    let f = Int(o.fingerprint)
                                    slots[Int(n)].nextSameContent = contentHeads[f]
                                    contentHeads[f] = n
                                    if o.key != AccountMappingIndex.noKey {
                                        slots[Int(n)].nextSameKey = keyHeads[Int(o.key)]
                                        keyHeads[Int(o.key)] = n
                                    }
                                    if let guid = o.linkedGUID {
                                        if o.record >= 0 { precondition(Int(o.record) < links.count); links[Int(o.record)] = n } else { orphans.append((n, guid)) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        self.tombstones -= reusedTombstones
        self.live += count
        for (n, guid) in orphans {
            self.orphanLinks[guid] = n
            self.orphanGUIDs[n] = guid
        }
    }

    /// Room for `objects` objects in an empty table, before a load: the slots, the arena, and the bucket array
    /// the inserts one by one would end with (`rehash`'s growth), so none of them rehashes.
    func reserve(objects: Int) {
        guard self.live == 0, self.tombstones == 0, objects > 0 else { return }
        // With the headroom `shrinkToFit` keeps, so that it finds nothing to let go and copies
        // nothing; the arena for PhotoKit-shaped identifiers (24 bytes stored), grown if longer.
        self.objectSlots.reserveCapacity(Headroom.capacity(for: objects))
        self.arena.reserveCapacity(Headroom.capacity(for: objects * 24))
        var capacity = self.buckets.count
        while capacity / 2 - 1 < objects {   // the insert at live = capacity/2 - 1 rehashes
            let live = capacity / 2 - 1
            var grown = 16
            while (live + 1) * 4 > grown { grown *= 2 }
            capacity = grown
        }
        if capacity != self.buckets.count { self.buckets = [Int32](repeating: -1, count: capacity) }
    }

    private func insert(stored bytes: UnsafeBufferPointer<UInt8>, hash h: UInt32, type: ObjectType, fingerprint: UInt32, record: Int32,
                        linkedGUID: UUIDBits?, key: UInt32, creationSecond: Int64?, storageRow: UInt32 = 0) {
        if (self.live + self.tombstones + 1) * 2 >= self.buckets.count { self.rehash() }   // at most half full
        let offset = UInt32(self.arena.count)
        self.arena.append(contentsOf: bytes)
        let slot = Slot(offset: offset, fingerprint: fingerprint, record: linkedGUID == nil ? -1 : record, key: key,
                        creationSecond: creationSecond ?? Int64.min, length: UInt16(bytes.count), type: type, hasLink: linkedGUID != nil,
                        storageRow: storageRow)
        let n: Int32
        if let free = self.freeSlots.popLast() {
            n = free
            self.objectSlots[Int(n)] = slot
        } else {
            n = Int32(self.objectSlots.count)
            self.objectSlots.append(slot)
        }
        let mask = self.buckets.count - 1
        var i = Int(h) & mask
        while self.buckets[i] >= 0 { i = (i + 1) & mask }
        if self.buckets[i] == -2 { self.tombstones -= 1 }
        self.buckets[i] = n
        self.live += 1
        // Content list: the new slot becomes the head.
        let f = Int(fingerprint)
        if f >= self.contentHeads.count {
            self.contentHeads.append(contentsOf: repeatElement(-1, count: max(f + 1, self.contentHeads.count * 2) - self.contentHeads.count))
        }
        self.objectSlots[Int(n)].nextSameContent = self.contentHeads[f]
        self.contentHeads[f] = n
        if slot.key != AccountMappingIndex.noKey {
            let k = Int(slot.key)
            if k >= self.keyHeads.count { self.keyHeads.append(contentsOf: repeatElement(-1, count: k + 1 - self.keyHeads.count)) }
            self.objectSlots[Int(n)].nextSameKey = self.keyHeads[k]
            self.keyHeads[k] = n
        }
        if let guid = linkedGUID { self.attachLink(slot: n, guid: guid, record: record) }
    }

    /// Deletes the object (and its link) when the device has it.
    func remove(_ id: String) {
        guard let (bucket, n) = self.bucket(of: id) else { return }
        self.remove(bucket: bucket, slot: n)
    }

    private func remove(bucket: Int, slot n: Int32) {
        self.detachLink(slot: n)
        let slot = self.objectSlots[Int(n)]
        // Unlink from its content list (singly linked: walk from the head, usually this slot).
        let f = Int(slot.fingerprint)
        if self.contentHeads[f] == n {
            self.contentHeads[f] = slot.nextSameContent
        } else {
            var m = self.contentHeads[f]
            while m >= 0 {
                let next = self.objectSlots[Int(m)].nextSameContent
                if next == n { self.objectSlots[Int(m)].nextSameContent = slot.nextSameContent; break }
                m = next
            }
        }
        if slot.key != AccountMappingIndex.noKey {
            // Unlink from its key's list (singly linked: walk from the head, usually this slot).
            let k = Int(slot.key)
            if self.keyHeads[k] == n {
                self.keyHeads[k] = slot.nextSameKey
            } else {
                var m = self.keyHeads[k]
                while m >= 0 {
                    let next = self.objectSlots[Int(m)].nextSameKey
                    if next == n { self.objectSlots[Int(m)].nextSameKey = slot.nextSameKey; break }
                    m = next
                }
            }
        }
        self.buckets[bucket] = -2
        self.tombstones += 1
        self.live -= 1
        self.objectSlots[Int(n)].live = false
        self.freeSlots.append(n)
        self.garbage += Int(slot.length)
        if self.garbage > 64 * 1024, self.garbage * 2 > self.arena.count { self.compactArena() }
    }

    /// Links the object (when the device has it) to `guid`, replacing its link.
    func setLink(_ id: String, guid: UUIDBits, record: Int32) {
        guard let (_, n) = self.bucket(of: id) else { return }
        self.setLink(slot: n, guid: guid, record: record)
    }

    /// `setLink` of the object in slot `n` (found by `findAll`: linking moves no slot); -1, none.
    func setLink(slot n: Int32, guid: UUIDBits, record: Int32) {
        guard n >= 0 else { return }
        self.detachLink(slot: n)
        self.objectSlots[Int(n)].hasLink = true
        self.attachLink(slot: n, guid: guid, record: record)
    }

    /// Drops the link to this record (or orphan GUID), whichever object holds it.
    func dropLink(guid: UUIDBits, record: Int32) {
        let n = record >= 0 ? (Int(record) < self.linkOfRecord.count ? self.linkOfRecord[Int(record)] : -1) : (self.orphanLinks[guid] ?? -1)
        // A slot found through `linkOfRecord` is linked to that record, hence to its GUID.
        guard n >= 0, self.objectSlots[Int(n)].live, self.objectSlots[Int(n)].hasLink,
              record >= 0 || self.orphanGUIDs[n] == guid else { return }
        self.detachLink(slot: n)
    }

    func dropAllLinks() {
        for i in self.objectSlots.indices where self.objectSlots[i].live && self.objectSlots[i].hasLink {
            self.objectSlots[i].hasLink = false
            self.objectSlots[i].record = -1
        }
        for i in self.linkOfRecord.indices { self.linkOfRecord[i] = -1 }
        self.orphanLinks.removeAll()
        self.orphanGUIDs.removeAll()
    }

    /// A record was added to the account: it has no link here, unless an orphan link named its GUID.
    func recordAdded(_ guid: UUIDBits, number: UInt32) {
        self.linkOfRecord.append(-1)
        if let n = self.orphanLinks.removeValue(forKey: guid) {
            self.orphanGUIDs[n] = nil
            self.linkOfRecord[Int(number)] = n
            self.objectSlots[Int(n)].record = Int32(number)
        }
    }

    private func attachLink(slot n: Int32, guid: UUIDBits, record: Int32) {
        self.objectSlots[Int(n)].record = record
        if record >= 0 {
            self.linkOfRecord[Int(record)] = n
        } else {
            self.orphanLinks[guid] = n
            self.orphanGUIDs[n] = guid
        }
    }

    private func detachLink(slot n: Int32) {
        let slot = self.objectSlots[Int(n)]
        guard slot.hasLink else { return }
        if slot.record >= 0 {
            if self.linkOfRecord[Int(slot.record)] == n { self.linkOfRecord[Int(slot.record)] = -1 }
        } else if let guid = self.orphanGUIDs.removeValue(forKey: n), self.orphanLinks[guid] == n {
            self.orphanLinks[guid] = nil
        }
        self.objectSlots[Int(n)].hasLink = false
        self.objectSlots[Int(n)].record = -1
    }

    /// A new bucket array sized for the live slots (dropping the deleted markers).
    private func rehash() {
        var capacity = 16
        while (self.live + 1) * 4 > capacity { capacity *= 2 }   // a quarter full after growing
        var buckets = [Int32](repeating: -1, count: capacity)
        let mask = capacity - 1
        let arena = self.arena
        for (n, slot) in self.objectSlots.enumerated() where slot.live {
            let h = arena.withUnsafeBytes { Self.hash(UnsafeRawBufferPointer(rebasing: $0[Int(slot.offset)..<Int(slot.offset) + Int(slot.length)])) }
            var i = Int(h) & mask
            while buckets[i] != -1 { i = (i + 1) & mask }
            buckets[i] = Int32(n)
        }
        self.buckets = buckets
        self.tombstones = 0
    }

    /// Copies the live identifiers into a new arena.
    private func compactArena() {
        var arena: [UInt8] = []
        arena.reserveCapacity(self.arena.count - self.garbage)
        for i in self.objectSlots.indices where self.objectSlots[i].live {
            let slot = self.objectSlots[i]
            self.objectSlots[i].offset = UInt32(arena.count)
            arena.append(contentsOf: self.arena[Int(slot.offset)..<Int(slot.offset) + Int(slot.length)])
        }
        self.arena = arena
        self.garbage = 0
    }
}

// MARK: - Snapshots (IndexSnapshot.swift)

extension DeviceTable {
    /// Writes the table's arrays as they lie.
    func write(snapshot w: inout SnapshotWriter) throws {
        try w.array(self.objectSlots)
        try w.array(self.freeSlots)
        try w.array(self.arena)
        try w.value(Int64(self.garbage))
        try w.array(self.buckets)
        try w.value(Int64(self.live))
        try w.value(Int64(self.tombstones))
        try w.array(self.contentHeads)
        try w.array(self.keyHeads)
        try w.array(self.linkOfRecord)
        let orphans = self.orphanGUIDs.sorted { $0.key < $1.key }
        try w.array(orphans.map(\.key))
        try w.array(orphans.map(\.value))
    }

    /// A table as `write(snapshot:)` wrote it, checked for the shape lookups rely on.
    convenience init(snapshot r: inout SnapshotReader, recordCount: Int) throws {
        self.init(recordCount: 0)
        self.objectSlots = try r.array()
        self.freeSlots = try r.array()
        self.arena = try r.array()
        self.garbage = Int(try r.value(Int64.self))
        self.buckets = try r.array()
        self.live = Int(try r.value(Int64.self))
        self.tombstones = Int(try r.value(Int64.self))
        self.contentHeads = try r.array()
        self.keyHeads = try r.array()
        self.linkOfRecord = try r.array()
        let slots: [Int32] = try r.array(), guids: [UUIDBits] = try r.array()
        let count = self.buckets.count
        guard count >= 16, count & (count - 1) == 0, self.live + self.tombstones < count, slots.count == guids.count,
              self.linkOfRecord.count <= recordCount else { throw UnusableSnapshot(reason: "a device table of the wrong shape") }
        for (slot, guid) in zip(slots, guids) {
            self.orphanGUIDs[slot] = guid
            self.orphanLinks[guid] = slot
        }
    }
}

extension DeviceTable.Slot {
    /// Size, stride and each field's offset (IndexSnapshot's layout check).
    static var snapshotLayout: [Int] {
        [MemoryLayout<Self>.size, MemoryLayout<Self>.stride]
            + ([\Self.offset, \Self.fingerprint, \Self.record, \Self.nextSameContent, \Self.key, \Self.nextSameKey, \Self.storageRow, \Self.creationLow,
               \Self.creationHigh, \Self.length, \Self.type, \Self.flags] as [PartialKeyPath<Self>]).map { MemoryLayout<Self>.offset(of: $0) ?? -1 }
    }
}
