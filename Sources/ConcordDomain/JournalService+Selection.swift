import ConcordBytes
import Foundation

extension JournalService {
    // MARK: - The photo picker's selection

    /// `POST /v1/journals/{journalID}/entries/{entryID}/selection`: a photo picker's result applied to
    /// the entry, in one write transaction, by the photo picker's rules:
    ///
    /// 1. The picker was preselected with the entry's photos that resolve on this device (cloud → local).
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
        try self.applySelection(journalID: journalID, entryID: entryID, cancelled: cancelled, localIdentifiers: picked, mode: .replace,
                                session: nil, ifMatch: ifMatch, device: device, idempotency: idempotency).entry
    }

    /// A selection in either mode, optionally a step of a continuous picker session:
    ///
    /// - `.replace`: the rules above.
    /// - `.add`: each given object that does not already stand in the entry (as resolved here; an
    ///   ambiguous photo one of whose candidates is given stands for it, and that choice is kept as a
    ///   link as in `.replace`) is mapped local → cloud and appended, in the given order; one given
    ///   twice is taken once; nothing is dropped or reordered. Unmappable ones are `422`, nothing changes.
    /// - `session`: the server keeps per entry and session the highest sequence applied. A step whose
    ///   sequence is not above it changes nothing (`applied: false`); `If-Match` is checked first. A
    ///   session is forgotten `PickerSessionStep.lifetime` after its last applied step (forgotten ones
    ///   of the account are deleted by the next step of any session), and with its entry. A cancelled
    ///   step changes nothing, not even the session's sequence.
    ///
    /// An applied selection that changes the entry is one journal change, as any entry write; one that
    /// changes nothing (a stale or cancelled step, the same photos again, an empty addition) writes no
    /// change and wakes no poll.
    public func applySelection(journalID: String, entryID: String, cancelled: Bool, localIdentifiers picked: [String], mode: SelectionMode,
                               session: PickerSessionStep?, ifMatch: IfMatch?, device: DeviceRef,
                               idempotency: IdempotencyScope? = nil) throws(DomainError) -> SelectionOutcome {
        try Self.validateEntryID(entryID)
        guard picked.count <= self.configuration.maxBatch else { throw DomainError.batchTooLarge(maxBatch: self.configuration.maxBatch) }
        var seen = Set<ByteKey>()   // identifiers are byte strings
        for id in picked {
            guard Identifiers.isValidLocalIdentifier(id) else {
                throw DomainError.badRequest(message: "A local identifier must be 1 to 255 bytes of UTF-8 without control characters.", field: "localIdentifiers")
            }
            // A picker's whole selection holds an object once; an addition may repeat one (taken once).
            guard seen.insert(ByteKey(id)).inserted || mode == .add else {
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
            let notApplied: Bool? = session == nil ? nil : false
            if cancelled { return SelectionOutcome(entry: try Self.resolvedView(tx, device: device, entry, limited: limited, core: self.core), applied: notApplied) }
            if let session {
                let forgottenBefore = now.timeIntervalSince1970 - PickerSessionStep.lifetime
                if let applied = try tx.pickerSessionSequence(journalID: journalID, entryID: entryID, session: session.session, usedAfter: forgottenBefore),
                   session.sequence <= applied {
                    return SelectionOutcome(entry: try Self.resolvedView(tx, device: device, entry, limited: limited, core: self.core), applied: false)
                }
            }

            let plan = switch mode {
            case .replace: try self.planSelection(tx, device: device, current: entry.photos, picked: picked, limited: limited)
            case .add: try self.planAddition(tx, device: device, current: entry.photos, given: picked, limited: limited)
            }
            if !plan.links.isEmpty { try MappingService.storeFoundLinks(tx, device: device, plan.links, core: self.core) }
            if let session {
                // Thrown errors above roll this back with the rest: an unmappable step is not applied.
                let at = now.timeIntervalSince1970
                try tx.deletePickerSessions(usedAtOrBefore: at - PickerSessionStep.lifetime)
                try tx.putPickerSession(journalID: journalID, entryID: entryID, session: session.session, sequence: session.sequence, usedAt: at)
            }
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
            return SelectionOutcome(entry: try Self.resolvedView(tx, device: device, entry, limited: limited, core: self.core), applied: session == nil ? nil : true)
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

        links += try Self.chosenLinks(tx, chosen)

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

    /// The entry's new photo list after an addition (`"mode": "add"`): the current photos as they
    /// are, then each given object that does not stand in the entry yet, mapped local → cloud, in the
    /// given order. A given object stands when a photo resolves to it here, or when it is a candidate
    /// of an ambiguous photo not yet standing for another given one (as in `planSelection`, that
    /// photo then counts as resolved to it, and the choice is kept as a link). Repeated objects, and
    /// records the entry already holds, are taken once. Unmappable objects are `422` (nothing changes).
    func planAddition(_ tx: any AccountWriteTransaction, device: DeviceRef, current: [String], given: [String], limited: Bool)
        throws -> (photos: [String], links: [(localIdentifier: String, record: CloudRecord)]) {
        guard !given.isEmpty else { return (current, []) }
        let resolved = try Self.resolvePhotos(tx, device: device, [current], limited: limited)
        var standing = Set<ByteKey>()
        var ambiguous: [(candidates: Set<ByteKey>, cloud: String, used: Bool)] = []
        for c in current {
            switch resolved.answers[c] {
            case .found(let local)?: standing.insert(ByteKey(local))
            case .error(.multipleIdentifiersFound(let candidates))?: ambiguous.append((Set(candidates.map(ByteKey.init)), c, false))
            default: break
            }
        }
        var toMap: [String] = []
        var chosen: [(localIdentifier: String, cloud: String)] = []
        var taken = Set<ByteKey>()
        for local in given {
            let key = ByteKey(local)
            guard taken.insert(key).inserted, !standing.contains(key) else { continue }
            if let k = ambiguous.firstIndex(where: { !$0.used && $0.candidates.contains(key) }) {
                ambiguous[k].used = true
                chosen.append((local, ambiguous[k].cloud))
            } else {
                toMap.append(local)
            }
        }
        let assigned = toMap.isEmpty ? [:] : try MappingService.assignRecords(tx, device: device, localIdentifiers: toMap, core: self.core)
        let missingSet = Set(toMap.filter { assigned[ByteKey($0)] == nil }.map(ByteKey.init))
        if !missingSet.isEmpty {
            let inputs = given.map { JournalPhotoInput.localIdentifier($0) }
            let failures = given.enumerated().filter { missingSet.contains(ByteKey($0.element)) }
                .map { (index: $0.offset, error: ItemError.identifierNotFound(limitedLibrary: limited)) }
            throw Self.unmappablePhotos(inputs, failures).withField(rename: "localIdentifiers")
        }
        var photos = current
        var seenRecords = Set(current.map { c in CloudIdentifier(parsing: c).map { $0.guid + ":" + $0.type.code } ?? c })
        for local in toMap {
            guard let r = assigned[ByteKey(local)] else { continue }
            if seenRecords.insert(r.guid + ":" + r.type.code).inserted { photos.append(r.cloudIdentifier) }
        }
        return (photos, resolved.links + (try Self.chosenLinks(tx, chosen)))
    }

    /// The person's choice among an ambiguous photo's candidates becomes its link when it can be
    /// stored without replacing any (storeFoundLinks re-checks object, key or content, and record).
    static func chosenLinks(_ tx: any AccountWriteTransaction, _ chosen: [(localIdentifier: String, cloud: String)]) throws
        -> [(localIdentifier: String, record: CloudRecord)] {
        guard !chosen.isEmpty else { return [] }
        var parsed: [String: CloudIdentifier] = [:]
        for (_, c) in chosen { parsed[c] = CloudIdentifier(parsing: c) }
        var records: [String: CloudRecord] = [:]
        for r in try tx.records(guids: Array(Set(parsed.values.map(\.guid)))) { records[r.guid] = r }
        var links: [(localIdentifier: String, record: CloudRecord)] = []
        for (local, c) in chosen {
            guard let id = parsed[c] ?? nil, let r = records[id.guid], r.type == id.type else { continue }
            links.append((local, r))
        }
        return links
    }
}

extension DomainError {
    /// A 422 about a selection names its items under `"localIdentifiers"` instead of `"photos"`.
    func withField(rename key: String) -> DomainError {
        guard case .unprocessable(let message, let details) = self else { return self }
        return .unprocessable(message: message, details: details.map { $0.key == "photos" ? DetailField(key, $0.value) : $0 })
    }
}
