import ConcordBytes
import Foundation
import Synchronization

/// The domain service: every operation of the API, over one `ConcordStore`, split by area.
/// Synchronous and thread-safe; call it from worker threads, never from an event loop.
///
/// Every area reaches storage through `ServiceArea.read(_:)` / `write(_:)`, which scope the
/// transaction to the caller's account and check the device inside it, so an operation and the
/// device check it depends on see one snapshot (or hold one account lock).
public final class ConcordService: Sendable {
    /// Writes the token last-use notes queued so far (shutdown: before storage closes, so a
    /// token's last use is not lost with the process).
    public func flushPendingWrites() { self.core.lastUse.flush() }

    /// Saves the loaded accounts of the mapping index that changed since their last snapshot, and
    /// records each snapshot's ID in the account's row at the version it reflects: the next start
    /// loads those accounts from their snapshots. At shutdown (once no request runs) every such
    /// account; with `onlyQuiet` (in the background, while serving: a start after a crash then
    /// loads the accounts that had settled) only those whose index has not changed since the
    /// previous such call. Returns how many were saved, and the failures (a failure only costs that
    /// account a load from its tables). None is begun after `deadline`.
    public func saveMappingIndexSnapshots(deadline: Date = .distantFuture, onlyQuiet: Bool = false)
        -> (saved: Int, failures: [(accountID: String, error: any Error)]) {
        guard let index = self.core.index else { return (0, []) }
        var (written, failures) = index.writeSnapshots(newID: { Identifiers.newUUID() }, deadline: deadline, onlyQuiet: onlyQuiet)
        var saved = 0
        for snapshot in written {
            do {
                let recorded = try self.core.write(account: snapshot.accountID, idempotency: nil) { tx in
                    try tx.recordIndexSnapshot(id: snapshot.snapshotID, version: snapshot.version)
                }
                index.snapshotRecorded(snapshot, recorded)
                if recorded { saved += 1 }
            } catch {
                index.snapshotRecorded(snapshot, false)
                failures.append((snapshot.accountID, error))
            }
        }
        return (saved, failures)
    }

    /// Accounts and devices.
    public let accounts: AccountService
    /// A device's library.
    public let library: LibraryService
    /// Uploads in parts of a whole library.
    public let uploads: UploadService
    /// Mapping identifiers both ways, and links.
    public let mapping: MappingService
    /// A device's change history.
    public let history: HistoryService
    /// Journals, entries, selections and the journal feed.
    public let journals: JournalService
    /// Idempotency keys of POST requests.
    public let idempotency: IdempotencyService
    /// Webhooks, their events and deliveries.
    public let webhooks: WebhookService
    let core: ServiceCore

    /// Limits and retention.
    public var configuration: DomainConfiguration { self.core.configuration }

    /// The in-memory mapping index the app wired in (nil when turned off). ConcordMappingIndex's
    /// `mappingIndex` gives it as its concrete type, for its metrics.
    public var mappingCache: (any MappingCache)? { self.core.index }

    /// Opens the service on `store`, creating the change-token secret on first start (it lives in the
    /// database so that tokens survive restarts and several servers sharing one database agree).
    /// Adds a change-token signing key and makes it current (`concord rotate-change-key`);
    /// returns its ID. Tokens signed with earlier keys stay valid.
    public static func rotateChangeKey(store: any ConcordStore) throws(DomainError) -> Int {
        Int(try ServiceCore.run { try ChangeKeys.rotate(store) })
    }

    /// - Parameters:
    ///   - mappingCache: the in-memory mapping index the mapping reads go through (nil: storage
    ///     answers them). ConcordMappingIndex builds it from `configuration`, and adds an
    ///     initializer without this parameter that does.
    ///   - clock: the time of changes and records (tests fix it).
    ///   - newID: identifiers of new accounts, devices, journals and cloud records: UUIDs, upper case
    ///     (tests make them reproducible).
    public init(store: any ConcordStore, configuration: DomainConfiguration = DomainConfiguration(), mappingCache: (any MappingCache)?,
                clock: @escaping @Sendable () -> Date = WallClock.system.now,
                newID: @escaping @Sendable () -> String = { Identifiers.newUUID() },
                webhooks: WebhookEnvironment? = nil) throws(DomainError) {
        let keys = try ServiceCore.run { try ChangeKeys.loadOrCreate(store) }
        let codec = ChangeTokenCodec(keys: keys, reload: { try? store.readServer { tx in try ChangeKeys.load(tx) } })
        let core = ServiceCore(configuration: configuration, store: store, index: mappingCache, tokens: codec, clock: clock, newID: newID,
                               webhooks: webhooks)
        self.core = core
        self.accounts = AccountService(core: core)
        self.library = LibraryService(core: core)
        self.uploads = UploadService(core: core)
        self.mapping = MappingService(core: core)
        self.history = HistoryService(core: core)
        self.journals = JournalService(core: core)
        self.idempotency = IdempotencyService(core: core)
        self.webhooks = WebhookService(core: core)
    }
}

/// What every area of the service shares: the store, limits, the change-token codec and the clock.
public final class ServiceCore: Sendable {
    public let configuration: DomainConfiguration
    let store: any ConcordStore
    let tokens: ChangeTokenCodec
    let clock: @Sendable () -> Date
    let newID: @Sendable () -> String
    /// The in-memory mapping index; nil when there is none (`configuration.mappingIndexBytes` 0).
    let index: (any MappingCache)?
    /// Writes tokens' last use off the request path.
    let lastUse = TokenLastUse()
    /// Destination checks, secret sealing and settings of webhooks; nil: webhooks are not served.
    let webhookEnvironment: WebhookEnvironment?


    init(configuration: DomainConfiguration, store: any ConcordStore, index: (any MappingCache)?, tokens: ChangeTokenCodec,
         clock: @escaping @Sendable () -> Date, newID: @escaping @Sendable () -> String, webhooks: WebhookEnvironment?) {
        self.webhookEnvironment = webhooks
        self.configuration = configuration
        self.store = store
        self.index = index
        self.tokens = tokens
        self.clock = clock
        self.newID = newID
    }

    /// The one way the service writes an account: the store's write transaction of that account.
    /// A `MappingChangeRecorder` observes the transaction's mapping changes (the engine reports
    /// each as it makes it); one that made any bumps the account's mapping version — with the
    /// index off too, for the instances sharing the database that have one — and, with the index
    /// on, after it commits the index applies exactly those changes (never before: storage is the
    /// source of truth). Where the store keeps a mapping log (`MappingLogWrites`: PostgreSQL), the
    /// same transaction stores those changes under the new version, for the other instances'
    /// indexes to catch up with. A write for a request with an idempotency key (`idempotency`) marks
    /// the key applied in the same transaction.
    func write<T>(account accountID: String, idempotency: IdempotencyScope?, _ body: (any AccountWriteTransaction) throws -> T) throws -> T {
        guard let index = self.index else {
            // No index here, but the version still moves on: another instance sharing the database
            // may hold one (or a snapshot), and must see that this write changed the mapping.
            return try self.store.write(account: accountID) { tx in
                let log = tx as? any MappingLogWrites
                let recorder = MappingChangeRecorder(keepsChanges: false, logs: log != nil)
                tx.add(observer: recorder)
                let result = try body(tx)
                try Self.markApplied(tx, idempotency)
                if recorder.changed { try recorder.appendLog(version: try tx.bumpMappingVersion(), to: log) }
                return result
            }
        }
        var expected: [Int64] = []            // versions announced, one per attempt (PostgreSQL retries)
        var last: (version: Int64, mutations: [MappingMutation]?)?
        var committed = false
        defer {
            for version in expected where !(committed && version == last?.version) {
                index.finish(account: accountID, version: version, mutations: nil)
            }
            if committed, let last { index.finish(account: accountID, version: last.version, mutations: last.mutations) }
        }
        let result = try self.store.write(account: accountID) { tx in
            last = nil
            let log = tx as? any MappingLogWrites
            let recorder = MappingChangeRecorder(keepsChanges: index.isLoaded(account: accountID), logs: log != nil)
            tx.add(observer: recorder)
            let result = try body(tx)
            try Self.markApplied(tx, idempotency)
            if recorder.changed {
                let version = try tx.bumpMappingVersion()
                // The other instances' indexes catch up from the log instead of reloading.
                try recorder.appendLog(version: version, to: log)
                index.expect(account: accountID, version: version)
                expected.append(version)
                // Without the changes (the account was not loaded here), applying is a no-op and the
                // next read of a since-loaded index sees it is behind and reloads.
                last = (version, recorder.keepsChanges ? recorder.mutations : nil)
            }
            return result
        }
        committed = true
        return result
    }

    /// `body` on the mapping index's answers for the write path (`WritePathReads`) when they are
    /// exact for `tx`: the index holds the account at the transaction's mapping version, and the
    /// transaction has not changed the mapping yet. Under the account's write lock nothing newer is
    /// committed, so the index then holds exactly what storage would read. Nil otherwise.
    private func fromIndex<T>(_ tx: any AccountWriteTransaction, account accountID: String, _ body: (any WritePathReads) throws -> T?) throws -> T? {
        guard let index = self.index, !tx.changedMapping else { return nil }
        let answer = try index.readIfCurrent(account: accountID, version: try tx.mappingVersion()) { reads in
            try (reads as? any WritePathReads).flatMap(body)
        }
        return answer ?? nil
    }

    /// The objects the mapping's write path reads again (`MappingObjectReads.mappingObjects`): from
    /// the mapping index when it is exact for `tx` (`fromIndex`) and the engine does not prefer its
    /// own lookup — or the index knows where storage keeps each of them (`StoredObject.storageRow`),
    /// which is what that lookup would have found — else from storage.
    func mappingObjects(_ tx: any AccountWriteTransaction, _ device: DeviceRef, localIdentifiers: [String]) throws -> [StoredObject] {
        let withRows = !tx.prefersIndexedMappingObjects
        if let objects = try self.fromIndex(tx, account: device.accountID, { try $0.mappingObjects(device, localIdentifiers: localIdentifiers, withStorageRows: withRows) }) {
            return objects
        }
        return try tx.mappingObjects(device, localIdentifiers: localIdentifiers)
    }

    /// `unlinkedRecords(_:matching:)`, asked of storage only for the contents some record may carry
    /// (the mapping index knows which when it is exact for `tx`): a first mapping of new photos
    /// looks up no records by content.
    func unlinkedRecords(_ tx: any AccountWriteTransaction, _ device: DeviceRef, matching contents: [ContentKey]) throws -> [CloudRecord] {
        let asked = try self.fromIndex(tx, account: device.accountID, { try $0.contentsSomeRecordCarries(contents) }) ?? contents
        return asked.isEmpty ? [] : try tx.unlinkedRecords(device, matching: asked)
    }

    /// The stored objects of these identifiers (`ObjectReads.objects`), asked of storage only for
    /// those the device has when the mapping index is exact for `tx` (`fromIndex`): a change batch
    /// of new photos looks none up.
    func storedObjects(_ tx: any AccountWriteTransaction, _ device: DeviceRef, localIdentifiers: [String]) throws -> [StoredObject] {
        let asked = try self.fromIndex(tx, account: device.accountID, { try $0.identifiersPresent(device, among: localIdentifiers) }) ?? localIdentifiers
        return asked.isEmpty ? [] : try tx.objects(device, localIdentifiers: asked)
    }

    /// Marks the request's idempotency key applied, in the transaction that applies it.
    private static func markApplied(_ tx: any AccountWriteTransaction, _ scope: IdempotencyScope?) throws {
        if let scope { try tx.markIdempotencyApplied(owner: scope.owner, key: scope.key) }
    }

    /// Runs storage work, turning anything that is not already a `DomainError` into `internalError`.
    static func run<T>(_ body: () throws -> T) throws(DomainError) -> T {
        do {
            return try body()
        } catch let error as DomainError {
            throw error
        } catch {
            throw DomainError.internalError(message: String(describing: error))
        }
    }

    /// The oldest change token still valid in a feed whose last change is `lastSeq`: by count, the last
    /// `historyMaxChanges` are kept; by age, changes older than `historyMaxAge` count as dropped even
    /// before a write prunes them, so expiry does not depend on write traffic. `latestBefore` answers
    /// the highest seq created at or before a time (the feed's own query). One rule for a device's
    /// library history and the account's journal feed.
    func retentionBoundary(lastSeq: Int64, prunedThrough: Int64, now: Date, latestBefore: (Double) throws -> Int64?) throws -> Int64 {
        var boundary = max(prunedThrough, lastSeq - Int64(self.configuration.historyMaxChanges))
        if let old = try latestBefore(now.timeIntervalSince1970 - self.configuration.historyMaxAge) {
            boundary = max(boundary, old)
        }
        return boundary
    }
}

/// One area of the service (library, mapping, history, journals, accounts) over the shared core.
protocol ServiceArea: Sendable {
    var core: ServiceCore { get }
}

extension ServiceArea {
    var configuration: DomainConfiguration { self.core.configuration }
    var store: any ConcordStore { self.core.store }
    var tokens: ChangeTokenCodec { self.core.tokens }
    var now: Date { self.core.clock() }

    func run<T>(_ body: () throws -> T) throws(DomainError) -> T { try ServiceCore.run(body) }

    /// A read transaction of the device's account, the device checked in it (`notFound` when it was
    /// deleted meanwhile).
    func read<T>(_ device: DeviceRef, _ body: (any AccountReadTransaction, DeviceState) throws -> T) throws(DomainError) -> T {
        try self.run { try self.store.read(account: device.accountID) { tx in try body(tx, try Self.requireDevice(tx, device)) } }
    }

    /// The device's account's write transaction (serialised with the account's other writers), the
    /// device checked in it; `idempotency`, the request's key, is marked applied in it.
    func write<T>(_ device: DeviceRef, idempotency: IdempotencyScope?, _ body: (any AccountWriteTransaction, DeviceState) throws -> T) throws(DomainError) -> T {
        try self.run { try self.core.write(account: device.accountID, idempotency: idempotency) { tx in try body(tx, try Self.requireDevice(tx, device)) } }
    }

    /// Like `read`, and the library must not be denied (`accessUserDenied`, for mappings and journals).
    func readAllowed<T>(_ device: DeviceRef, _ body: (any AccountReadTransaction, DeviceState) throws -> T) throws(DomainError) -> T {
        try self.read(device) { tx, state in
            guard state.authorization != .denied else { throw DomainError.accessUserDenied }
            return try body(tx, state)
        }
    }

    /// Like `write`, and the library must not be denied.
    func writeAllowed<T>(_ device: DeviceRef, idempotency: IdempotencyScope?, _ body: (any AccountWriteTransaction, DeviceState) throws -> T) throws(DomainError) -> T {
        try self.write(device, idempotency: idempotency) { tx, state in
            guard state.authorization != .denied else { throw DomainError.accessUserDenied }
            return try body(tx, state)
        }
    }

    /// A read for the mapping rules: the device checked and not denied, then `body` with the storage
    /// snapshot and the mapping reads — the in-memory index at (at least) the snapshot's mapping
    /// version when the index is on and the account fits its budget, else the snapshot itself.
    func mappingRead<T>(_ device: DeviceRef, _ body: (any AccountReadTransaction, any MappingReads, DeviceState) throws -> T) throws(DomainError) -> T {
        try self.readAllowed(device) { tx, state in
            guard let index = self.core.index else { return try body(tx, tx, state) }
            let version = try tx.mappingVersion()
            let answer = try index.read(tx, version: version) { reads in try body(tx, reads, state) }
            if let answer { return answer }
            return try body(tx, tx, state)
        }
    }

    /// `mappingRead` for a body that needs no more of storage than the mapping reads, the device and
    /// the mapping version it read at. With `checked` (the device and mapping version read with the
    /// request's token, `DeviceCheck`) and the index current at that version, no storage read at all.
    func mappingLookup<T>(_ device: DeviceRef, checked: DeviceCheck?,
                          _ body: (any MappingReads, DeviceState, _ version: () throws -> Int64) throws -> T) throws(DomainError) -> T {
        if let checked, checked.device.ref == device, let index = self.core.index {
            let state = checked.device
            guard state.replacedBy == nil else { throw DomainError.unauthorized }
            guard state.authorization != .denied else { throw DomainError.accessUserDenied }
            let answer = try self.run { try index.readIfCurrent(account: device.accountID, version: checked.mappingVersion) { reads in
                try body(reads, state, { checked.mappingVersion })
            } }
            if let answer { return answer }
        }
        return try self.mappingRead(device) { tx, reads, state in try body(reads, state, { try tx.mappingVersion() }) }
    }

    /// The device row, or `notFound` (a token whose device was deleted meanwhile). A device that has
    /// a successor answers nothing more to its own token (`401`): a request authenticated just
    /// before the successor's commit, or a poll held across it, ends there.
    static func requireDevice(_ tx: any AccountReadTransaction, _ ref: DeviceRef) throws -> DeviceState {
        guard let d = try tx.device(ref) else { throw DomainError.notFound(message: "No such device.") }
        guard d.replacedBy == nil else { throw DomainError.unauthorized }
        return d
    }

    static func validateName(_ s: String, field: String) throws(DomainError) {
        guard !s.isEmpty, s.utf8.count <= 1024 else {
            throw DomainError.badRequest(message: "\(field) must be 1 to 1024 bytes.", field: field)
        }
        try Self.refuseNUL(s, field: field)
    }

    /// Stored text holds no U+0000: PostgreSQL cannot store it, and both engines must answer alike.
    static func refuseNUL(_ s: String, field: String) throws(DomainError) {
        if s.utf8.contains(0) { throw DomainError.badRequest(message: "\(field) contains U+0000, which cannot be stored.", field: field) }
    }
}

extension String {
    /// Byte-order comparison of UTF-8 (what the contract means by "sorted by byte order").
    @inline(__always)
    package func utf8Precedes(_ other: String) -> Bool { self.utf8.lexicographicallyPrecedes(other.utf8) }
}

extension Array where Element == StoredObject {
    /// These objects in byte order of their local identifiers (as storage lists them): sorted by
    /// each identifier's first 8 bytes as one number, equal prefixes compared whole (`ByteOrder`).
    package func inLocalIdentifierOrder() -> [StoredObject] {
        ByteOrder.positions(of: self.map(\.object.localIdentifier)).map { self[$0] }
    }
}

/// Notes a token's last use in the background: the request that used it never waits
/// for the database's writer (a long manifest may hold it), and one write per token is in
/// flight at most. Best effort: a failed note is tried again at the token's next use.
final class TokenLastUse: Sendable {
    private let pending = Mutex<Set<[UInt8]>>([])
    private let queue = DispatchQueue(label: "concord.token-last-use", qos: .utility)

    func note(_ tokenHash: [UInt8], at time: Double, store: any ConcordStore) {
        guard self.pending.withLock({ $0.insert(tokenHash).inserted }) else { return }
        self.queue.async {
            _ = try? store.writeServer { tx in try tx.touchToken(tokenHash: tokenHash, at: time) }
            self.pending.withLock { _ = $0.remove(tokenHash) }
        }
    }

    /// Waits for the notes queued so far (tests, shutdown).
    func flush() { self.queue.sync {} }
}
