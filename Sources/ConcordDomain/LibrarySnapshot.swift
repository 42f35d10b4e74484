import ConcordBytes
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `PUT /v1/library`, an upload's part: a whole library, or a slice of one. Objects carry their
/// type; the app fills them from the three arrays.
///
/// Packed: the objects' fields are bytes in one buffer, an object a run of them, and an
/// object becomes a `LibraryObject` only while it is looked at. A `LibraryObject` of a photo holds
/// its identifier, fingerprint and date as three heap strings beside a 140-byte value — a 360 000-
/// object manifest took 240 MB that way, four times its JSON; packed it takes about the JSON's size.
public struct LibrarySnapshot: Sendable, Equatable {
    /// The objects' encodings, one after another (`append` says the layout).
    private var packed = PackedWriter()
    /// Where each object's encoding starts.
    private var starts: [Int] = []

    public init() {}

    public init(objects: [LibraryObject]) {
        self.reserveCapacity(objects.count)
        for object in objects { self.append(object) }
    }

    public var count: Int { self.starts.count }
    public var isEmpty: Bool { self.starts.isEmpty }

    /// Every object, unpacked: for small snapshots (an upload's part, tests).
    public var objects: [LibraryObject] { (0..<self.count).map { self[$0] } }

    public mutating func reserveCapacity(_ objects: Int) {
        self.starts.reserveCapacity(objects)
    }

    public static func == (a: LibrarySnapshot, b: LibrarySnapshot) -> Bool {
        a.starts == b.starts && a.packed.bytes == b.packed.bytes
    }

    private enum Flag {
        static let hasAdjustments: UInt8 = 1
        static let isFavorite: UInt8 = 2
        static let appCreated: UInt8 = 4
        static let photoKitCloudIdentifier: UInt8 = 8
        static let creationDate: UInt8 = 16
        static let modificationDate: UInt8 = 32
        static let title: UInt8 = 64
    }

    /// Layout (`PackedWriter`): the local identifier first, at a fixed place (`withIdentifier(at:)`
    /// reads it without unpacking); type (1 byte: the raw value), media type (1: its index in
    /// `allCases`), flags (1); the fingerprint, the optional strings the flags announce, and the
    /// members: their count, then as many strings.
    public mutating func append(_ o: LibraryObject) {
        self.starts.append(self.packed.count)
        var flags: UInt8 = 0
        if o.hasAdjustments { flags |= Flag.hasAdjustments }
        if o.isFavorite { flags |= Flag.isFavorite }
        if o.appCreated { flags |= Flag.appCreated }
        if o.photoKitCloudIdentifier != nil { flags |= Flag.photoKitCloudIdentifier }
        if o.creationDate != nil { flags |= Flag.creationDate }
        if o.modificationDate != nil { flags |= Flag.modificationDate }
        if o.title != nil { flags |= Flag.title }
        self.packed.string(o.localIdentifier)
        self.packed.byte(UInt8(o.type.rawValue))
        self.packed.byte(UInt8(MediaType.allCases.firstIndex(of: o.mediaType) ?? 0))
        self.packed.byte(flags)
        self.packed.string(o.fingerprint)
        for optional in [o.photoKitCloudIdentifier, o.creationDate, o.modificationDate, o.title] {
            if let value = optional { self.packed.string(value) }
        }
        self.packed.length(o.members.count)
        for member in o.members { self.packed.string(member) }
    }

    /// `body` reading object `i`'s encoding.
    private func reading<T>(_ i: Int, _ body: (inout PackedReader) throws -> T) rethrows -> T {
        try self.packed.bytes.withUnsafeBufferPointer { b in
            var r = PackedReader(bytes: b, at: self.starts[i])
            return try body(&r)
        }
    }

    /// Object `i`, unpacked.
    public subscript(i: Int) -> LibraryObject {
        self.reading(i) { r in
            let localIdentifier = r.string()
            let type = ObjectType(rawValue: Int(r.byte())) ?? .asset
            let mediaType = MediaType.allCases[Int(r.byte())]
            let flags = r.byte()
            let fingerprint = r.string()
            let photoKitCloudIdentifier = flags & Flag.photoKitCloudIdentifier != 0 ? r.string() : nil
            let creationDate = flags & Flag.creationDate != 0 ? r.string() : nil
            let modificationDate = flags & Flag.modificationDate != 0 ? r.string() : nil
            let title = flags & Flag.title != 0 ? r.string() : nil
            let memberCount = r.length()
            var members: [String] = []
            members.reserveCapacity(memberCount)
            for _ in 0..<memberCount { members.append(r.string()) }
            return LibraryObject(localIdentifier: localIdentifier, type: type, fingerprint: fingerprint, mediaType: mediaType,
                                 creationDate: creationDate, modificationDate: modificationDate,
                                 hasAdjustments: flags & Flag.hasAdjustments != 0, isFavorite: flags & Flag.isFavorite != 0,
                                 title: title, members: members, appCreated: flags & Flag.appCreated != 0,
                                 photoKitCloudIdentifier: photoKitCloudIdentifier)
        }
    }

    /// The type of object `i`, without unpacking it.
    public func type(at i: Int) -> ObjectType {
        self.reading(i) { r in
            _ = r.utf8()
            return ObjectType(rawValue: Int(r.byte())) ?? .asset
        }
    }

    /// `body` with the local identifier's UTF-8 bytes of object `i`, without unpacking it.
    public func withIdentifier<T>(at i: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T {
        try self.reading(i) { r in try body(r.utf8()) }
    }
}

extension LibrarySnapshot {
    /// The objects' numbers in their local identifiers' byte order (the order of a library's merge
    /// with storage).
    func numbersInIdentifierOrder() -> [Int] {
        self.packed.bytes.withUnsafeBufferPointer { b -> [Int] in
            @inline(__always) func identifier(_ i: Int) -> UnsafeBufferPointer<UInt8> {
                var r = PackedReader(bytes: b, at: self.starts[i])
                return r.utf8()
            }
            return ByteOrder.positions(count: self.count, key: identifier)
        }
    }
}

/// The objects of a `LibrarySnapshot` by local identifier: an open-addressing table of their
/// numbers, hashed and compared as the snapshot's own bytes (no string per object).
struct SnapshotIdentifiers {
    private var buckets: [Int32]
    private let mask: Int

    init(capacity: Int) {
        var size = 16
        while size < capacity * 2 { size <<= 1 }
        self.buckets = [Int32](repeating: -1, count: size)
        self.mask = size - 1
    }

    /// Adds object `i` of `snapshot`; false (nothing added) when an earlier object has its identifier.
    mutating func insert(_ i: Int, of snapshot: LibrarySnapshot) -> Bool {
        snapshot.withIdentifier(at: i) { id in
            var b = Int(ByteHash.hash(UnsafeRawBufferPointer(id))) & self.mask
            while self.buckets[b] >= 0 {
                if snapshot.withIdentifier(at: Int(self.buckets[b]), { $0.elementsEqual(id) }) { return false }
                b = (b + 1) & self.mask
            }
            self.buckets[b] = Int32(i)
            return true
        }
    }

    /// The number of the object with identifier `id`, nil when none.
    func number(of id: String, in snapshot: LibrarySnapshot) -> Int? {
        var id = id
        return id.withUTF8 { id in
            var b = Int(ByteHash.hash(UnsafeRawBufferPointer(id))) & self.mask
            while self.buckets[b] >= 0 {
                let n = Int(self.buckets[b])
                if snapshot.withIdentifier(at: n, { $0.elementsEqual(id) }) { return n }
                b = (b + 1) & self.mask
            }
            return nil
        }
    }
}
