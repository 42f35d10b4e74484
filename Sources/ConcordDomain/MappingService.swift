import ConcordBytes
import Foundation

/// Local → cloud answers of a batch: per identifier its cloud identifier's bytes, or not found
/// (`.missing`, or `.unlinked` when step 3 could not assign it).
public struct CloudIdentifierAnswers: Sendable {
    public var answers: LinkLookups
    /// The item error of an identifier not found (its `limitedLibrary` is the device's).
    public let notFound: ItemError

    public init(answers: LinkLookups, notFound: ItemError) {
        self.answers = answers
        self.notFound = notFound
    }
}

/// Cloud → local answers of a batch: per identifier the local identifier found (its bytes), or the
/// number of its error in `errors`. Numbers, not errors, per item: nothing to release per item,
/// and a writer renders each error once.
public struct LocalIdentifierAnswers: Sendable {
    public var answers: AnswerBuffer<Int>
    /// The errors the answers name by number (one may be named by no answer).
    public private(set) var errors: [ItemError]

    public init(answers: AnswerBuffer<Int>, errors: [ItemError]) {
        self.answers = answers
        self.errors = errors
    }

    public init() { self.init(answers: AnswerBuffer(), errors: []) }

    /// The reader's quick answers as they are, their numbers made errors: a miss's number is the
    /// position of its error here. Undecided items are step 1's until the caller sets them.
    init(_ quick: QuickLocalIdentifiers, notFound: ItemError) {
        var errors = [ItemError](repeating: .invalidIdentifier, count: QuickLocalIdentifiers.firstMultiple)
        errors[QuickLocalIdentifiers.notFound] = notFound
        errors.reserveCapacity(errors.count + quick.candidates.count)
        for candidates in quick.candidates { errors.append(.multipleIdentifiersFound(localIdentifiers: candidates)) }
        self.init(answers: quick.answers, errors: errors)
    }

    /// Appends an answer of these bytes (a local identifier found).
    public mutating func append<C: Collection>(bytes: C) where C.Element == UInt8 { self.answers.append(bytes: bytes) }

    /// Appends an error answer.
    public mutating func append(_ error: ItemError) { self.answers.append(self.number(error)) }

    /// Answer `i` becomes these bytes.
    public mutating func set<C: Collection>(_ i: Int, bytes: C) where C.Element == UInt8 { self.answers.set(i, bytes: bytes) }

    /// Answer `i` becomes `error`.
    public mutating func set(_ i: Int, _ error: ItemError) { self.answers.set(i, self.number(error)) }

    /// `error`'s number: the last error's when it is the same (a batch's errors come mostly
    /// repeated), otherwise a new one.
    private mutating func number(_ error: ItemError) -> Int {
        if let last = self.errors.last, last == error { return self.errors.count - 1 }
        self.errors.append(error)
        return self.errors.count - 1
    }
}

/// Mapping identifiers both ways, and links chosen by the person.
public struct MappingService: ServiceArea {
    let core: ServiceCore

    /// `POST /v1/library/cloud-identifiers`: local → cloud, one answer per item in request order,
    /// for identifiers given as one buffer of bytes (the request's), with the found cloud identifiers
    /// as bytes of one buffer rather than a string each (what the route writes into its answer).
    ///
    /// Common path (everything already linked) is one read transaction, no write lock. Objects not yet
    /// linked go through step 3 inside ONE write transaction, which re-reads them and reads the unlinked
    /// records before creating any: two devices racing for the same new content converge on one record.
    /// `checked`: the device and mapping version read with the request's token, if any (`DeviceCheck`).
    public func cloudIdentifierAnswers(forLocalIdentifiers ids: IdentifierBatch, device: DeviceRef,
                                       checked: DeviceCheck? = nil) throws(DomainError) -> CloudIdentifierAnswers {
        guard ids.count <= self.configuration.maxBatch else { throw DomainError.batchTooLarge(maxBatch: self.configuration.maxBatch) }
        if ids.firstInvalidLocalIdentifier() != nil {
            throw DomainError.badRequest(message: "A local identifier must be 1 to 255 bytes of UTF-8 without control characters.", field: "localIdentifiers")
        }
        // Duplicates go to storage as they are: cheaper than deduplicating a batch that rarely has any.
        var lookups = LinkLookups()
        let limited = try self.mappingLookup(device, checked: checked) { reads, state, _ in
            lookups = try reads.linkLookups(device, localIdentifiers: ids)
            return state.authorization == .limited
        }
        var result = CloudIdentifierAnswers(answers: lookups, notFound: .identifierNotFound(limitedLibrary: limited))
        var pending: [String] = []
        var pendingSeen = Set<ByteKey>(minimumCapacity: ids.count)   // identifiers are byte strings
        for (i, s) in result.answers.enumerated() where s == .other(.unlinked) {
            let id = ids[i]
            if pendingSeen.insert(ByteKey(id)).inserted { pending.append(id) }   // in request order: "oldest record first" follows it
        }
        guard !pending.isEmpty else { return result }
        let assigned = try self.run { try self.core.write(account: device.accountID, idempotency: nil) { tx in try Self.assignRecords(tx, device: device, localIdentifiers: pending, core: self.core) } }
        // Step 3: assigned just now (an object deleted before step 3 ran stays not found).
        for i in result.answers.indices where result.answers[i] == .other(.unlinked) {
            guard let record = assigned[ByteKey(ids[i])] else { continue }
            result.answers.set(i, bytes: record.cloudIdentifier.utf8)
        }
        return result
    }

    /// Stores links found by cloud → local,
    /// re-checked under the write lock: the object must still be unlinked and the record unlinked
    /// on this device, and the object must still match it — by a key the record carries, or by the
    /// record's own (non-empty) fingerprint.
    ///
    /// `resolvedAt`: the mapping version the links were found at. When the account is still at it,
    /// nothing of its mapping changed since (every such write moves the version on), so what was
    /// found then still holds — the record unlinked here, matching the object by key or content —
    /// and only the objects are read again (for the keys their records take).
    static func storeFoundLinks(_ tx: any AccountWriteTransaction, device: DeviceRef, _ toLink: [(localIdentifier: String, record: CloudRecord)],
                                resolvedAt: Int64? = nil, core: ServiceCore) throws {
        // Sized for the batch up front: growing rehashes every key.
        var byID = [ByteKey: StoredObject](minimumCapacity: toLink.count)
        for o in try core.mappingObjects(tx, device, localIdentifiers: toLink.map(\.localIdentifier)) { byID[ByteKey(o.object.localIdentifier)] = o }
        if let resolvedAt, try tx.mappingVersion() == resolvedAt {
            var linkedObjects = Set<ByteKey>(minimumCapacity: toLink.count), linkedRecords = Set<String>(minimumCapacity: toLink.count)
            var links: [(object: LibraryObject, record: CloudRecord)] = []
            var rows: [Int64?] = []
            links.reserveCapacity(toLink.count)
            rows.reserveCapacity(toLink.count)
            for (id, record) in toLink {
                guard let o = byID[ByteKey(id)], o.link == nil, o.object.type == record.type,
                      !linkedObjects.contains(ByteKey(id)), !linkedRecords.contains(record.guid) else { continue }
                linkedObjects.insert(ByteKey(id))
                linkedRecords.insert(record.guid)
                links.append((o.object, record))
                rows.append(o.storageRow)
            }
            try Self.storeLinks(tx, device: device, links, rows: rows)
            return
        }
        let taken = Set(try tx.linkedObjects(device, guids: toLink.map(\.record.guid)).map(\.guid))
        let current = Dictionary(try tx.records(guids: toLink.map(\.record.guid)).map { ($0.guid, $0) }) { a, _ in a }
        let keys = try tx.recordKeys(guids: toLink.map(\.record.guid))
        var linkedObjects = Set<ByteKey>()
        var linkedRecords = Set<String>()
        var links: [(object: LibraryObject, record: CloudRecord)] = []
        var rows: [Int64?] = []
        for (id, found) in toLink {
            guard let o = byID[ByteKey(id)], o.link == nil, let record = current[found.guid], o.object.type == record.type,
                  !taken.contains(record.guid), !linkedObjects.contains(ByteKey(id)), !linkedRecords.contains(record.guid) else { continue }
            let byKey = o.object.key.map { (keys[record.guid] ?? []).contains($0) } ?? false
            let byContent = !record.fingerprint.isEmpty && o.object.fingerprint == record.fingerprint
            guard byKey || byContent else { continue }
            linkedObjects.insert(ByteKey(id))
            linkedRecords.insert(record.guid)
            links.append((o.object, record))
            rows.append(o.storageRow)
        }
        try Self.storeLinks(tx, device: device, links, rows: rows)
    }

    /// Stores links (each object and record free of other links on this device) and what a link
    /// gives its record: the object's key, and its fingerprint when the record has none. `rows`:
    /// each object's `StoredObject.storageRow`, when the objects were read as stored objects.
    static func storeLinks(_ tx: any AccountWriteTransaction, device: DeviceRef, _ links: [(object: LibraryObject, record: CloudRecord)],
                           rows: [Int64?]? = nil) throws {
        guard !links.isEmpty else { return }
        let pairs = links.map { ($0.object.localIdentifier, $0.record.guid) }
        if let rows { try tx.setLinks(device, pairs, rows: rows) } else { try tx.setLinks(device, pairs) }
        try Self.recordsTake(tx, links)
    }

    /// What records linked to these objects take from them: their keys, and fingerprints for records without one.
    static func recordsTake(_ tx: any AccountWriteTransaction, _ links: [(object: LibraryObject, record: CloudRecord)]) throws {
        let keys = links.compactMap { l in l.object.key.map { (l.record.guid, $0) } }
        if !keys.isEmpty { try tx.addRecordKeys(keys) }
        let fills = links.compactMap { l in l.record.fingerprint.isEmpty && l.object.hasFingerprint ? (l.record.guid, l.object.fingerprint) : nil }
        if !fills.isEmpty { try tx.fillRecordFingerprints(fills) }
    }

    /// Step 3 for a batch, inside the write transaction: link each unlinked object to (a) the
    /// oldest record of its type carrying its key with no link on this device, else (b) the oldest
    /// record of its type and fingerprint with no link on this device that carries no key an object
    /// of this device carries, else (c) a new record. Keyed by the identifiers' bytes.
    static func assignRecords(_ tx: any AccountWriteTransaction, device: DeviceRef, localIdentifiers: [String], core: ServiceCore) throws -> [ByteKey: CloudRecord] {
        // Sized for the batch up front: growing rehashes every key.
        var result = [ByteKey: CloudRecord](minimumCapacity: localIdentifiers.count)
        // Objects stay in the array storage gave; the rest holds their positions (a copy of each
        // object's strings per step was a tenth of this function's CPU).
        let stored = try core.mappingObjects(tx, device, localIdentifiers: localIdentifiers)
        var byID = [ByteKey: Int](minimumCapacity: stored.count)
        for (i, s) in stored.enumerated() { byID[ByteKey(s.object.localIdentifier)] = i }
        var unlinkedAt: [Int] = []   // each object once, in the batch's order
        unlinkedAt.reserveCapacity(stored.count)
        var pending = [Bool](repeating: false, count: stored.count)
        for id in localIdentifiers {
            let key = ByteKey(id)
            guard let i = byID[key] else { continue }   // deleted meanwhile: step 1
            if let r = stored[i].link { result[key] = r; continue }   // linked meanwhile: step 2
            if !pending[i] { pending[i] = true; unlinkedAt.append(i) }
        }
        guard !unlinkedAt.isEmpty else { return result }
        let unlinked = unlinkedAt.lazy.map { stored[$0].object }
        // (a) by key.
        let objectKeys = Array(Set(unlinked.compactMap(\.key)))
        var keyQueues = RecordQueues<ObjectKey>()
        if !objectKeys.isEmpty {
            for (r, key) in try tx.unlinkedRecords(device, carrying: objectKeys) where r.type == key.type { keyQueues.append(r, to: key) }
        }
        // (b) by content, records that are another object's by key excluded.
        let contents = Array(Set(unlinked.filter(\.hasFingerprint).map { ContentKey(type: $0.type, fingerprint: $0.fingerprint) }))
        var contentQueues = RecordQueues<ContentKey>()
        if !contents.isEmpty {
            let candidates = try core.unlinkedRecords(tx, device, matching: contents)
            let keyed = candidates.isEmpty ? [] : try tx.recordsCarryingKeys(of: device, guids: candidates.map(\.guid))
            for r in candidates where !keyed.contains(r.guid) { contentQueues.append(r, to: ContentKey(type: r.type, fingerprint: r.fingerprint)) }
        }
        var taken = Set<String>()   // a record found both by key and by content is taken once
        var created: [CloudRecord] = []
        created.reserveCapacity(unlinked.count)
        var links: [(object: LibraryObject, record: CloudRecord)] = []
        var rows: [Int64?] = []
        links.reserveCapacity(unlinked.count)
        rows.reserveCapacity(unlinked.count)
        for i in unlinkedAt {
            let o = stored[i].object
            var record = o.key.flatMap { keyQueues.next($0, skipping: &taken) }
            if record == nil, o.hasFingerprint { record = contentQueues.next(ContentKey(type: o.type, fingerprint: o.fingerprint), skipping: &taken) }
            if record == nil {
                let new = CloudRecord(guid: core.newID(), type: o.type, fingerprint: o.fingerprint)
                created.append(new)
                record = new
            }
            var linked = record!
            // A record without a fingerprint takes this object's: its identifier is spelled with it.
            if linked.fingerprint.isEmpty && o.hasFingerprint { linked.fingerprint = o.fingerprint }
            result[ByteKey(o.localIdentifier)] = linked
            links.append((o, record!))
            rows.append(stored[i].storageRow)
        }
        if !created.isEmpty {
            let quota = core.configuration.quotas.recordsPerAccount
            if try tx.recordCount() + created.count > quota { throw DomainError.quotaExceeded(quota: "recordsPerAccount", limit: quota) }
            try tx.insertRecords(created, createdAt: core.clock())
        }
        try Self.storeLinks(tx, device: device, links, rows: rows)
        return result
    }

    /// `POST /v1/library/local-identifiers`: cloud → local, one answer per identifier in request
    /// order, for identifiers given as one buffer of bytes, with the found local identifiers as
    /// bytes of one buffer (what the route copies into its answer).
    /// `contentMatch` false: no step 4 (PhotoKit's `localIdentifierMappings(forSynced:)`).
    ///
    /// One read transaction: the answers the reader can decide straight from the batch's bytes
    /// (`quickLocalIdentifiers`, the mapping index), then steps 1–4 in full for the items it left.
    public func localIdentifierAnswers(forCloudIdentifiers batch: IdentifierBatch, device: DeviceRef,
                                       contentMatch: Bool = true, checked: DeviceCheck? = nil) throws(DomainError) -> LocalIdentifierAnswers {
        guard batch.count <= self.configuration.maxBatch else { throw DomainError.batchTooLarge(maxBatch: self.configuration.maxBatch) }
        var quick = QuickLocalIdentifiers()
        var rest: [(item: Int, identifier: CloudIdentifier?)] = []   // nil: step 1, invalidIdentifier
        var resolved = Resolution()
        var resolvedAt: Int64?
        let limited = try self.mappingLookup(device, checked: checked) { reads, state, mappingVersion in
            let limited = state.authorization == .limited
            quick = try reads.quickLocalIdentifiers(device, cloudIdentifiers: batch, contentMatch: contentMatch)
                ?? QuickLocalIdentifiers(undecided: batch.count)
            quick.answers.withAnswers { answers in   // a plain buffer: no copy of each item's answer
                for i in answers.indices {
                    guard case .other(QuickLocalIdentifiers.undecided) = answers[i] else { continue }
                    rest.append((i, batch.withIdentifier(i) { CloudIdentifier(parsing: $0) }))
                }
            }
            resolved = try Self.resolve(reads, device: device, identifiers: rest.compactMap(\.identifier), limited: limited, contentMatch: contentMatch)
            if !resolved.links.isEmpty { resolvedAt = try mappingVersion() }
            return limited
        }
        if !resolved.links.isEmpty {
            // Store the links found by content so the next lookup takes step 2, checked again under the
            // write lock (in full unless nothing of the mapping changed since this read: `resolvedAt`).
            let toLink = resolved.links
            try self.run { try self.core.write(account: device.accountID, idempotency: nil) { tx in try Self.storeFoundLinks(tx, device: device, toLink, resolvedAt: resolvedAt, core: self.core) } }
        }
        var result = LocalIdentifierAnswers(quick, notFound: .identifierNotFound(limitedLibrary: limited))
        // Local copies: the closure above captures these, and reading a captured variable inside a
        // loop would retain its array once per item.
        let resolvedAnswers = resolved.answers, remaining = rest
        var answerIndex = 0
        for (item, identifier) in remaining {
            guard identifier != nil else { continue }   // stays invalidIdentifier
            switch resolvedAnswers[answerIndex] {
            case .found(let local)?: result.set(item, bytes: local.utf8)
            case .error(let error)?: result.set(item, error)
            case nil: result.answers.set(item, QuickLocalIdentifiers.notFound)
            }
            answerIndex += 1
        }
        return result
    }

    /// What `resolve` found: one answer per identifier (nil: identifierNotFound) and the links to store.
    struct Resolution {
        var answers: [MappingResult?] = []
        var links: [(localIdentifier: String, record: CloudRecord)] = []
    }

    /// Steps 2–4 for a batch in one read transaction: records by GUID (this account only), their
    /// links on this device and the objects carrying their keys, then objects by content for the
    /// rest (unless `contentMatch` is false). Answers are in the order of `identifiers`.
    static func resolve(_ tx: any MappingReads, device: DeviceRef, identifiers: [CloudIdentifier], limited: Bool,
                        contentMatch: Bool = true) throws -> Resolution {
        var result = Resolution()
        result.answers = [MappingResult?](repeating: nil, count: identifiers.count)
        guard !identifiers.isEmpty else { return result }
        // Steps 2 and 3 in one read: the account's records by GUID with their link on this device and
        // the device's objects carrying their keys (a GUID of another account is not found here).
        let found = try tx.recordLookups(device, identifiers: identifiers)
        var byContent: [(item: Int, content: ContentKey)] = []
        for (i, c) in identifiers.enumerated() {
            if let local = found[i].linkedLocalIdentifier { result.answers[i] = .found(local); continue }   // step 2
            let matches = found[i].keyMatches
            if matches.count == 1 {   // step 3: by key
                let o = matches[0]
                result.answers[i] = .found(o.object.localIdentifier)
                if o.link == nil, let r = found[i].record { result.links.append((o.object.localIdentifier, r)) }
                continue
            }
            if matches.count > 1 {
                result.answers[i] = .error(.multipleIdentifiersFound(localIdentifiers: matches.map(\.object.localIdentifier)))
                continue
            }
            // Step 4: no content match when the request asks for none. An empty fingerprint part
            // stands for the record's own fingerprint (both spellings name the record); with none
            // there either, or no record, there is no content to match.
            guard contentMatch else { continue }
            let content = Self.contentToMatch(c, record: found[i].record)
            if content.isEmpty { continue }
            byContent.append((i, ContentKey(type: c.type, fingerprint: content)))
        }
        guard !byContent.isEmpty else { return result }
        let keys = Array(Set(byContent.map(\.content)))
        var candidates: [ContentKey: [StoredObject]] = [:]
        for s in try tx.objects(device, matching: keys) { candidates[ContentKey(type: s.object.type, fingerprint: s.object.fingerprint), default: []].append(s) }
        for (i, content) in byContent {
            let matches = candidates[content] ?? []
            if matches.count == 1 {
                let o = matches[0]
                result.answers[i] = .found(o.object.localIdentifier)
                // Link only when the record exists with exactly this content and the object is free.
                if let r = found[i].record, r.fingerprint == content.fingerprint, o.link == nil {
                    result.links.append((o.object.localIdentifier, r))
                }
            } else if matches.count > 1 {
                let sorted = matches.map(\.object.localIdentifier).sorted { $0.utf8Precedes($1) }
                result.answers[i] = .error(.multipleIdentifiersFound(localIdentifiers: sorted))
            }
        }
        return result
    }

    /// The fingerprint cloud → local matches by content (step 4) for `identifier`: its own
    /// fingerprint part, or, when that is empty, the fingerprint of its record (nil: the account has
    /// no such record). Empty: nothing to match, the identifier is not found by content.
    static func contentToMatch(_ identifier: CloudIdentifier, record: CloudRecord?) -> String {
        identifier.fingerprint.isEmpty ? record?.fingerprint ?? "" : identifier.fingerprint
    }

    /// `POST /v1/library/links`: the person chose which object a cloud identifier means on this device.
    /// The new link replaces the record's earlier link on this device and the object's earlier link.
    public func link(cloudIdentifier: String, localIdentifier: String, device: DeviceRef, idempotency: IdempotencyScope? = nil) throws(DomainError) {
        guard let c = CloudIdentifier(parsing: cloudIdentifier) else {
            throw DomainError.badRequest(message: "cloudIdentifier is not a well-formed cloud identifier.", field: "cloudIdentifier")
        }
        guard Identifiers.isValidLocalIdentifier(localIdentifier) else {
            throw DomainError.badRequest(message: "A local identifier must be 1 to 255 bytes of UTF-8 without control characters.", field: "localIdentifier")
        }
        try self.writeAllowed(device, idempotency: idempotency) { tx, state in
            guard let record = try tx.records(guids: [c.guid]).first, record.type == c.type else {
                throw DomainError.notFound(message: "No such cloud record.")
            }
            guard let object = try tx.objects(device, localIdentifiers: [localIdentifier]).first else {
                throw DomainError.notFound(message: "No object with this local identifier.")
            }
            // The fingerprints must agree only when both have one.
            guard object.object.type == record.type,
                  record.fingerprint.isEmpty || !object.object.hasFingerprint || object.object.fingerprint == record.fingerprint else {
                throw DomainError.fingerprintMismatch(message: "The object does not have the record's type and fingerprint.")
            }
            if object.link?.guid == record.guid {
                try Self.recordsTake(tx, [(object.object, record)])
                return
            }
            try tx.dropLinks(device, guids: [record.guid])
            try Self.storeLinks(tx, device: device, [(object.object, record)])
        }
    }

    // MARK: - Adopting a predecessor's links

    /// `POST /v1/library/adopt`: the links the device's predecessor had, carried over onto the
    /// objects this device has uploaded so far, in one write transaction. For each record linked to
    /// a predecessor object P and not linked here, oldest first, the candidates are this device's
    /// unlinked objects of the record's type in the first tier that has any: (1) P's local
    /// identifier, unless both have fingerprints and they differ; (2) those carrying a key the
    /// record carries; (3) those with P's fingerprint. One → linked; several → `ambiguous`; none →
    /// `unmatched`. Repeatable as the device uploads more.
    public func adopt(device: DeviceRef, idempotency: IdempotencyScope? = nil) throws(DomainError) -> AdoptionResult {
        try self.writeAllowed(device, idempotency: idempotency) { tx, state in
            guard let predecessorID = state.replaces else { throw DomainError.noPredecessor }
            let predecessor = DeviceRef(accountID: device.accountID, deviceID: predecessorID)
            var theirs: [String: LibraryObject] = [:]   // record GUID → the predecessor's object linked to it
            for o in try tx.allObjects(predecessor) { if let r = o.link { theirs[r.guid] = o.object } }
            guard !theirs.isEmpty else { return AdoptionResult(adopted: 0, alreadyLinked: 0, unmatched: 0, ambiguous: []) }
            var linkedHere = Set<String>()
            var free: [ByteKey: LibraryObject] = [:]
            var byKey: [ObjectKey: [LibraryObject]] = [:]
            var byContent: [ContentKey: [LibraryObject]] = [:]
            for o in try tx.allObjects(device) {
                if let r = o.link { linkedHere.insert(r.guid); continue }
                free[ByteKey(o.object.localIdentifier)] = o.object
                if let key = o.object.key { byKey[key, default: []].append(o.object) }
                if o.object.hasFingerprint { byContent[ContentKey(type: o.object.type, fingerprint: o.object.fingerprint), default: []].append(o.object) }
            }
            let records = try tx.records(guids: Array(theirs.keys))   // oldest first
            let keys = try tx.recordKeys(guids: records.map(\.guid))
            var taken = Set<ByteKey>()
            var result = AdoptionResult(adopted: 0, alreadyLinked: 0, unmatched: 0, ambiguous: [])
            var links: [(object: LibraryObject, record: CloudRecord)] = []
            for record in records {
                guard let p = theirs[record.guid] else { continue }
                if linkedHere.contains(record.guid) { result.alreadyLinked += 1; continue }
                func candidates(_ objects: [LibraryObject]) -> [LibraryObject] {
                    var seen = Set<ByteKey>()
                    return objects.filter { $0.type == record.type && !taken.contains(ByteKey($0.localIdentifier)) && seen.insert(ByteKey($0.localIdentifier)).inserted }
                }
                var tier: [LibraryObject] = []
                if let same = free[ByteKey(p.localIdentifier)], !(same.hasFingerprint && p.hasFingerprint && same.fingerprint != p.fingerprint) {
                    tier = candidates([same])   // (1) a device transfer keeps Photos' identifiers
                }
                if tier.isEmpty { tier = candidates((keys[record.guid] ?? []).flatMap { byKey[$0] ?? [] }) }   // (2)
                if tier.isEmpty, p.hasFingerprint { tier = candidates(byContent[ContentKey(type: record.type, fingerprint: p.fingerprint)] ?? []) }   // (3)
                switch tier.count {
                case 0: result.unmatched += 1
                case 1:
                    taken.insert(ByteKey(tier[0].localIdentifier))
                    links.append((tier[0], record))
                    result.adopted += 1
                default:
                    result.ambiguous.append((record.cloudIdentifier, tier.map(\.localIdentifier).sorted { $0.utf8Precedes($1) }))
                }
            }
            try Self.storeLinks(tx, device: device, links)
            result.ambiguous.sort { $0.cloudIdentifier.utf8Precedes($1.cloudIdentifier) }
            return result
        }
    }

    // MARK: - Fingerprints on demand

    /// `GET /v1/library/wanted`: the device's objects worth hashing, in byte order after `after`.
    public func wanted(device: DeviceRef, after: String?, limit: Int) throws(DomainError) -> WantedPage {
        guard (1...10_000).contains(limit) else { throw DomainError.badRequest(message: "limit must be 1 to 10000.", field: "limit") }
        return try self.mappingRead(device) { _, reads, _ in try reads.wantedPage(device, after: after, limit: limit) }
    }

    /// `GET /v1/library/status`: counts over the device's library.
    public func status(device: DeviceRef) throws(DomainError) -> LibraryStatus {
        try self.mappingRead(device) { _, reads, _ in try reads.libraryStatus(device) }
    }
}

/// The wanted rule, shared by both engines' storage answers and the index. An object is wanted
/// when it has no fingerprint and either
/// - it has no link, and a candidate record could match it by content: given, per type, the
///   candidate records' linked objects' creation seconds (and whether some candidate has no dated
///   linked object), `wants` says whether an unlinked, fingerprint-less object of that type is; or
/// - it has no key and is linked to a bare record (no fingerprint, no key): only its content can
///   ever match that record on another device, and an object without a PhotoKit key has its
///   original on the device, so hashing it downloads nothing. `WantedCandidates.wantedForItsLink` says it.
public struct WantedCandidates: Sendable {
    /// Types with at least one candidate record.
    public var types = Set<ObjectType>()
    /// Types with a candidate none of whose linked objects has a creation date (matches any object).
    public var undated = Set<ObjectType>()
    /// Per type, the creation seconds of the candidates' linked objects.
    public var seconds: [ObjectType: Set<Int64>] = [:]
    public init() {}

    /// Adds a candidate record of `type` whose linked objects have these creation seconds (nil: none).
    public mutating func add(type: ObjectType, linkedSeconds: [Int64?]) {
        self.types.insert(type)
        let dated = linkedSeconds.compactMap { $0 }
        if dated.isEmpty { self.undated.insert(type) } else { self.seconds[type, default: []].formUnion(dated) }
    }

    /// Whether an object of `type` with `creationSecond` (nil: no date) is wanted.
    public func wants(type: ObjectType, creationSecond: Int64?) -> Bool {
        guard self.types.contains(type) else { return false }
        guard let second = creationSecond, !self.undated.contains(type) else { return true }
        return self.seconds[type]?.contains(second) ?? false
    }
}

extension WantedCandidates {
    /// Whether a fingerprint-less object is wanted for its link: it has no key, and its record has
    /// neither fingerprint nor key.
    @inlinable public static func wantedForItsLink(objectHasKey: Bool, recordHasFingerprint: Bool, recordHasKey: Bool) -> Bool {
        !objectHasKey && !recordHasFingerprint && !recordHasKey
    }

    /// A page of the wanted objects: those among `unlinked` (a device's unlinked, fingerprint-less
    /// objects, in any order) the candidates want, and every one of `linkedToBareRecords` (its
    /// keyless, fingerprint-less objects linked to a bare record); those after `after` in byte
    /// order, at most `limit`, and the count of all.
    public func page(_ unlinked: [(localIdentifier: String, type: ObjectType, creationSecond: Int64?)],
                     linkedToBareRecords: [(localIdentifier: String, type: ObjectType)] = [], after: String?, limit: Int) -> WantedPage {
        var total = 0
        var chosen: [WantedObject] = []
        func take(_ localIdentifier: String, _ type: ObjectType) {
            total += 1
            if let after, !after.utf8Precedes(localIdentifier) { return }
            chosen.append(WantedObject(localIdentifier: localIdentifier, type: type))
        }
        for o in unlinked where self.wants(type: o.type, creationSecond: o.creationSecond) { take(o.localIdentifier, o.type) }
        for o in linkedToBareRecords { take(o.localIdentifier, o.type) }
        chosen.sort { $0.localIdentifier.utf8Precedes($1.localIdentifier) }
        let more = chosen.count > limit
        if more { chosen.removeLast(chosen.count - limit) }
        return WantedPage(objects: chosen, next: more ? chosen.last?.localIdentifier : nil, total: total)
    }
}

/// Records waiting per key, oldest first, taken from the front without moving the rest.
struct RecordQueues<Key: Hashable> {
    private var queues: [Key: [CloudRecord]] = [:]
    private var heads: [Key: Int] = [:]

    mutating func append(_ record: CloudRecord, to key: Key) { self.queues[key, default: []].append(record) }

    /// The oldest record of `key` not in `taken` (which it joins), nil when none is left.
    mutating func next(_ key: Key, skipping taken: inout Set<String>) -> CloudRecord? {
        guard let queue = self.queues[key] else { return nil }
        var head = self.heads[key, default: 0]
        defer { self.heads[key] = head }
        while head < queue.count {
            let record = queue[head]
            head += 1
            if taken.insert(record.guid).inserted { return record }
        }
        return nil
    }
}
