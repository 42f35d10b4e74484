import ConcordBytes
import ConcordDomain
import CConcordSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Numbering: records by GUID, fingerprints interned once, object keys (type, A) per account.
extension AccountMappingIndex {
    // MARK: - Records, fingerprints and keys by number

    func number(of key: UUIDBits) -> UInt32? {
        self.recordTable.number(of: key) { self.records[Int($0)].guid }
    }

    /// Records come in creation order, so array order is "oldest first".
    func appendRecord(_ record: CloudRecord) {
        guard let key = UUIDBits(record.guid) else { self.isExact = false; return }
        let number = UInt32(self.records.count)
        let fingerprint = self.intern(record.fingerprint)
        self.records.append(Record(guid: key, fingerprint: fingerprint, type: record.type, key: Self.noKey))
        self.recordFingerprints.insert(fingerprint)
        self.recordTable.insert(key, number: number) { self.records[Int($0)].guid }
        for device in self.devices.values { device.recordAdded(key, number: number) }
    }

    func intern(_ fingerprint: String) -> UInt32 {
        var s = fingerprint
        return s.withUTF8 { self.fingerprints.intern($0) }
    }

    /// The record's key numbers.
    func keys(ofRecord n: Int) -> [UInt32] {
        let first = self.records[n].key
        guard first != Self.noKey else { return [] }
        return [first] + (self.moreRecordKeys[UInt32(n)] ?? [])
    }

    /// The record takes the key (once).
    func addRecordKey(guid: String, key: ObjectKey) {
        guard let n = self.recordNumber(for: guid) else { return }
        self.addRecordKey(number: n, key: self.keyTable.intern(type: key.type, a: key.a))
    }

    /// Record number `n` takes key number `k` (once).
    func addRecordKey(number n: UInt32, key k: UInt32) {
        if self.records[Int(n)].key == Self.noKey { self.records[Int(n)].key = k; return }
        if self.keys(ofRecord: Int(n)).contains(k) { return }
        self.moreRecordKeys[n, default: []].append(k)
    }

    /// Whether fingerprint number `n` is `fingerprint`, byte for byte.
    func fingerprint(_ n: UInt32, is fingerprint: String) -> Bool {
        var wanted = fingerprint
        let slice = self.fingerprints.slices[Int(n)]
        return wanted.withUTF8 { w in
            w.count == Int(slice.length) && self.fingerprints.arena.withUnsafeBufferPointer { a in
                w.isEmpty || memcmp(a.baseAddress! + Int(slice.offset), w.baseAddress!, w.count) == 0
            }
        }
    }

    /// `fingerprint(_:is:)` of text given as UTF-8.
    func fingerprint(_ n: UInt32, isBytes wanted: UnsafeBufferPointer<UInt8>) -> Bool {
        let slice = self.fingerprints.slices[Int(n)]
        return wanted.count == Int(slice.length) && self.fingerprints.arena.withUnsafeBufferPointer { a in
            wanted.isEmpty || memcmp(a.baseAddress! + Int(slice.offset), wanted.baseAddress!, wanted.count) == 0
        }
    }

    /// Whether the fingerprint number is the empty fingerprint (none).
    func isEmpty(fingerprint n: UInt32) -> Bool { self.fingerprintSlices[Int(n)].length == 0 }

    func recordNumber(for guid: String) -> UInt32? {
        UUIDBits(guid).flatMap { self.number(of: $0) }
    }

    func fingerprint(_ n: UInt32) -> String {
        let slice = self.fingerprintSlices[Int(n)]
        return self.fingerprintBytes.withUnsafeBufferPointer { b in
            String(decoding: UnsafeBufferPointer(rebasing: b[Int(slice.offset)..<Int(slice.offset) + Int(slice.length)]), as: UTF8.self)
        }
    }
}
