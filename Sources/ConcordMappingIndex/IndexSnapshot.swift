import ConcordBytes
import ConcordDomain
// Where the mapping index keeps its accounts between runs: at a clean shutdown each
// loaded account is written as it lies in memory, and the next load of that account reads it
// back array by array instead of rebuilding it from millions of rows. A cache: a missing,
// stale or damaged snapshot only costs a load from the tables.
//
// A snapshot is used only when storage still says it is current: saving one records its random
// ID in the account's row, at the mapping version it reflects (`recordIndexSnapshot`), and a load
// takes it only when the account's row holds that same ID at that same version. Any later write
// moves the version on; a database restored from a backup holds another ID, or none.
//
// The store the files live in is the domain's `MappingIndexSnapshotStore` (ConcordStorage's
// `IndexSnapshotDirectory`).

/// A snapshot that cannot be used (damaged, of another layout, for another state): the account is
/// loaded from its tables instead.
struct UnusableSnapshot: Error {
    let reason: String
}

/// Writes an index's arrays as their bytes, each unit (a value, or an array's count then its
/// elements) folded into a checksum the reader recomputes.
struct SnapshotWriter {
    let output: any MappingIndexSnapshotOutput
    private(set) var checksum = SnapshotChecksum()

    init(_ output: any MappingIndexSnapshotOutput) { self.output = output }

    mutating func value<T: BitwiseCopyable>(_ value: T) throws {
        try withUnsafeBytes(of: value) { try self.unit($0) }
    }

    mutating func array<T: BitwiseCopyable>(_ array: [T]) throws {
        try self.value(UInt64(array.count))
        try array.withUnsafeBytes { try self.unit($0) }
    }

    mutating func string(_ string: String) throws {
        try self.array(Array(string.utf8))
    }

    private mutating func unit(_ bytes: UnsafeRawBufferPointer) throws {
        self.checksum.add(bytes)
        if !bytes.isEmpty { try self.output.write(bytes) }
    }

    /// Ends the snapshot with its checksum.
    mutating func finish() throws {
        let sum = self.checksum.value
        try withUnsafeBytes(of: sum) { try self.output.write($0) }
    }
}

/// Reads what `SnapshotWriter` wrote, checking each array's size against what is left (a damaged
/// count fails here, not in an allocation) and, at the end, the checksum.
struct SnapshotReader {
    let input: any MappingIndexSnapshotInput
    private var checksum = SnapshotChecksum()

    init(_ input: any MappingIndexSnapshotInput) { self.input = input }

    mutating func value<T: BitwiseCopyable>(_: T.Type = T.self) throws -> T {
        var value: T? = nil
        try withUnsafeTemporaryAllocation(of: T.self, capacity: 1) { buffer in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            try self.input.read(into: raw)
            self.checksum.add(UnsafeRawBufferPointer(raw))
            value = buffer[0]
        }
        return value!
    }

    mutating func array<T: BitwiseCopyable>(_: T.Type = T.self) throws -> [T] {
        let count = try self.value(UInt64.self)
        let stride = UInt64(MemoryLayout<T>.stride)
        guard count <= UInt64(self.input.remaining) / max(1, stride) else { throw UnusableSnapshot(reason: "an array longer than the file") }
        // With the headroom a load from the tables leaves (`Headroom`): the first write after a
        // start from a snapshot appends without copying the array.
        return try [T](unsafeUninitializedCapacity: Headroom.capacity(for: Int(count))) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(buffer)[..<(Int(count) * MemoryLayout<T>.stride)])
            if !raw.isEmpty { try self.input.read(into: raw) }
            self.checksum.add(UnsafeRawBufferPointer(raw))
            initialized = Int(count)
        }
    }

    mutating func string() throws -> String {
        String(decoding: try self.array(UInt8.self), as: UTF8.self)
    }

    /// Checks the checksum, and that nothing follows it.
    mutating func finish() throws {
        let expected = self.checksum.value
        var stored: UInt64 = 0
        try withUnsafeMutableBytes(of: &stored) { try self.input.read(into: $0) }
        guard stored == expected, self.input.remaining == 0 else { throw UnusableSnapshot(reason: "checksum mismatch") }
    }
}

/// A 64-bit multiply-mix checksum, eight bytes a step (a 260 MB snapshot in tens of milliseconds):
/// it catches a torn or damaged file, not a forged one (the snapshot directory is the server's own).
struct SnapshotChecksum {
    private(set) var value: UInt64 = 0x243F_6A88_85A3_08D3

    mutating func add(_ bytes: UnsafeRawBufferPointer) {
        var h = self.value ^ UInt64(bytes.count)
        var i = 0
        let count = bytes.count
        while i + 8 <= count {
            h = (h ^ bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0x9E37_79B9_7F4A_7C15
            h ^= h >> 31
            i += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while i < count {
            tail |= UInt64(bytes[i]) << shift
            shift += 8
            i += 1
        }
        h = (h ^ tail) &* 0xC4CE_B9FE_1A85_EC53
        self.value = h ^ (h >> 29)
    }
}

/// What a snapshot says it is, checked before anything else is read.
struct SnapshotHeader: Equatable {
    /// Bumped whenever what a snapshot holds changes meaning (the layout itself is checked too).
    static let format: UInt32 = 1
    static let magic = Array("CONCORD-MAPPING-INDEX".utf8)

    var accountID: String
    var snapshotID: String
    var version: Int64
    /// The index's `estimatedBytes` when written: a snapshot larger than the budget is refused
    /// before any of it is read.
    var estimatedBytes: Int64

    func write(_ w: inout SnapshotWriter) throws {
        try w.array(Self.magic)
        try w.value(Self.format)
        try w.array(Self.layout)
        try w.string(self.accountID)
        try w.string(self.snapshotID)
        try w.value(self.version)
        try w.value(self.estimatedBytes)
    }

    static func read(_ r: inout SnapshotReader) throws -> SnapshotHeader {
        guard try r.array(UInt8.self) == Self.magic else { throw UnusableSnapshot(reason: "not a mapping index snapshot") }
        guard try r.value(UInt32.self) == Self.format, try r.array(Int.self) == Self.layout else {
            throw UnusableSnapshot(reason: "written by a build of another layout")
        }
        return SnapshotHeader(accountID: try r.string(), snapshotID: try r.string(), version: try r.value(), estimatedBytes: try r.value())
    }

    /// The byte order and the in-memory layout of every array written as it lies: a build whose
    /// structs differ reads none of another's snapshots.
    static let layout: [Int] = [0x0102_0304_0506_0708.littleEndian == 0x0102_0304_0506_0708 ? 1 : 0]
        + DeviceTable.Slot.snapshotLayout + AccountMappingIndex.Record.snapshotLayout
        + [MemoryLayout<(offset: UInt32, length: UInt8)>.size, MemoryLayout<(offset: UInt32, length: UInt8)>.stride,
           MemoryLayout<UUIDBits>.size, MemoryLayout<UUIDBits>.stride, MemoryLayout<ObjectType>.size]
        + ObjectType.allCases.map(\.rawValue)   // an enum is stored as its case's position
}
