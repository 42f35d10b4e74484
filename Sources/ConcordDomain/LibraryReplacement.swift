import ConcordBytes
import Foundation

/// A whole library replacing what a device has stored (`PUT /v1/library`, an upload's commit),
/// applied as a merge of two streams in local identifier byte order: the sent library, a page at a
/// time from its source, and the stored library, a page at a time from storage. Neither side is
/// ever held whole, so an upload of a million objects costs a few pages of memory (plus the change's
/// list of identifiers), and its writes go to storage in chunks inside the one write transaction.
///
/// New objects are stored in the order they arrived, not in byte order, when the library grows by a
/// page or more (`run`'s `nextArrived`): a device that uploads its library and then maps it in the
/// same order finds each request's objects in neighbouring rows (an upload's parts one after the
/// other; a `PUT /v1/library` body in its own order). The merge then only counts them, and a second
/// pass over the sent library in arrival order writes those the merge found new.
///
/// The caller has checked the sent library's own rules (identifiers valid and distinct, members
/// present); what needs the stored library (an identifier keeping its type), the precondition and
/// the quota are checked here, in the contract's order: a `400` found anywhere wins over `412`,
/// which wins over `403`. While one of those is pending nothing is written, and any error rolls
/// back what was.
struct LibraryReplacement {
    /// Objects read from each side per round trip, and writes per chunk.
    static let pageSize = 2_000

    let tx: any AccountWriteTransaction
    let device: DeviceRef
    let reset: Bool
    /// `412` to throw at the end unless a `400` comes first (`LibraryService.checkPrecondition`).
    let preconditionFailure: DomainError?
    /// `403` to throw at the end when the change changes anything.
    let quotaFailure: DomainError?

    private var details = ChangeDetails()
    private var unchanged = 0
    private var puts: [StoredObject] = []
    private var deletes: [String] = []
    private var takes: [(object: LibraryObject, record: CloudRecord)] = []
    private var writes: Bool { self.preconditionFailure == nil && self.quotaFailure == nil }
    /// New objects wait for the pass in arrival order (`insertNewInArrivalOrder`) instead of going
    /// out with the merge's chunks.
    private let insertsInArrivalOrder: Bool
    private var newObjects = 0
    private var sentObjects = 0

    /// `storedCount` and `sentCount`: the objects the device has and the objects sent, which decide
    /// whether new objects are written in arrival order.
    init(tx: any AccountWriteTransaction, device: DeviceRef, reset: Bool, preconditionFailure: DomainError?, quotaFailure: DomainError?,
         storedCount: Int, sentCount: Int) {
        self.tx = tx
        self.device = device
        self.reset = reset
        self.preconditionFailure = preconditionFailure
        self.quotaFailure = quotaFailure
        // A library that grows by less than a page keeps the merge's order: the second pass would
        // read the whole sent library again for a few objects.
        self.insertsInArrivalOrder = sentCount - storedCount >= Self.pageSize
    }

    /// Runs the merge. `nextSent` gives the sent library's next page in byte order, `nextArrived` the
    /// same objects' next page in the order they arrived (empty: done). Returns the change (nil
    /// details: nothing changed) and the counts; the caller appends it to the history.
    mutating func run(nextSent: () throws -> [LibraryObject],
                      nextArrived: () throws -> [LibraryObject]) throws -> (changed: Bool, details: ChangeDetails, unchanged: Int) {
        if self.reset && self.writes { try self.tx.dropAllLinks(self.device) }
        var sent = try nextSent()
        self.sentObjects = sent.count
        var si = 0
        var stored: [StoredObject] = []
        var ti = 0
        var storedAfter: String?
        var storedDone = false
        while true {
            if si == sent.count, !sent.isEmpty { sent = try nextSent(); si = 0; self.sentObjects += sent.count }
            // A stored page is read only once every decision before its first key is made, and the
            // writes so far are all at or before the last key read: paging never sees its own writes.
            if ti == stored.count, !storedDone {
                try self.flush()
                stored = try self.tx.storedObjectPage(self.device, after: storedAfter, limit: Self.pageSize)
                ti = 0
                storedDone = stored.count < Self.pageSize
                storedAfter = stored.last?.object.localIdentifier
            }
            let new = si < sent.count ? sent[si] : nil
            let old = ti < stored.count ? stored[ti] : nil
            switch (new, old) {
            case (nil, nil):
                try self.flush()
                if self.insertsInArrivalOrder, self.newObjects > 0, self.writes { try self.insertNewInArrivalOrder(nextArrived) }
                let changed = self.reset || !self.details.isEmpty
                if let failure = self.preconditionFailure { throw failure }
                if changed, let failure = self.quotaFailure { throw failure }
                return (changed, self.details, self.unchanged)
            case (let n?, let o?) where n.localIdentifier.utf8.elementsEqual(o.object.localIdentifier.utf8):
                try self.replace(o, with: n)
                si += 1; ti += 1
            case (let n?, let o?) where n.localIdentifier.utf8Precedes(o.object.localIdentifier):
                self.insert(n)
                si += 1
            case (let n?, nil):
                self.insert(n)
                si += 1
            case (_, let o?):
                self.delete(o)
                ti += 1
            }
            if self.puts.count + self.deletes.count >= Self.pageSize { try self.flush() }
        }
    }

    private mutating func insert(_ o: LibraryObject) {
        if self.insertsInArrivalOrder { self.newObjects += 1 } else { self.puts.append(StoredObject(object: o, link: nil)) }
        self.details[o.type].inserted.append(o.localIdentifier)
    }

    /// The second pass: the sent library in arrival order, its new objects (those the merge listed as
    /// inserted, found by binary search in those lists, which are in byte order; all of them when
    /// every object sent is new, as in a first upload) written a chunk at a time. Every stored page
    /// was read before: the pass never meets its own writes. A sent library that gives fewer new
    /// objects in arrival order than in byte order fails the write rather than lose them.
    private mutating func insertNewInArrivalOrder(_ nextArrived: () throws -> [LibraryObject]) throws {
        let allNew = self.newObjects == self.sentObjects
        var remaining = self.newObjects
        while remaining > 0 {
            let page = try nextArrived()
            guard !page.isEmpty else { break }
            for o in page where allNew || Self.contains(self.details[o.type].inserted, o.localIdentifier) {
                self.puts.append(StoredObject(object: o, link: nil))
            }
            remaining -= self.puts.count
            if !self.puts.isEmpty { try self.flush(newObjectsOnly: true) }
        }
        guard remaining == 0 else {
            throw DomainError.internalError(message: "The library sent gave \(self.newObjects - remaining) of its \(self.newObjects) new objects in arrival order.")
        }
    }

    /// Whether `sorted` (in byte order) holds `id`, by bytes.
    private static func contains(_ sorted: IdentifierList, _ id: String) -> Bool {
        var id = id
        return id.withUTF8 { key in
            var lo = 0, hi = sorted.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if sorted.withUTF8(at: mid, { $0.lexicographicallyPrecedes(key) }) { lo = mid + 1 } else { hi = mid }
            }
            return lo < sorted.count && sorted.withUTF8(at: lo) { $0.elementsEqual(key) }
        }
    }

    private mutating func delete(_ old: StoredObject) {
        self.deletes.append(old.object.localIdentifier)
        self.details[old.object.type].deleted.append(old.object.localIdentifier)
    }

    private mutating func replace(_ old: StoredObject, with new: LibraryObject) throws {
        if new.type != old.object.type {
            // A wholesale replacement may reuse an identifier for another type: delete + insert.
            guard self.reset else { throw LibraryService.typeChange(new.localIdentifier, from: old.object.type, to: new.type) }
            self.delete(old)
            self.insert(new)
            return
        }
        let merged = LibraryService.merged(new, keeping: old.object)
        if merged == old.object { self.unchanged += 1; return }
        let link = LibraryService.keptLink(old, new: merged, reset: self.reset)
        self.puts.append(StoredObject(object: merged, link: link))
        if let link, LibraryService.givesRecordMore(old.object, merged) { self.takes.append((merged, link)) }
        self.details[new.type].updated.append(new.localIdentifier)
    }

    /// Writes the chunk decided so far (deletes first: a retyped identifier is deleted, then put).
    /// `newObjectsOnly`: the second pass's chunk, objects the merge found the device does not have.
    private mutating func flush(newObjectsOnly: Bool = false) throws {
        defer { self.puts.removeAll(keepingCapacity: true); self.deletes.removeAll(keepingCapacity: true); self.takes.removeAll(keepingCapacity: true) }
        guard self.writes else { return }
        if !self.deletes.isEmpty { try self.tx.deleteObjects(self.device, localIdentifiers: self.deletes) }
        if !self.puts.isEmpty {
            if newObjectsOnly { try self.tx.insertNewObjects(self.device, self.puts) } else { try self.tx.putObjects(self.device, self.puts) }
        }
        if !self.takes.isEmpty { try MappingService.recordsTake(self.tx, self.takes) }
    }
}
