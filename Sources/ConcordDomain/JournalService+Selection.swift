import ConcordBytes
import Foundation

extension JournalService {
    // MARK: - The photo picker's selection (§6)

    /// `POST /v1/journals/{journalID}/entries/{entryID}/selection`: a photo picker's result applied to
    /// the entry, in one write transaction, by the rules of §6:
    ///
    /// 1. The picker was preselected with the entry's photos that resolve on this device (§5 cloud → local).
    /// 2. The entry's photos become the picked ones, in the picked order. A picked object that already
    ///    stands in the entry (one of the entry's cloud identifiers resolves to it here) keeps that cloud
    ///    identifier untouched, even when a fresh local → cloud mapping would give another one.
    /// 3. An ambiguous photo (`multipleIdentifiersFound`) one of whose candidates was picked counts as
    ///    resolved to that candidate: it keeps its cloud identifier there, and no second cloud identifier
    ///    for the same object enters the entry (an ambiguous photo whose picked candidate another photo
    ///    already stands for is dropped). The choice is remembered as a link when the record exists
    ///    with the object's content and neither has a link on this device yet (as `POST /v1/library/links`
    ///    would, without ever replacing a link).
    /// 4. Other picked objects are mapped local → cloud (which may create records and links); a picked
    ///    identifier that is not in the library is `422 unprocessable` and nothing changes.
    /// 5. Preselected photos no longer picked are dropped.
    /// 6. Photos that do not resolve here (`identifierNotFound`), and ambiguous ones none of whose
    ///    candidates was picked (the picker could not show them as one photo), are kept after the picked
    ///    ones in their earlier order: a picker on one device never deletes what only another device holds.
    ///
    /// `cancelled` changes nothing and answers the entry. The entry must exist (`404` otherwise, with or
    /// without `If-Match`: a selection edits an entry, it never creates one).
    public func applySelection(journalID: String, entryID: String, cancelled: Bool, localIdentifiers picked: [String], ifMatch: IfMatch?,
                               device: DeviceRef, idempotency: IdempotencyScope? = nil) throws(DomainError) -> JournalEntryView {
        try Self.validateEntryID(entryID)
        guard picked.count <= self.configuration.maxBatch else { throw DomainError.batchTooLarge(maxBatch: self.configuration.maxBatch) }
        var seen = Set<ByteKey>()   // identifiers are byte strings (API.md §2)
        for id in picked {
            guard Identifiers.isValidLocalIdentifier(id) else {
                throw DomainError.badRequest(message: "A local identifier must be 1 to 255 bytes of UTF-8 without control characters.", field: "localIdentifiers")
            }
            guard seen.insert(ByteKey(id)).inserted else {
                throw DomainError.badRequest(message: "The local identifier \(id) is picked twice.", field: "localIdentifiers")
            }
        }
        let now = self.now
        return try self.writeAllowed(device, idempotency: idempotency) { tx, state in
            let limited = state.authorization == .limited
            guard var journal = try Self.findJournal(tx, journalID) else { throw Self.noSuchJournal }
            guard var entry = try tx.journalEntry(journalID: journalID, entryID: entryID) else {
                throw Self.noSuchEntry
            }
            try Self.checkPrecondition(ifMatch, current: entry.version)
            if cancelled { return try Self.resolvedView(tx, device: device, entry, limited: limited) }

            let plan = try self.planSelection(tx, device: device, current: entry.photos, picked: picked, limited: limited)
            if !plan.links.isEmpty { try MappingService.storeFoundLinks(tx, device: device, plan.links) }
            if plan.photos != entry.photos {
                let details = JournalChangeDetails(journals: JournalChangeLists(updated: [journalID]),
                                                   entries: JournalChangeLists(updated: [journalID + "/" + entryID]))
                entry.photos = plan.photos
                try self.commitJournalChange(tx, origin: device, now: now, details) { seq in
                    entry.version = seq
                    try tx.putJournalEntry(entry)
                    try Self.touch(tx, &journal, seq: seq, now: now)
                }
            }
            return try Self.resolvedView(tx, device: device, entry, limited: limited)
        }
    }

    /// The entry's new photo list after a selection, and the links the person's choices among ambiguous
    /// photos establish. Runs inside the write transaction (new objects are mapped local → cloud there).
    func planSelection(_ tx: any AccountWriteTransaction, device: DeviceRef, current: [String], picked: [String], limited: Bool)
        throws -> (photos: [String], links: [(localIdentifier: String, record: CloudRecord)]) {
        // What each current photo resolves to on this device (one batch; links found by content are
        // stored with the plan's, re-checked).
        let resolved = try Self.resolvePhotos(tx, device: device, [current], limited: limited)
        var links = resolved.links
        var foundAt: [ByteKey: [Int]] = [:]   // local identifier → indexes of photos resolving to it, entry order
        var ambiguous: [(index: Int, candidates: Set<ByteKey>)] = []
        for (i, c) in current.enumerated() {
            switch resolved.answers[c] {
            case .found(let local)?: foundAt[ByteKey(local), default: []].append(i)
            case .error(.multipleIdentifiersFound(let candidates))?: ambiguous.append((i, Set(candidates.map(ByteKey.init))))
            default: break
            }
        }

        enum Slot { case kept(String), new(String) }
        var used = [Bool](repeating: false, count: current.count)
        var slots: [Slot] = []
        slots.reserveCapacity(picked.count)
        var toMap: [String] = []
        var chosen: [(localIdentifier: String, cloud: String)] = []
        for local in picked {
            if let i = foundAt[ByteKey(local)]?.first(where: { !used[$0] }) {
                used[i] = true
                slots.append(.kept(current[i]))
            } else if let k = ambiguous.firstIndex(where: { !used[$0.index] && $0.candidates.contains(ByteKey(local)) }) {
                let i = ambiguous[k].index
                used[i] = true
                slots.append(.kept(current[i]))
                chosen.append((local, current[i]))
            } else {
                slots.append(.new(local))
                toMap.append(local)
            }
        }
        let assigned = toMap.isEmpty ? [:] : try MappingService.assignRecords(tx, device: device, localIdentifiers: toMap, core: self.core)
        let missing = toMap.filter { assigned[ByteKey($0)] == nil }
        if !missing.isEmpty {
            let inputs = picked.map { JournalPhotoInput.localIdentifier($0) }
            let missingSet = Set(missing.map(ByteKey.init))
            let failures = picked.enumerated().filter { missingSet.contains(ByteKey($0.element)) }
                .map { (index: $0.offset, error: ItemError.identifierNotFound(limitedLibrary: limited)) }
            throw Self.unmappablePhotos(inputs, failures).withField(rename: "localIdentifiers")
        }

        // The person's choice among an ambiguous photo's candidates becomes its link when it can be
        // stored without replacing any (storeFoundLinks re-checks object, key or content, and record).
        if !chosen.isEmpty {
            var parsed: [String: CloudIdentifier] = [:]
            for (_, c) in chosen { parsed[c] = CloudIdentifier(parsing: c) }
            var records: [String: CloudRecord] = [:]
            for r in try tx.records(guids: Array(Set(parsed.values.map(\.guid)))) { records[r.guid] = r }
            for (local, c) in chosen {
                guard let id = parsed[c] ?? nil, let r = records[id.guid], r.type == id.type else { continue }
                links.append((local, r))
            }
        }

        // Picked first, in picked order; then what this device could not show, in earlier order. A
        // record enters the entry once (GUID and type identify it, whatever the fingerprint part).
        var photos: [String] = []
        var seenRecords = Set<String>()
        func add(_ c: String) {
            let key = CloudIdentifier(parsing: c).map { $0.guid + ":" + $0.type.code } ?? c
            if seenRecords.insert(key).inserted { photos.append(c) }
        }
        for slot in slots {
            switch slot {
            case .kept(let c): add(c)
            case .new(let local): if let r = assigned[ByteKey(local)] { add(r.cloudIdentifier) }
            }
        }
        let pickedSet = Set(picked.map(ByteKey.init))
        for (i, c) in current.enumerated() where !used[i] {
            switch resolved.answers[c] {
            case .found?: continue   // preselected, no longer picked: dropped
            case .error(.multipleIdentifiersFound(let candidates))? where candidates.contains(where: { pickedSet.contains(ByteKey($0)) }):
                continue   // resolved to a picked object another photo already stands for: no second identifier for it
            default: add(c)   // not found here, ambiguous with no candidate picked (or unreadable): kept
            }
        }
        return (photos, links)
    }
}

extension DomainError {
    /// A 422 about a selection names its items under `"localIdentifiers"` instead of `"photos"`.
    func withField(rename key: String) -> DomainError {
        guard case .unprocessable(let message, let details) = self else { return self }
        return .unprocessable(message: message, details: details.map { $0.key == "photos" ? DetailField(key, $0.value) : $0 })
    }
}
