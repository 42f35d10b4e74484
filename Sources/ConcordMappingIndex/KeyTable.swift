import ConcordBytes
import ConcordDomain
import CConcordSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Byte strings of at most 255 bytes, each numbered once: the bytes in one arena and an
/// open-addressing table of numbers, about 20 bytes per entry plus its bytes where a
/// `[String: UInt32]` costs over 100 (a String heap copy plus a dictionary entry at twice its
/// size). Looked up by bytes, so a request's bytes need no `String` to be found. An
/// `AccountMappingIndex` numbers its fingerprints and its keys this way.
struct ByteTable {
    /// Every entry's bytes, one after another.
    private(set) var arena: [UInt8] = []
    /// Entry number → (offset, length) in `arena`.
    private(set) var slices: [(offset: UInt32, length: UInt8)] = []
    /// Entry numbers, -1 empty; the capacity is a power of two, at most half full.
    private var buckets = [Int32](repeating: -1, count: 16)
    private var hashes: [UInt32] = []

    var count: Int { self.slices.count }

    var estimatedBytes: Int { self.arena.capacity + self.slices.capacity * 8 + self.buckets.capacity * 4 + self.hashes.capacity * 4 }

    /// Lets go of the spare capacity the arrays grew into while loading.
    init() {}

    /// Its arrays as they lie (IndexSnapshot.swift).
    func write(snapshot w: inout SnapshotWriter) throws {
        try w.array(self.arena)
        try w.array(self.slices)
        try w.array(self.buckets)
        try w.array(self.hashes)
    }

    init(snapshot r: inout SnapshotReader) throws {
        self.arena = try r.array()
        self.slices = try r.array()
        self.buckets = try r.array()
        self.hashes = try r.array()
        let count = self.buckets.count
        guard count >= 16, count & (count - 1) == 0, self.slices.count * 2 <= count, self.hashes.count == self.slices.count else {
            throw UnusableSnapshot(reason: "a byte table of the wrong shape")
        }
    }

    mutating func shrinkToFit() {
        self.arena = self.arena.withHeadroom()
        self.slices = self.slices.withHeadroom()
        self.hashes = self.hashes.withHeadroom()
    }

    /// Room for `count` entries in an empty table: the entries' arrays with the headroom
    /// `shrinkToFit` keeps, and the buckets its inserts one by one would grow to (`grow`), so that
    /// none of them rehashes. (The bytes' arena grows as they come: their length is not known.)
    mutating func reserve(_ count: Int) {
        guard self.slices.isEmpty, count > 0 else { return }
        self.slices.reserveCapacity(Headroom.capacity(for: count))
        self.hashes.reserveCapacity(Headroom.capacity(for: count))
        var capacity = self.buckets.count
        while count * 2 > capacity { capacity *= 2 }
        if capacity != self.buckets.count { self.buckets = [Int32](repeating: -1, count: capacity) }
    }

    /// The entry's number, nil when absent.
    func number(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt32? {
        self.find(bytes, hash: DeviceTable.hash(UnsafeRawBufferPointer(bytes))).number
    }

    /// Each entry's number (-1 when absent), in input order.
    ///
    /// In passes over the batch, each prefetching what the next reads (the buckets, then the
    /// entries' hashes and slices, then their bytes): in a large table every step of one lookup
    /// is a cache miss, and one at a time they would follow each other.
    func numbers(of items: [UnsafeBufferPointer<UInt8>]) -> [Int32] {
        let hashes = items.map { DeviceTable.hash(UnsafeRawBufferPointer($0)) }
        var found = [Int32](repeating: -1, count: items.count)
        self.buckets.withUnsafeBufferPointer { buckets in
            self.slices.withUnsafeBufferPointer { slices in
                self.hashes.withUnsafeBufferPointer { stored in
                    let mask = buckets.count - 1
                    for h in hashes { concord_prefetch(buckets.baseAddress! + (Int(h) & mask)) }
                    for (i, h) in hashes.enumerated() {
                        let n = buckets[Int(h) & mask]
                        found[i] = n
                        if n >= 0 { concord_prefetch(stored.baseAddress! + Int(n)); concord_prefetch(slices.baseAddress! + Int(n)) }
                    }
                    self.arena.withUnsafeBufferPointer { arena in
                        for (i, n) in found.enumerated() where n >= 0 && stored[Int(n)] == hashes[i] {
                            concord_prefetch(arena.baseAddress! + Int(slices[Int(n)].offset))
                        }
                    }
                }
            }
        }
        // An empty first bucket settles it; otherwise probe (the lines are in cache by now).
        for i in items.indices where found[i] >= 0 {
            found[i] = self.find(items[i], hash: hashes[i]).number.map { Int32($0) } ?? -1
        }
        return found
    }

    /// The entry's number, numbering it when new. At most 255 bytes.
    mutating func intern(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt32 {
        self.intern(bytes, hash: DeviceTable.hash(UnsafeRawBufferPointer(bytes)))
    }

    /// Starts fetching the bucket where an entry of this hash is looked for first.
    func prefetch(hash: UInt32) {
        self.buckets.withUnsafeBufferPointer { concord_prefetch($0.baseAddress! + (Int(hash) & ($0.count - 1))) }
    }

    /// `intern` of bytes whose hash (`DeviceTable.hash`) the caller computed.
    mutating func intern(_ bytes: UnsafeBufferPointer<UInt8>, hash: UInt32) -> UInt32 {
        let (found, bucket) = self.find(bytes, hash: hash)
        if let found { return found }
        let n = UInt32(self.slices.count)
        self.slices.append((UInt32(self.arena.count), UInt8(truncatingIfNeeded: bytes.count)))
        self.arena.append(contentsOf: bytes)
        self.hashes.append(hash)
        self.buckets[bucket] = Int32(n)
        if self.slices.count * 2 > self.buckets.count { self.grow() }
        return n
    }

    /// The entry's number, or the empty bucket where it would go.
    private func find(_ bytes: UnsafeBufferPointer<UInt8>, hash: UInt32) -> (number: UInt32?, bucket: Int) {
        self.buckets.withUnsafeBufferPointer { buckets in
            self.slices.withUnsafeBufferPointer { slices in
                self.hashes.withUnsafeBufferPointer { hashes in
                    self.arena.withUnsafeBufferPointer { arena in
                        let mask = buckets.count - 1
                        var i = Int(hash) & mask
                        while true {
                            let n = buckets[i]
                            if n < 0 { return (nil, i) }
                            let slice = slices[Int(n)]
                            if hashes[Int(n)] == hash, Int(slice.length) == bytes.count,
                               bytes.isEmpty || memcmp(arena.baseAddress! + Int(slice.offset), bytes.baseAddress!, bytes.count) == 0 {
                                return (UInt32(n), i)
                            }
                            i = (i + 1) & mask
                        }
                    }
                }
            }
        }
    }

    private mutating func grow() {
        var buckets = [Int32](repeating: -1, count: self.buckets.count * 2)
        let mask = buckets.count - 1
        for (n, hash) in self.hashes.enumerated() {
            var i = Int(hash) & mask
            while buckets[i] >= 0 { i = (i + 1) & mask }
            buckets[i] = Int32(n)
        }
        self.buckets = buckets
    }
}

/// The account's keys ((A, type)), each numbered once in a `ByteTable` as the type's
/// raw value byte followed by A. Devices on one iCloud library share their keys, so the cost per
/// object falls with each device.
struct KeyTable {
    private var table = ByteTable()

    func write(snapshot w: inout SnapshotWriter) throws { try self.table.write(snapshot: &w) }
    init() {}
    init(snapshot r: inout SnapshotReader) throws { self.table = try ByteTable(snapshot: &r) }

    var count: Int { self.table.count }
    var estimatedBytes: Int { self.table.estimatedBytes }

    /// The key's number, nil when no object or record of the account has carried it.
    func number(type: ObjectType, a: String) -> UInt32? {
        Self.withBytes(type, a) { self.table.number($0) }
    }

    /// The A of key number `n` (its bytes after the type byte).
    func a(_ n: UInt32) -> String {
        let slice = self.table.slices[Int(n)]
        return self.table.arena.withUnsafeBufferPointer { b in
            String(decoding: UnsafeBufferPointer(rebasing: b[Int(slice.offset) + 1..<Int(slice.offset) + Int(slice.length)]), as: UTF8.self)
        }
    }

    /// The key's number, numbering it when new.
    mutating func intern(type: ObjectType, a: String) -> UInt32 {
        Self.withBytes(type, a) { self.table.intern($0) }
    }

    /// `intern` of A given as UTF-8 (a load from storage).
    mutating func intern(type: ObjectType, a: UnsafeBufferPointer<UInt8>) -> UInt32 {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: a.count + 1) { bytes in
            bytes[0] = UInt8(truncatingIfNeeded: type.rawValue)
            if a.count > 0 { (bytes.baseAddress! + 1).update(from: a.baseAddress!, count: a.count) }
            return self.table.intern(UnsafeBufferPointer(start: bytes.baseAddress, count: a.count + 1))
        }
    }

    /// The key's bytes: type byte, then A (at most 128 bytes: the whole fits a UInt8 length).
    private static func withBytes<T>(_ type: ObjectType, _ a: String, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
        var bytes = [UInt8(truncatingIfNeeded: type.rawValue)]
        bytes.append(contentsOf: a.utf8)
        return bytes.withUnsafeBufferPointer(body)
    }
}
