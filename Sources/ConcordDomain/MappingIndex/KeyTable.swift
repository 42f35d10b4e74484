/// The account's keys (API.md §2: (A, type)), each numbered once: the bytes in one arena and an
/// open-addressing table of numbers, about 50 bytes per distinct key where a `[String: UInt32]`
/// costs over 100 (a String heap copy plus a dictionary entry at twice its size). Devices on one
/// iCloud library share their keys, so the cost per object falls with each device.
struct KeyTable {
    /// Each key as its type code's first digit-free byte (the type's raw value) followed by A.
    private var arena: [UInt8] = []
    /// Key number → (offset, length) in `arena`.
    private var slices: [(offset: UInt32, length: UInt8)] = []
    /// Key numbers, -1 empty; the capacity is a power of two, at most half full.
    private var buckets = [Int32](repeating: -1, count: 16)
    private var hashes: [UInt32] = []

    var count: Int { self.slices.count }

    var estimatedBytes: Int { self.arena.capacity + self.slices.capacity * 8 + self.buckets.capacity * 4 + self.hashes.capacity * 4 }

    /// The key's number, nil when no object or record of the account has carried it.
    func number(type: ObjectType, a: String) -> UInt32? {
        Self.withBytes(type, a) { bytes, hash in self.find(bytes, hash: hash).number }
    }

    /// The key's number, numbering it when new.
    mutating func intern(type: ObjectType, a: String) -> UInt32 {
        Self.withBytes(type, a) { bytes, hash in
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
    }

    /// The key's bytes (type byte, then A) and their hash.
    private static func withBytes<T>(_ type: ObjectType, _ a: String, _ body: (UnsafeBufferPointer<UInt8>, UInt32) -> T) -> T {
        var bytes = [UInt8(truncatingIfNeeded: type.rawValue)]
        bytes.append(contentsOf: a.utf8)   // A is at most 128 bytes (§2): type byte + A fits a UInt8 length
        return bytes.withUnsafeBufferPointer { b in body(b, DeviceTable.hash(UnsafeRawBufferPointer(b))) }
    }

    /// The key's number, or the empty bucket where it would go.
    private func find(_ bytes: UnsafeBufferPointer<UInt8>, hash: UInt32) -> (number: UInt32?, bucket: Int) {
        let mask = self.buckets.count - 1
        var i = Int(hash) & mask
        while true {
            let n = self.buckets[i]
            if n < 0 { return (nil, i) }
            let slice = self.slices[Int(n)]
            if self.hashes[Int(n)] == hash, Int(slice.length) == bytes.count,
               self.arena[Int(slice.offset)..<Int(slice.offset) + bytes.count].elementsEqual(bytes) {
                return (UInt32(n), i)
            }
            i = (i + 1) & mask
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
