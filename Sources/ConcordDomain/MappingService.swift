import Foundation

/// Local → cloud answers of a batch: per identifier `.linked` (its cloud identifier's bytes in
/// `bytes`) or not found (`.missing`, or `.unlinked` when step 3 could not assign it).
public struct CloudIdentifierAnswers: Sendable {
    public var answers: [LinkLookup]
    public var bytes: [UInt8]
    /// The item error of an identifier not found (its `limitedLibrary` is the device's).
    public let notFound: ItemError

    public init(answers: [LinkLookup], bytes: [UInt8], notFound: ItemError) {
        self.answers = answers
        self.bytes = bytes
        self.notFound = notFound
    }

    /// One answer, its cloud identifier as bytes valid inside `body`.
    public enum Result {
        case found(UnsafeBufferPointer<UInt8>)
        case error(ItemError)
    }

    /// Each answer in order, its cloud identifier's bytes (plain ASCII: GUID, type code and a
    /// base64url fingerprint, never needing JSON escapes) valid inside `body`.
    public func forEach(_ body: (Int, Result) -> Void) {
        self.bytes.withUnsafeBufferPointer { buffer in
            for (i, answer) in self.answers.enumerated() {
                if case .linked(let start, let count) = answer {
                    body(i, .found(UnsafeBufferPointer(rebasing: buffer[start..<start + count])))
                } else {
                    body(i, .error(self.notFound))
                }
            }
        }
    }

    public func withResult<T>(_ i: Int, _ body: (Result) -> T) -> T {
        guard case .linked(let start, let count) = self.answers[i] else { return body(.error(self.notFound)) }
        return self.bytes.withUnsafeBufferPointer { body(.found(UnsafeBufferPointer(rebasing: $0[start..<start + count]))) }
    }
}

/// Mapping identifiers both ways, and links chosen by the person (API.md §5).
public struct MappingService: ServiceArea {
    let core: ServiceCore

    /// `POST /v1/library/cloud-identifiers`: local → cloud, one answer per item in request order.
    public func cloudIdentifiers(forLocalIdentifiers ids: [String], device: DeviceRef) throws(DomainError) -> [CloudIdentifierMapping] {
        let answers = try self.cloudIdentifierAnswers(forLocalIdentifiers: IdentifierBatch(ids), device: device)
        return answers.answers.indices.map { i in
            CloudIdentifierMapping(localIdentifier: ids[i], result: answers.withResult(i) { result in
                switch result {
                case .found(let bytes): .found(String(decoding: bytes, as: UTF8.self))
                case .error(let error): .error(error)
                }
            })
        }
    }

    /// Local → cloud as `cloudIdentifiers`, for identifiers given as one buffer of bytes (a
    /// request's, say), with the found cloud identifiers as bytes of one buffer rather than a string
    /// each (what the route writes into its answer).
    ///
    /// Common path (everything already linked) is one read transaction, no write lock. Objects not yet
    /// linked go through step 3 inside ONE write transaction, which re-reads them and reads the unlinked
    /// records before creating any: two devices racing for the same new content converge on one record.
    public func cloudIdentifierAnswers(forLocalIdentifiers ids: IdentifierBatch, device: DeviceRef) throws(DomainError) -> CloudIdentifierAnswers {
        guard ids.count <= self.configuration.maxBatch else { throw DomainError.batchTooLarge(maxBatch: self.configuration.maxBatch) }
        if ids.firstInvalidLocalIdentifier() != nil {
            throw DomainError.badRequest(message: "A local identifier must be 1 to 255 bytes of UTF-8 without control characters.", field: "localIdentifiers")
        }
        // Duplicates go to storage as they are: cheaper than deduplicating a batch that rarely has any.
        var lookups = LinkLookups()
        let limited = try self.mappingRead(device) { _, reads, state in
            lookups = try reads.linkLookups(device, localIdentifiers: ids)
            return state.authorization == .limited
        }
        var result = CloudIdentifierAnswers(answers: lookups.lookups, bytes: lookups.bytes, notFound: .identifierNotFound(limitedLibrary: limited))
        var pending: [String] = []
        var pendingSeen = Set<ByteKey>()   // identifiers are byte strings (API.md §2)
        for (i, s) in result.answers.enumerated() where s == .unlinked {
            let id = ids[i]
            if pendingSeen.insert(ByteKey(id)).inserted { pending.append(id) }   // in request order: "oldest record first" follows it
        }
        guard !pending.isEmpty else { return result }
        let assigned = try self.run { try self.core.write(account: device.accountID) { tx in try Self.assignRecords(tx, device: device, localIdentifiers: pending, core: self.core) } }
        // Step 3: assigned just now (an object deleted before step 3 ran stays not found).
        for i in result.answers.indices where result.answers[i] == .unlinked {
            guard let record = assigned[ByteKey(ids[i])] else { continue }
            let start = result.bytes.count
            result.bytes.append(contentsOf: record.cloudIdentifier.utf8)
            result.answers[i] = .linked(start: start, count: result.bytes.count - start)
        }
        return result
    }

    /// Stores links found by content (§5 cloud → local step 3, shared by mapping and journal reads), re-checked under the write lock: the object must still
    /// be unlinked with the record's type and fingerprint, and the record unlinked on this device.
    static func storeContentLinks(_ tx: any AccountWriteTransaction, device: DeviceRef, _ toLink: [(localIdentifier: String, record: CloudRecord)]) throws {
        var byID: [ByteKey: StoredObject] = [:]
        for o in try tx.objects(device, localIdentifiers: toLink.map(\.localIdentifier)) { byID[ByteKey(o.object.localIdentifier)] = o }
        let taken = Set(try tx.linkedObjects(device, guids: toLink.map(\.record.guid)).map(\.guid))
        var linkedObjects = Set<ByteKey>()
        var linkedRecords = Set<String>()
        var links: [(localIdentifier: String, guid: String)] = []
        for (id, record) in toLink {
            guard let o = byID[ByteKey(id)], o.link == nil, o.object.type == record.type, o.object.fingerprint == record.fingerprint,
                  !taken.contains(record.guid), !linkedObjects.contains(ByteKey(id)), !linkedRecords.contains(record.guid) else { continue }
            linkedObjects.insert(ByteKey(id))
            linkedRecords.insert(record.guid)
            links.append((id, record.guid))
        }
        if !links.isEmpty { try tx.setLinks(device, links) }
    }

    /// Step 3 for a batch, inside the write transaction: link each unlinked object to the oldest record
    /// of its type and fingerprint with no link on this device, else create a record.
    /// Keyed by the identifiers' bytes (API.md §2).
    static func assignRecords(_ tx: any AccountWriteTransaction, device: DeviceRef, localIdentifiers: [String], core: ServiceCore) throws -> [ByteKey: CloudRecord] {
        var result: [ByteKey: CloudRecord] = [:]
        var byID: [ByteKey: StoredObject] = [:]
        for s in try tx.objects(device, localIdentifiers: localIdentifiers) { byID[ByteKey(s.object.localIdentifier)] = s }
        var unlinked: [LibraryObject] = []
        for id in localIdentifiers {
            guard let s = byID[ByteKey(id)] else { continue }   // deleted meanwhile: step 1
            if let r = s.link { result[ByteKey(id)] = r } else { unlinked.append(s.object) }   // linked meanwhile: step 2
        }
        guard !unlinked.isEmpty else { return result }
        let keys = Array(Set(unlinked.map { ContentKey(type: $0.type, fingerprint: $0.fingerprint) }))
        var queues: [ContentKey: [CloudRecord]] = [:]
        for r in try tx.unlinkedRecords(device, matching: keys) { queues[ContentKey(type: r.type, fingerprint: r.fingerprint), default: []].append(r) }
        var heads: [ContentKey: Int] = [:]
        var created: [CloudRecord] = []
        var links: [(localIdentifier: String, guid: String)] = []
        for o in unlinked {
            let key = ContentKey(type: o.type, fingerprint: o.fingerprint)
            let head = heads[key, default: 0]
            let record: CloudRecord
            if let queue = queues[key], head < queue.count {
                record = queue[head]
                heads[key] = head + 1
            } else {
                record = CloudRecord(guid: core.newID(), type: o.type, fingerprint: o.fingerprint)
                created.append(record)
            }
            result[ByteKey(o.localIdentifier)] = record
            links.append((o.localIdentifier, record.guid))
        }
        if !created.isEmpty { try tx.insertRecords(accountID: device.accountID, created, createdAt: core.clock()) }
        try tx.setLinks(device, links)
        return result
    }

    /// `POST /v1/library/local-identifiers`: cloud → local, one answer per item in request order.
    public func localIdentifiers(forCloudIdentifiers strings: [String], device: DeviceRef) throws(DomainError) -> [LocalIdentifierMapping] {
        let results = try self.localIdentifierResults(forCloudIdentifiers: IdentifierBatch(strings), device: device)
        return zip(strings, results).map { LocalIdentifierMapping(cloudIdentifier: $0, result: $1) }
    }

    /// Cloud → local as `localIdentifiers`, for identifiers given as one buffer of bytes (a
    /// request's, say): one result per identifier, in order (the route echoes the identifiers
    /// from the batch, with no string per item).
    public func localIdentifierResults(forCloudIdentifiers batch: IdentifierBatch, device: DeviceRef) throws(DomainError) -> [MappingResult] {
        guard batch.count <= self.configuration.maxBatch else { throw DomainError.batchTooLarge(maxBatch: self.configuration.maxBatch) }
        let parsed = (0..<batch.count).map { i in batch.withIdentifier(i) { CloudIdentifier(parsing: $0) } }   // nil: step 1, invalidIdentifier
        let identifiers = parsed.compactMap { $0 }

        var resolved = Resolution()
        let limited = try self.mappingRead(device) { _, reads, state in
            let limited = state.authorization == .limited
            resolved = try Self.resolve(reads, device: device, identifiers: identifiers, limited: limited)
            return limited
        }
        if !resolved.links.isEmpty {
            // Store the links found by content so the next lookup takes step 2. Re-checked under the write
            // lock: the object must still be unlinked with the record's content, the record unlinked here.
            let toLink = resolved.links
            try self.run { try self.core.write(account: device.accountID) { tx in try Self.storeContentLinks(tx, device: device, toLink) } }
        }
        let notFound = MappingResult.error(.identifierNotFound(limitedLibrary: limited))
        // A local copy: `resolved` is captured by the closure above, and reading a captured variable
        // inside the loop would retain its array once per item.
        let answers = resolved.answers
        var answerIndex = 0
        var out: [MappingResult] = []
        out.reserveCapacity(batch.count)
        for c in parsed {
            guard c != nil else { out.append(.error(.invalidIdentifier)); continue }
            out.append(answers[answerIndex] ?? notFound)
            answerIndex += 1
        }
        return out
    }

    /// What `resolve` found: one answer per identifier (nil: identifierNotFound) and the links to store.
    struct Resolution {
        var answers: [MappingResult?] = []
        var links: [(localIdentifier: String, record: CloudRecord)] = []
    }

    /// Steps 2–4 for a batch in one read transaction: records by GUID (this account only), their links on
    /// this device, then objects by content for the rest. Answers are in the order of `identifiers`.
    static func resolve(_ tx: any MappingReads, device: DeviceRef, identifiers: [CloudIdentifier], limited: Bool) throws -> Resolution {
        var result = Resolution()
        result.answers = [MappingResult?](repeating: nil, count: identifiers.count)
        guard !identifiers.isEmpty else { return result }
        // Steps 2 and 4 in one query: the account's records by GUID with their link on this device
        // (a GUID of another account is simply not found here).
        let found = try tx.recordLookups(device, identifiers: identifiers)
        var byContent: [Int] = []
        for (i, c) in identifiers.enumerated() {
            if let local = found[i].linkedLocalIdentifier { result.answers[i] = .found(local); continue }   // step 2
            if c.fingerprint.isEmpty { continue }   // step 3: an empty fingerprint resolves through its record only
            byContent.append(i)
        }
        guard !byContent.isEmpty else { return result }
        let keys = Array(Set(byContent.map { ContentKey(type: identifiers[$0].type, fingerprint: identifiers[$0].fingerprint) }))
        var candidates: [ContentKey: [StoredObject]] = [:]
        for s in try tx.objects(device, matching: keys) { candidates[ContentKey(type: s.object.type, fingerprint: s.object.fingerprint), default: []].append(s) }
        for i in byContent {
            let c = identifiers[i]
            let matches = candidates[ContentKey(type: c.type, fingerprint: c.fingerprint)] ?? []
            if matches.count == 1 {
                let o = matches[0]
                result.answers[i] = .found(o.object.localIdentifier)
                // Link only when the record exists with exactly this content and the object is free.
                if let r = found[i].sameContentRecord, o.link == nil {
                    result.links.append((o.object.localIdentifier, r))
                }
            } else if matches.count > 1 {
                let sorted = matches.map(\.object.localIdentifier).sorted { $0.utf8Precedes($1) }
                result.answers[i] = .error(.multipleIdentifiersFound(localIdentifiers: sorted))
            }
        }
        return result
    }

    /// `POST /v1/library/links`: the person chose which object a cloud identifier means on this device.
    /// The new link replaces the record's earlier link on this device and the object's earlier link.
    public func link(cloudIdentifier: String, localIdentifier: String, device: DeviceRef) throws(DomainError) {
        guard let c = CloudIdentifier(parsing: cloudIdentifier) else {
            throw DomainError.badRequest(message: "cloudIdentifier is not a well-formed cloud identifier.", field: "cloudIdentifier")
        }
        guard Identifiers.isValidLocalIdentifier(localIdentifier) else {
            throw DomainError.badRequest(message: "A local identifier must be 1 to 255 bytes of UTF-8 without control characters.", field: "localIdentifier")
        }
        try self.write(device) { tx, state in
            guard state.authorization != .denied else { throw DomainError.accessUserDenied }
            guard let record = try tx.records(accountID: device.accountID, guids: [c.guid]).first, record.type == c.type else {
                throw DomainError.notFound(message: "No such cloud record.")
            }
            guard let object = try tx.objects(device, localIdentifiers: [localIdentifier]).first else {
                throw DomainError.notFound(message: "No object with this local identifier.")
            }
            guard object.object.type == record.type, object.object.fingerprint == record.fingerprint else {
                throw DomainError.fingerprintMismatch(message: "The object does not have the record's type and fingerprint.")
            }
            if object.link?.guid == record.guid { return }
            try tx.dropLinks(device, guids: [record.guid])
            try tx.setLinks(device, [(localIdentifier, record.guid)])
        }
    }
}
