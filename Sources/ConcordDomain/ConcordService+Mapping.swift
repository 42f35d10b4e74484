import Foundation

extension ConcordService {
    // MARK: - Mapping identifiers (§5)

    /// `POST /v1/library/cloud-identifiers`: local → cloud, one answer per item in request order.
    ///
    /// Common path (everything already linked) is one read transaction, no write lock. Objects not yet
    /// linked go through step 3 inside ONE write transaction, which re-reads them and reads the unlinked
    /// records before creating any: two devices racing for the same new content converge on one record.
    public func cloudIdentifiers(forLocalIdentifiers ids: [String], device: DeviceRef) throws(DomainError) -> [CloudIdentifierMapping] {
        guard ids.count <= self.configuration.maxBatch else { throw DomainError.batchTooLarge(maxBatch: self.configuration.maxBatch) }
        for id in ids where !Identifiers.isValidLocalIdentifier(id) {
            throw DomainError.badRequest(message: "A local identifier must be 1 to 255 bytes of UTF-8 without control characters.", field: "localIdentifiers")
        }
        var unique: [String] = []
        var seen = Set<String>()
        for id in ids where seen.insert(id).inserted { unique.append(id) }

        var answers: [String: MappingResult] = [:]
        var pending: [String] = []
        let limited = try self.run { () throws -> Bool in
            try self.store.read { tx in
                let state = try Self.requireDevice(tx, device)
                guard state.authorization != .denied else { throw DomainError.accessUserDenied }
                let limited = state.authorization == .limited
                var found: [String: StoredObject] = [:]
                for s in try tx.objects(device, localIdentifiers: unique) { found[s.object.localIdentifier] = s }
                for id in unique {
                    guard let s = found[id] else { answers[id] = .error(.identifierNotFound(limitedLibrary: limited)); continue }   // step 1
                    if let record = s.link { answers[id] = .found(record.cloudIdentifier) } else { pending.append(id) }   // step 2
                }
                return limited
            }
        }
        if !pending.isEmpty {
            let assigned = try self.run { try self.store.write { tx in try self.assignRecords(tx, device: device, localIdentifiers: pending) } }
            for id in pending { answers[id] = assigned[id].map { .found($0.cloudIdentifier) } ?? .error(.identifierNotFound(limitedLibrary: limited)) }
        }
        return ids.map { CloudIdentifierMapping(localIdentifier: $0, result: answers[$0] ?? .error(.identifierNotFound(limitedLibrary: limited))) }
    }

    /// Step 3 for a batch, inside the write transaction: link each unlinked object to the oldest record
    /// of its type and fingerprint with no link on this device, else create a record.
    func assignRecords(_ tx: any StoreWriteTransaction, device: DeviceRef, localIdentifiers: [String]) throws -> [String: CloudRecord] {
        var result: [String: CloudRecord] = [:]
        var byID: [String: StoredObject] = [:]
        for s in try tx.objects(device, localIdentifiers: localIdentifiers) { byID[s.object.localIdentifier] = s }
        var unlinked: [LibraryObject] = []
        for id in localIdentifiers {
            guard let s = byID[id] else { continue }   // deleted meanwhile: step 1
            if let r = s.link { result[id] = r } else { unlinked.append(s.object) }   // linked meanwhile: step 2
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
                record = CloudRecord(guid: UUID().uuidString, type: o.type, fingerprint: o.fingerprint)
                created.append(record)
            }
            result[o.localIdentifier] = record
            links.append((o.localIdentifier, record.guid))
        }
        if !created.isEmpty { try tx.insertRecords(accountID: device.accountID, created, createdAt: self.now) }
        try tx.setLinks(device, links)
        return result
    }

    /// `POST /v1/library/local-identifiers`: cloud → local, one answer per item in request order.
    public func localIdentifiers(forCloudIdentifiers strings: [String], device: DeviceRef) throws(DomainError) -> [LocalIdentifierMapping] {
        guard strings.count <= self.configuration.maxBatch else { throw DomainError.batchTooLarge(maxBatch: self.configuration.maxBatch) }
        var parsed: [String: CloudIdentifier] = [:]
        for s in strings where parsed[s] == nil { if let c = CloudIdentifier(parsing: s) { parsed[s] = c } }
        let identifiers = Array(Set(parsed.values))

        var answers: [CloudIdentifier: MappingResult] = [:]
        var toLink: [(localIdentifier: String, record: CloudRecord)] = []
        let limited = try self.run { () throws -> Bool in
            try self.store.read { tx in
                let state = try Self.requireDevice(tx, device)
                guard state.authorization != .denied else { throw DomainError.accessUserDenied }
                let limited = state.authorization == .limited
                let resolved = try Self.resolve(tx, device: device, identifiers: identifiers, limited: limited)
                answers = resolved.answers
                toLink = resolved.links
                return limited
            }
        }
        if !toLink.isEmpty {
            // Store the links found by content so the next lookup takes step 2. Re-checked under the write
            // lock: the object must still be unlinked with the record's content, the record unlinked here.
            try self.run {
                try self.store.write { tx in
                    let objects = try tx.objects(device, localIdentifiers: toLink.map(\.localIdentifier))
                    var byID: [String: StoredObject] = [:]
                    for o in objects { byID[o.object.localIdentifier] = o }
                    let taken = Set(try tx.linkedObjects(device, guids: toLink.map(\.record.guid)).map(\.guid))
                    var linkedObjects = Set<String>()
                    var linkedRecords = Set<String>()
                    var links: [(localIdentifier: String, guid: String)] = []
                    for (id, record) in toLink {
                        guard let o = byID[id], o.link == nil, o.object.type == record.type, o.object.fingerprint == record.fingerprint,
                              !taken.contains(record.guid), !linkedObjects.contains(id), !linkedRecords.contains(record.guid) else { continue }
                        linkedObjects.insert(id)
                        linkedRecords.insert(record.guid)
                        links.append((id, record.guid))
                    }
                    if !links.isEmpty { try tx.setLinks(device, links) }
                }
            }
        }
        return strings.map { s in
            guard let c = parsed[s] else { return LocalIdentifierMapping(cloudIdentifier: s, result: .error(.invalidIdentifier)) }   // step 1
            return LocalIdentifierMapping(cloudIdentifier: s, result: answers[c] ?? .error(.identifierNotFound(limitedLibrary: limited)))
        }
    }

    /// Steps 2–4 for a batch in one read transaction: records by GUID (this account only), their links on
    /// this device, then objects by content for the rest. Returns the answers and the links to store.
    static func resolve(_ tx: any StoreReadTransaction, device: DeviceRef, identifiers: [CloudIdentifier], limited: Bool)
        throws -> (answers: [CloudIdentifier: MappingResult], links: [(localIdentifier: String, record: CloudRecord)]) {
        var answers: [CloudIdentifier: MappingResult] = [:]
        var links: [(localIdentifier: String, record: CloudRecord)] = []
        guard !identifiers.isEmpty else { return (answers, links) }
        var records: [String: CloudRecord] = [:]
        // A GUID of another account is simply not found here (step 4).
        for r in try tx.records(accountID: device.accountID, guids: Array(Set(identifiers.map(\.guid)))) { records[r.guid] = r }
        let known = identifiers.filter { records[$0.guid]?.type == $0.type }
        var linked: [String: String] = [:]
        if !known.isEmpty {
            for (guid, local) in try tx.linkedObjects(device, guids: Array(Set(known.map(\.guid)))) { linked[guid] = local }
        }
        var byContent: [CloudIdentifier] = []
        for c in identifiers {
            if records[c.guid]?.type == c.type, let local = linked[c.guid] { answers[c] = .found(local); continue }   // step 2
            if c.fingerprint.isEmpty { answers[c] = .error(.identifierNotFound(limitedLibrary: limited)); continue }   // step 3: record only
            byContent.append(c)
        }
        guard !byContent.isEmpty else { return (answers, links) }
        let keys = Array(Set(byContent.map { ContentKey(type: $0.type, fingerprint: $0.fingerprint) }))
        var candidates: [ContentKey: [StoredObject]] = [:]
        for s in try tx.objects(device, matching: keys) { candidates[ContentKey(type: s.object.type, fingerprint: s.object.fingerprint), default: []].append(s) }
        for c in byContent {
            let matches = candidates[ContentKey(type: c.type, fingerprint: c.fingerprint)] ?? []
            if matches.isEmpty {
                answers[c] = .error(.identifierNotFound(limitedLibrary: limited))
            } else if matches.count == 1 {
                let o = matches[0]
                answers[c] = .found(o.object.localIdentifier)
                // Link only when the record exists with exactly this content and the object is free.
                if let r = records[c.guid], r.type == c.type, r.fingerprint == c.fingerprint, o.link == nil {
                    links.append((o.object.localIdentifier, r))
                }
            } else {
                let sorted = matches.map(\.object.localIdentifier).sorted { $0.utf8Precedes($1) }
                answers[c] = .error(.multipleIdentifiersFound(localIdentifiers: sorted))
            }
        }
        return (answers, links)
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
        try self.run {
            try self.store.write { tx in
                let state = try Self.requireDevice(tx, device)
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
}
