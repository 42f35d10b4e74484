import ConcordBytes
import ConcordDomain

/// One account's mapping tables in memory: every device's objects (type, fingerprint, link) and the
/// account's cloud records. Each read answers exactly what storage answers (`MappingReads`); each
/// mutation does to it what the write transaction's method of the same name does to storage. Not
/// thread-safe: `MappingIndex` guards it with the account's lock.
///
/// Layout, for memory and for the hot path: identifier and fingerprint bytes live in byte arenas,
/// objects and records in contiguous arrays of plain values, and the hash tables map to array
/// positions. A lookup therefore reads plain memory and copies bytes into the answer, and never
/// retains a string another thread may be retaining at the same moment.
///
/// By concern: numbering (AccountMappingIndex+Keys.swift), loading from storage or a snapshot
/// (+Loading), the lookups of both directions (+Lookups), the wanted list and counts (+Wanted),
/// and the write transaction's mutations (+Mutations).
final class AccountMappingIndex {
    /// The account's mapping version this index reflects.
    var version: Int64 = 0
    /// False once a GUID that is not in canonical form was met: the index cannot key it, so the
    /// account is served from storage instead.
    var isExact = true
    /// Loaded from the account's snapshot (which is then still current on disk).
    var loadedFromSnapshot = false

    // MARK: Fingerprints, interned per account

    /// Each distinct fingerprint once, numbered.
    var fingerprints = ByteTable()
    var fingerprintBytes: [UInt8] { self.fingerprints.arena }
    var fingerprintSlices: [(offset: UInt32, length: UInt8)] { self.fingerprints.slices }

    // MARK: Records

    struct Record: BitwiseCopyable {
        var guid: UUIDBits
        var fingerprint: UInt32
        var type: ObjectType
        /// The first key's A number (`noKey`: none); more keys in `moreRecordKeys`.
        var key: UInt32

        /// Size, stride and each field's offset (IndexSnapshot's layout check).
        static var snapshotLayout: [Int] {
            [MemoryLayout<Self>.size, MemoryLayout<Self>.stride]
                + ([\Self.guid, \Self.fingerprint, \Self.type, \Self.key] as [PartialKeyPath<Self>]).map { MemoryLayout<Self>.offset(of: $0) ?? -1 }
        }
    }
    var records: [Record] = []
    /// The fingerprint numbers some record carries, as bits: the write path asks storage for records
    /// by content only for the fingerprints set here (`contentsSomeRecordCarries`). Kept with
    /// `records` wherever a record's fingerprint is set; rebuilt from them after a snapshot.
    var recordFingerprints = FingerprintBits()
    /// Record number → its keys after the first (rare: a record whose objects' keys differed).
    var moreRecordKeys: [UInt32: [UInt32]] = [:]

    // MARK: Keys, numbered per account

    static let noKey = UInt32.max
    var keyTable = KeyTable()
    var recordTable = RecordTable()

    // MARK: Devices

    var devices: [String: DeviceTable] = [:]

    // MARK: Answers cached per device (AccountMappingIndex+Wanted.swift)

    var deviceAnswers: [String: DeviceAnswers] = [:]

    init() {}

    /// An estimate of the heap bytes held: array and table capacities times their element sizes,
    /// arena bytes, and the dictionaries' entries at twice their size (at most 75 % full, growing by
    /// doubling). Measured against the process's resident size in docs/benchmarks.md.
    var estimatedBytes: Int {
        var total = self.fingerprints.estimatedBytes
        // An interned key: its dictionary entry (twice its size) and the string's heap copy.
        total += self.keyTable.estimatedBytes + self.moreRecordKeys.count * 2 * 48
        for answers in self.deviceAnswers.values { total += answers.wanted.capacity * 4 + 96 }
        total += self.records.capacity * MemoryLayout<Record>.stride + self.recordTable.estimatedBytes + self.recordFingerprints.estimatedBytes
        for device in self.devices.values { total += device.estimatedBytes }
        return total
    }
}

/// The index's answers through the `MappingReads` protocol the mapping rules read.
struct IndexedMappingReads: MappingReads, WritePathReads {
    let index: AccountMappingIndex

    func linkLookups(_ device: DeviceRef, localIdentifiers: IdentifierBatch) throws -> LinkLookups {
        self.index.linkLookups(device.deviceID, localIdentifiers: localIdentifiers)
    }

    func recordLookups(_ device: DeviceRef, identifiers: [CloudIdentifier]) throws -> [RecordLookup] {
        self.index.recordLookups(device.deviceID, identifiers: identifiers)
    }

    func quickLocalIdentifiers(_ device: DeviceRef, cloudIdentifiers batch: IdentifierBatch, contentMatch: Bool) throws -> QuickLocalIdentifiers? {
        self.index.quickLocalIdentifiers(device.deviceID, cloudIdentifiers: batch, contentMatch: contentMatch)
    }

    func objects(_ device: DeviceRef, matching keys: [ContentKey]) throws -> [StoredObject] {
        self.index.objects(device.deviceID, matching: keys)
    }

    func mappingObjects(_ device: DeviceRef, localIdentifiers: [String], withStorageRows: Bool) throws -> [StoredObject]? {
        self.index.mappingObjects(device.deviceID, localIdentifiers: localIdentifiers, withStorageRows: withStorageRows)
    }

    func contentsSomeRecordCarries(_ keys: [ContentKey]) throws -> [ContentKey]? {
        self.index.contentsSomeRecordCarries(keys)
    }

    func identifiersPresent(_ device: DeviceRef, among localIdentifiers: [String]) throws -> [String]? {
        self.index.identifiersPresent(device.deviceID, among: localIdentifiers)
    }

    func wantedPage(_ device: DeviceRef, after: String?, limit: Int) throws -> WantedPage {
        self.index.wantedPage(device.deviceID, after: after, limit: limit)
    }

    func libraryStatus(_ device: DeviceRef) throws -> LibraryStatus {
        self.index.libraryStatus(device.deviceID)
    }
}

/// A set of fingerprint numbers as bits (a million fingerprints: 125 KB).
struct FingerprintBits {
    private var words: [UInt64] = []

    var estimatedBytes: Int { self.words.capacity * 8 }

    mutating func insert(_ n: UInt32) {
        let word = Int(n >> 6)
        if word >= self.words.count { self.words.append(contentsOf: repeatElement(0, count: max(word + 1 - self.words.count, self.words.count))) }
        self.words[word] |= 1 << UInt64(n & 63)
    }

    func contains(_ n: UInt32) -> Bool {
        let word = Int(n >> 6)
        return word < self.words.count && self.words[word] & (1 << UInt64(n & 63)) != 0
    }
}
