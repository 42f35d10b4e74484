import ConcordBytes
import ConcordDomain
import Foundation
import Synchronization

/// The mapping index's load from the tables (`MappingTableBytesReads`). Each table is one
/// `COPY (query) TO STDOUT (FORMAT binary)`: PostgreSQL streams the rows as it reads them while
/// this side decodes each in place (no result object per row or per batch, no `String` per row),
/// so its work and ours overlap. No join in SQL: records come in
/// creation order, links give each object number its record's order (an array per device, by
/// object number), and each device's objects come in number order (its primary key) and find their
/// link there. The statements run in the read's snapshot (COPY of a query uses the transaction's).
///
/// A large account (`parallelLoadObjects`) is read on two connections at once: a second one, opened
/// for the load, imports the read's snapshot (`PGConnection.openSnapshotSibling`), so both see the
/// same rows. The links come on it while the records come on the read's own; then the devices'
/// objects are split between the two, each connection on its own thread, when the sink takes devices
/// concurrently. Two backends produce rows and two threads consume them.
extension PostgresTransaction: MappingTableBytesReads {
    /// Accounts with fewer objects load on the read's connection alone: a second one costs its
    /// start (a few milliseconds of both sides' CPU), which a load this small does not win back.
    /// (Tests lower it to load small accounts on two connections.)
    static let parallelLoadObjects = Atomic(50_000)
    /// Tests: called with the account's ID once a load on two connections holds both (a write
    /// committed then races the load), and counts those loads.
    static let parallelLoadStarted = Mutex<(@Sendable (String) -> Void)?>(nil)
    static let parallelLoads = Atomic(0)

    func streamMappingTableBytes(into sink: any MappingTableSink) throws {
        let account = try self.accountKey()
        var devices: [LoadedDevice] = []
        try self.db.query("SELECT device_id, device_key, next_object_no, object_count FROM devices WHERE account_id = $1 ORDER BY device_id",
                          [.text(self.accountID)]) { r in
            devices.append(LoadedDevice(number: devices.count, key: r.int(1), objectNumbers: Int(max(r.int(2), 1))))
            try sink.device(r.text(0), objects: Int(max(r.int(3), 0)))
        }
        sink.expectRecords(try self.recordCount())
        let objects = devices.reduce(0) { $0 + $1.objectNumbers }
        if sink.takesDevicesConcurrently, objects >= Self.parallelLoadObjects.load(ordering: .relaxed), let sibling = try? self.db.openSnapshotSibling() {
            defer { sibling.endSnapshotSibling() }
            Self.parallelLoads.add(1, ordering: .relaxed)
            Self.parallelLoadStarted.withLock { $0 }?(self.accountID)
            try self.streamInParallel(account: account, devices: devices, sibling: sibling, into: sink)
            return
        }
        try Self.streamRecords(on: self.db, account: account, into: sink)
        var linkOrders = try Self.linkOrders(on: self.db, account: account, devices: devices)
        try sink.beginObjects()
        for d in devices {
            try Self.streamObjects(on: self.db, device: d, linkOrders: linkOrders.removeValue(forKey: d.key) ?? [], into: sink)
        }
    }

    /// Records and their keys on the read's connection while the links come on `sibling`; then
    /// each connection streams every other device's objects, on its own thread.
    private func streamInParallel(account: Int64, devices: [LoadedDevice], sibling: PGConnection, into sink: any MappingTableSink) throws {
        let links = LinkOrdersBox()
        try alongside({
            links.orders = try Self.linkOrders(on: sibling, account: account, devices: devices)
        }, {
            try Self.streamRecords(on: self.db, account: account, into: sink)
        })
        try sink.beginObjects()
        let orders = links.orders
        try alongside({
            for d in devices where d.number % 2 == 1 { try Self.streamObjects(on: sibling, device: d, linkOrders: orders[d.key] ?? [], into: sink) }
        }, {
            for d in devices where d.number % 2 == 0 { try Self.streamObjects(on: self.db, device: d, linkOrders: orders[d.key] ?? [], into: sink) }
        })
    }

    /// Every record in creation order, then every record key.
    private static func streamRecords(on db: PGConnection, account: Int64, into sink: any MappingTableSink) throws {
        // Keys are integers this process read: spelled into the COPY statements, which bind no parameters.
        try db.copyRows("SELECT record, type, fingerprint, created_order FROM records WHERE account_key = \(account) ORDER BY created_order") { r in
            guard let type = ObjectType(rawValue: Int(r.int(1))) else { return }
            let guid = UUIDBits(bigEndianBytes: r.bytes(0))
            let order = r.int(3), stored = r.bytes(2)
            try FingerprintBytes.withText(stored) { try sink.record(guid: guid, type: type, fingerprint: $0, fingerprintKey: stored, order: order) }
        }
        try db.copyRows("SELECT record, type, key_a FROM record_keys WHERE account_key = \(account)") { r in
            guard let type = ObjectType(rawValue: Int(r.int(1))) else { return }
            try sink.recordKey(guid: UUIDBits(bigEndianBytes: r.bytes(0)), type: type, a: r.utf8(2))
        }
    }

    /// Each device's links: record order by object number (0: none).
    private static func linkOrders(on db: PGConnection, account: Int64, devices: [LoadedDevice]) throws -> [Int64: [Int64]] {
        // Written through plain pointers, the row's device found among a few by comparison: no
        // hashing, no access check per row.
        let buffers = devices.map { d in
            let b = UnsafeMutableBufferPointer<Int64>.allocate(capacity: d.objectNumbers)
            b.initialize(repeating: 0)
            return b
        }
        defer { for b in buffers { b.deallocate() } }
        try buffers.withUnsafeBufferPointer { buffers in
            try devices.withUnsafeBufferPointer { devices in
                var last = 0
                try db.copyRows("SELECT device_key, object_no, record_order FROM links WHERE account_key = \(account)") { r in
                    let device = r.int(0), number = r.int(1)
                    if last >= devices.count || devices[last].key != device {
                        guard let n = devices.firstIndex(where: { $0.key == device }) else { return }
                        last = n
                    }
                    let orders = buffers[last]
                    guard number >= 0, number < Int64(orders.count) else { return }
                    orders[Int(number)] = r.int(2)
                }
            }
        }
        var linkOrders: [Int64: [Int64]] = [:]
        for (d, b) in zip(devices, buffers) { linkOrders[d.key] = Array(b) }
        return linkOrders
    }

    /// How many object numbers ahead the sink is told of a link (`laterLinkedOrder`): far enough for
    /// its record's line to arrive from memory before that object's row comes.
    static let linkLookahead: Int64 = 8

    /// One device's objects in number order, each with its link's record order.
    private static func streamObjects(on db: PGConnection, device d: LoadedDevice, linkOrders: [Int64], into sink: any MappingTableSink) throws {
        try linkOrders.withUnsafeBufferPointer { orders in
            try db.copyRows("""
                SELECT object_no, local_id, type, fingerprint, key_a, creation_second FROM objects WHERE device_key = \(d.key) ORDER BY object_no
                """) { r in
                guard let type = ObjectType(rawValue: Int(r.int(2))) else { return }
                let number = r.int(0)
                let linked = number >= 0 && number < Int64(orders.count) ? orders[Int(number)] : 0
                let later = number >= 0 && number + Self.linkLookahead < Int64(orders.count) ? orders[Int(number + Self.linkLookahead)] : 0
                let stored = r.bytes(3)
                try FingerprintBytes.withText(stored) { fingerprint in
                    try sink.object(device: d.number, localIdentifier: r.utf8(1), type: type, fingerprint: fingerprint, fingerprintKey: stored,
                                    linkedOrder: linked, laterLinkedOrder: later, keyA: r.isNull(4) ? nil : r.utf8(4), creationSecond: r.isNull(5) ? nil : r.int(5),
                                    storageRow: number)
                }
            }
        }
    }
}

/// A device as the load reads it: its number in the sink's order, its key, and how many object
/// numbers it has given out (the length of its links' array).
private struct LoadedDevice: Sendable {
    let number: Int
    let key: Int64
    let objectNumbers: Int
}

/// The links read on the other thread, handed over when it is done.
private final class LinkOrdersBox: @unchecked Sendable {
    var orders: [Int64: [Int64]] = [:]
}

/// Runs `side` on a thread of its own while `body` runs on this one, and returns once both are done:
/// `body`'s error first, else `side`'s. Nothing is shared between the two but what the caller hands
/// over after (`side` writes, the caller reads once this returns).
private func alongside(_ side: @escaping () throws -> Void, _ body: () throws -> Void) throws {
    let job = SideJob(side)
    let thread = Thread { job.run() }
    thread.start()
    var failure: (any Error)?
    do { try body() } catch { failure = error }
    job.done.wait()
    if let failure { throw failure }
    try job.result.get()
}

/// `alongside`'s other thread: its work, and its outcome once `done` is signalled.
private final class SideJob: @unchecked Sendable {
    private let work: () throws -> Void
    var result: Result<Void, any Error> = .success(())
    let done = DispatchSemaphore(value: 0)

    init(_ work: @escaping () throws -> Void) { self.work = work }

    func run() {
        self.result = Result { try self.work() }
        self.done.signal()
    }
}

extension FingerprintBytes {
    /// `body` with the text of a stored fingerprint (`text(_:)`) as UTF-8, spelled into a buffer of
    /// the stack rather than a `String`.
    static func withText<T>(_ stored: UnsafeRawBufferPointer, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T {
        guard let first = stored.first else { return try body(UnsafeBufferPointer(start: nil, count: 0)) }
        if first == 0 { return try body(UnsafeRawBufferPointer(rebasing: stored[1...]).bindMemory(to: UInt8.self)) }
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Base64URL.encodedCount(stored.count)) { out in
            try body(UnsafeBufferPointer(rebasing: out[..<Base64URL.encode(stored, into: out)]))
        }
    }
}
