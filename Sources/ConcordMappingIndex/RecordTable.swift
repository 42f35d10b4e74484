import ConcordBytes
import ConcordDomain
import CConcordSystem

/// GUID → record number for an `AccountMappingIndex`: an open-addressing table (linear probing)
/// of record numbers, the GUIDs themselves read from the index's record array. Records are only
/// ever added, so there are no deletion markers. A GUID is 128 random bits (UUID v4 from the
/// secure generator), so a multiply of its halves spreads it well without a keyed hasher.
struct RecordTable {
    /// Record numbers, -1 empty; the capacity is a power of two, at most half full.
    private(set) var buckets: [Int32] = [Int32](repeating: -1, count: 16)
    private(set) var count = 0

    var estimatedBytes: Int { self.buckets.capacity * 4 }

    init() {}

    /// Its buckets as they lie (IndexSnapshot.swift).
    func write(snapshot w: inout SnapshotWriter) throws {
        try w.array(self.buckets)
        try w.value(Int64(self.count))
    }

    init(snapshot r: inout SnapshotReader, recordCount: Int) throws {
        self.buckets = try r.array()
        self.count = Int(try r.value(Int64.self))
        let n = self.buckets.count
        guard n >= 16, n & (n - 1) == 0, self.count == recordCount, self.count * 2 <= n else {
            throw UnusableSnapshot(reason: "a record table of the wrong shape")
        }
    }

    @inline(__always)
    static func hash(_ key: UUIDBits) -> Int {
        Int(truncatingIfNeeded: ((key.high ^ (key.low &* 0x9E37_79B9_7F4A_7C15)) &* 0xFF51_AFD7_ED55_8CCD) >> 20)
    }

    /// The record number of `key`, nil when no record has it.
    func number(of key: UUIDBits, in guids: (Int32) -> UUIDBits) -> UInt32? {
        let mask = self.buckets.count - 1
        var i = Self.hash(key) & mask
        while true {
            let n = self.buckets[i]
            if n < 0 { return nil }
            if guids(n) == key { return UInt32(n) }
            i = (i + 1) & mask
        }
    }

    /// Starts fetching the bucket where `key` is looked for first.
    func prefetch(_ key: UUIDBits) {
        self.buckets.withUnsafeBufferPointer { concord_prefetch($0.baseAddress! + (Self.hash(key) & ($0.count - 1))) }
    }

    /// Adds record `number` with GUID `key` (not in the table yet).
    mutating func insert(_ key: UUIDBits, number: UInt32, guids: (Int32) -> UUIDBits) {
        if (self.count + 1) * 2 > self.buckets.count { self.grow(guids: guids) }
        self.place(key, Int32(number))
        self.count += 1
    }

    /// Room for `records` records in an empty table: the buckets its inserts one by one would
    /// grow it to (`grow`), allocated once.
    mutating func reserve(_ records: Int) {
        guard self.count == 0 else { return }
        var capacity = self.buckets.count
        while records * 2 > capacity { capacity *= 4 }
        if capacity != self.buckets.count { self.buckets = [Int32](repeating: -1, count: capacity) }
    }

    private mutating func place(_ key: UUIDBits, _ number: Int32) {
        let mask = self.buckets.count - 1
        var i = Self.hash(key) & mask
        while self.buckets[i] >= 0 { i = (i + 1) & mask }
        self.buckets[i] = number
    }

    private mutating func grow(guids: (Int32) -> UUIDBits) {
        let old = self.buckets
        self.buckets = [Int32](repeating: -1, count: old.count * 4)   // a quarter full after growing
        for n in old where n >= 0 { self.place(guids(n), n) }
    }

    /// The record number of each key (nil where the key is nil or unknown), in passes over the
    /// batch that prefetch what the next pass reads (bucket, then the record's GUID), so the
    /// batch's cache misses overlap. With `types`, a record of another type than the key's counts
    /// as unknown (-1): checked while its GUID is compared, its cache line at hand.
    func numbers(of keys: [UUIDBits?], types: [ObjectType]? = nil, records: UnsafeBufferPointer<AccountMappingIndex.Record>) -> [Int32] {
        let mask = self.buckets.count - 1
        var found = [Int32](repeating: -1, count: keys.count)
        self.buckets.withUnsafeBufferPointer { buckets in
            for key in keys {
                if let key { concord_prefetch(buckets.baseAddress! + (Self.hash(key) & mask)) }
            }
            for (i, key) in keys.enumerated() {
                guard let key else { continue }
                let n = buckets[Self.hash(key) & mask]
                found[i] = n
                if n >= 0 { concord_prefetch(records.baseAddress! + Int(n)) }
            }
            for (i, key) in keys.enumerated() where found[i] >= 0 {
                guard let key else { continue }
                if records[Int(found[i])].guid != key {
                    // Not in its first bucket: probe on.
                    var b = (Self.hash(key) + 1) & mask
                    found[i] = -1
                    while buckets[b] >= 0 {
                        if records[Int(buckets[b])].guid == key { found[i] = buckets[b]; break }
                        b = (b + 1) & mask
                    }
                }
                if let types, found[i] >= 0, records[Int(found[i])].type != types[i] { found[i] = -1 }
            }
        }
        return found
    }
}
