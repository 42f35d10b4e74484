import ConcordBytes
import Foundation

/// The account's journals, their entries and its journal change feed.
public struct JournalService: ServiceArea {
    let core: ServiceCore
    // MARK: - Journals
    //
    // Every write of a journal or entry is ONE write transaction that assigns the next sequence
    // number of the account's journal feed. That number is the change's token (encoded), the new
    // version of what changed (entry and its journal), and the order of creation, so versions are
    // never reused: a version string seen before a delete can never match the thing re-created.
    // A write that changes nothing (same title, same text and photos) keeps the versions and adds
    // no change, as library uploads do.

    /// Longest journal title, in bytes (titles are 1–1024 bytes, like names).
    static let maxTitleBytes = 1024
    /// Longest entry text, in bytes.
    public static let maxEntryTextBytes = 1 << 20

    /// `POST /v1/journals`: a new, empty journal.
    public func createJournal(title: String, device: DeviceRef, idempotency: IdempotencyScope? = nil) throws(DomainError) -> JournalSummary {
        try Self.validateTitle(title)
        let now = self.now
        let id = self.core.newID()
        return try self.write(device, idempotency: idempotency) { tx, _ in
            let quota = self.configuration.quotas.journalsPerAccount
            if try tx.journals().count >= quota { throw DomainError.quotaExceeded(quota: "journalsPerAccount", limit: quota) }
            let journal = try self.commitJournalChange(tx, origin: device, now: now, JournalChangeDetails(journals: JournalChangeLists(inserted: [id]))) { seq in
                let journal = StoredJournal(journalID: id, title: title, version: seq, entryCount: 0, createdSeq: seq,
                                            createdAt: now.timeIntervalSince1970, updatedAt: now.timeIntervalSince1970)
                try tx.putJournal(journal)
                return journal
            }
            return Self.summary(journal)
        }
    }

    /// `GET /v1/journals`: the account's journals in creation order.
    public func listJournals(device: DeviceRef) throws(DomainError) -> [JournalSummary] {
        try self.read(device) { tx, _ in try tx.journals().map(Self.summary) }
    }

    /// A page of the journals (the whole list when `page` is nil).
    public func listJournals(device: DeviceRef, page: PageRequest?) throws(DomainError) -> (journals: [JournalSummary], hasMore: Bool) {
        let journals = try self.listJournals(device: device)
        guard let page else { return (journals, false) }
        let paged = try page.apply(journals, id: \.journalID)
        return (paged.items, paged.hasMore)
    }

    /// `GET /v1/journals/{journalID}`: the journal with its entries (creation order), every photo
    /// resolved for `device` as cloud → local in ONE batched resolution over the whole journal.
    /// Links found by content are stored afterwards in one write transaction.
    /// With `page`, only that page of entries (in creation order) is resolved and answered.
    public func journal(_ journalID: String, device: DeviceRef, page: PageRequest? = nil) throws(DomainError) -> JournalDetail {
        try self.journal(journalID, device: device, page: page, entryID: nil)
    }

    /// `GET /v1/journals/{journalID}/entries/{entryID}`: one entry, its photos resolved for this
    /// device; `notFound` for a missing journal or entry.
    public func entry(journalID: String, entryID: String, device: DeviceRef) throws(DomainError) -> JournalEntryView {
        let detail = try self.journal(journalID, device: device, page: nil, entryID: entryID)
        guard let entry = detail.entries.first else { throw DomainError.notFound(message: "No such entry.") }
        return entry
    }

    private func journal(_ journalID: String, device: DeviceRef, page: PageRequest?, entryID: String?) throws(DomainError) -> JournalDetail {
        var toLink: [(localIdentifier: String, record: CloudRecord)] = []
        var resolvedAt: Int64?
        let detail = try self.mappingRead(device) { tx, reads, state in
            guard let journal = try Self.findJournal(tx, journalID) else { throw Self.noSuchJournal }
            let entries: [StoredJournalEntry], hasMore: Bool, paged: Bool
            if let entryID {
                entries = try tx.journalEntry(journalID: journalID, entryID: entryID).map { [$0] } ?? []
                (hasMore, paged) = (false, false)
            } else {
                (entries, hasMore, paged) = try Self.answerEntries(tx, journalID: journalID, page: page,
                                                                    byteBudget: self.configuration.dataBounds.journalAnswerBytes)
            }
            let resolved = try Self.resolvePhotos(reads, device: device, entries.map(\.photos), limited: state.authorization == .limited)
            toLink = resolved.links
            if !toLink.isEmpty { resolvedAt = try tx.mappingVersion() }
            return JournalDetail(journal: Self.summary(journal), entries: entries.map { Self.view($0, resolved.answers) }, hasMore: hasMore, paged: paged)
        }
        if !toLink.isEmpty {
            try self.run { try self.core.write(account: device.accountID, idempotency: nil) { tx in
                try MappingService.storeFoundLinks(tx, device: device, toLink, resolvedAt: resolvedAt, core: self.core)
            } }
        }
        return detail
    }

    /// Entries read from storage at a time for a journal's answer: a small journal in one query,
    /// and at most this many entries beyond the answer's end held in memory.
    static let entryChunk = 16

    /// The entries one `GET /v1/journals/{journalID}` answers, read from storage in
    /// creation order a chunk at a time, never the whole journal: those of `page` (after its
    /// `after`, at most its `limit`), or from the first without one, while their estimated answer
    /// stays within `byteBudget` (`server.limits.journalAnswerBytes`,
    /// `DataBounds.estimatedAnswerBytes`) — always at least one, so every page moves on.
    /// Resolving photos is most of an answer's cost, and each counts 256 bytes. `paged`: the answer is a page (one was asked for, or the budget cut it), and
    /// `hasMore` says whether entries follow it.
    static func answerEntries(_ tx: any AccountReadTransaction, journalID: String, page: PageRequest?,
                              byteBudget: Int) throws -> (entries: [StoredJournalEntry], hasMore: Bool, paged: Bool) {
        let limit = page?.limit ?? PageRequest.maxLimit
        guard (1...PageRequest.maxLimit).contains(limit) else {
            throw DomainError.badRequest(message: "limit must be 1 to \(PageRequest.maxLimit).", field: "limit")
        }
        var after: Int64 = 0
        if let id = page?.after {
            guard let entry = try tx.journalEntry(journalID: journalID, entryID: id) else {
                throw DomainError.badRequest(message: "after names nothing in this list (the last ID of the previous page is expected).", field: "after")
            }
            after = entry.createdSeq
        }
        var entries: [StoredJournalEntry] = []
        var bytes = 0
        while true {
            let chunk = try tx.journalEntries(journalID: journalID, createdAfter: after, limit: Self.entryChunk)
            for entry in chunk {
                if page != nil, entries.count == limit { return (entries, true, true) }
                let size = DataBounds.estimatedAnswerBytes(entryID: entry.entryID, text: entry.text, photos: entry.photos.count)
                if !entries.isEmpty, bytes + size > byteBudget { return (entries, true, true) }
                entries.append(entry)
                bytes += size
            }
            guard chunk.count == Self.entryChunk, let last = chunk.last else { return (entries, false, page != nil) }
            after = last.createdSeq
        }
    }

    /// `PUT /v1/journals/{journalID}`: renames the journal. `If-Match` is checked against the journal's version.
    public func renameJournal(_ journalID: String, title: String, ifMatch: IfMatch?, device: DeviceRef) throws(DomainError) -> JournalSummary {
        try Self.validateTitle(title)
        let now = self.now
        return try self.write(device, idempotency: nil) { tx, _ in
            guard var journal = try Self.findJournal(tx, journalID) else { throw Self.noSuchJournal }
            try Self.checkPrecondition(ifMatch, current: journal.version)
            guard journal.title != title else { return Self.summary(journal) }
            journal.title = title
            try self.commitJournalChange(tx, origin: device, now: now, JournalChangeDetails(journals: JournalChangeLists(updated: [journalID]))) { seq in
                try Self.touch(tx, &journal, seq: seq, now: now)
            }
            return Self.summary(journal)
        }
    }

    /// `DELETE /v1/journals/{journalID}`: the journal and its entries; the change lists the journal
    /// and every entry as deleted.
    public func deleteJournal(_ journalID: String, ifMatch: IfMatch?, device: DeviceRef) throws(DomainError) {
        let now = self.now
        try self.write(device, idempotency: nil) { tx, _ in
            guard let journal = try Self.findJournal(tx, journalID) else { throw Self.noSuchJournal }
            try Self.checkPrecondition(ifMatch, current: journal.version)
            let entryIDs = try tx.journalEntryIDs(journalID: journalID)
            let details = JournalChangeDetails(journals: JournalChangeLists(deleted: [journalID]),
                                               entries: JournalChangeLists(deleted: IdentifierList(entryIDs.map { journalID + "/" + $0 })))
            try self.commitJournalChange(tx, origin: device, now: now, details) { _ in try tx.deleteJournal(journalID: journalID) }
        }
    }

    /// `PUT /v1/journals/{journalID}/entries/{entryID}`: creates or replaces the entry. Local identifiers
    /// are mapped local → cloud (which may create records and links) in the same write transaction;
    /// when any photo cannot be mapped the answer is `unprocessable` listing every failing photo, and
    /// nothing is stored. The answer has the photos resolved for `device`.
    public func putEntry(journalID: String, entryID: String, text: String, photos: [JournalPhotoInput], ifMatch: IfMatch?,
                         device: DeviceRef) throws(DomainError) -> JournalEntryView {
        try Self.validateEntryID(entryID)
        guard text.utf8.count <= Self.maxEntryTextBytes else {
            throw DomainError.badRequest(message: "text must be at most \(Self.maxEntryTextBytes) bytes.", field: "text")
        }
        try Self.refuseNUL(text, field: "text")
        guard photos.count <= self.configuration.maxBatch else { throw DomainError.batchTooLarge(maxBatch: self.configuration.maxBatch) }
        // Checks that need no storage: bounds (400), duplicates (400), malformed cloud identifiers (422 item).
        var parsed: [Int: CloudIdentifier] = [:]
        var failures: [(index: Int, error: ItemError)] = []
        var locals: [String] = []
        var seenLocal = Set<ByteKey>()   // identifiers are byte strings
        for (i, p) in photos.enumerated() {
            switch p {
            case .localIdentifier(let id):
                guard Identifiers.isValidLocalIdentifier(id) else {
                    throw DomainError.badRequest(message: "A local identifier must be 1 to 255 bytes of UTF-8 without control characters.", field: "photos.localIdentifier")
                }
                guard seenLocal.insert(ByteKey(id)).inserted else {
                    throw DomainError.badRequest(message: "The local identifier \(id) is listed twice.", field: "photos.localIdentifier")
                }
                locals.append(id)
            case .cloudIdentifier(let s):
                if let c = CloudIdentifier(parsing: s) { parsed[i] = c } else { failures.append((i, .invalidIdentifier)) }
            }
        }
        let now = self.now
        return try self.writeAllowed(device, idempotency: nil) { tx, state in
            let limited = state.authorization == .limited
            guard var journal = try Self.findJournal(tx, journalID) else { throw Self.noSuchJournal }
            let existing = try tx.journalEntry(journalID: journalID, entryID: entryID)
            // A PUT may create the entry; `If-Match` on one that does not exist yet fails (RFC 9110 §13.1.1).
            try Self.checkPrecondition(ifMatch, current: existing?.version)

            let assigned = locals.isEmpty ? [:] : try MappingService.assignRecords(tx, device: device, localIdentifiers: locals, core: self.core)
            for (i, p) in photos.enumerated() {
                if case .localIdentifier(let id) = p {
                    if let r = assigned[ByteKey(id)] { parsed[i] = r } else { failures.append((i, .identifierNotFound(limitedLibrary: limited))) }
                }
            }
            if !failures.isEmpty {
                // Thrown inside the transaction: records and links step 3 made above are rolled back too.
                throw Self.unmappablePhotos(photos, failures.sorted { $0.index < $1.index })
            }
            var cloudIDs: [String] = []
            cloudIDs.reserveCapacity(photos.count)
            var seenRecords = Set<String>()
            for i in photos.indices {
                guard let c = parsed[i] else { throw DomainError.internalError(message: "photo \(i) neither parsed nor failed") }
                guard seenRecords.insert(c.guid + ":" + c.type.code).inserted else {
                    throw DomainError.badRequest(message: "The photo \(c.stringValue) is in the entry twice (the same cloud record).", field: "photos")
                }
                cloudIDs.append(c.stringValue)
            }
            var entry = existing ?? StoredJournalEntry(journalID: journalID, entryID: entryID, text: text, photos: [], version: 0, createdSeq: 0)
            if existing == nil || existing?.text != text || existing?.photos != cloudIDs {
                let key = journalID + "/" + entryID
                let entries = existing == nil ? JournalChangeLists(inserted: [key]) : JournalChangeLists(updated: [key])
                entry.text = text
                entry.photos = cloudIDs
                if existing == nil {
                    let quota = self.configuration.quotas.entriesPerJournal
                    if journal.entryCount >= quota { throw DomainError.quotaExceeded(quota: "entriesPerJournal", limit: quota) }
                    journal.entryCount += 1
                }
                try self.commitJournalChange(tx, origin: device, now: now, JournalChangeDetails(journals: JournalChangeLists(updated: [journalID]), entries: entries)) { seq in
                    entry.version = seq
                    if existing == nil { entry.createdSeq = seq }
                    try tx.putJournalEntry(entry)
                    try Self.touch(tx, &journal, seq: seq, now: now)
                }
            }
            return try Self.resolvedView(tx, device: device, entry, limited: limited, core: self.core)
        }
    }

    /// `DELETE /v1/journals/{journalID}/entries/{entryID}`.
    public func deleteEntry(journalID: String, entryID: String, ifMatch: IfMatch?, device: DeviceRef) throws(DomainError) {
        try Self.validateEntryID(entryID)
        let now = self.now
        try self.write(device, idempotency: nil) { tx, _ in
            guard var journal = try Self.findJournal(tx, journalID) else { throw Self.noSuchJournal }
            guard let entry = try tx.journalEntry(journalID: journalID, entryID: entryID) else {
                throw Self.noSuchEntry
            }
            try Self.checkPrecondition(ifMatch, current: entry.version)
            let details = JournalChangeDetails(journals: JournalChangeLists(updated: [journalID]),
                                               entries: JournalChangeLists(deleted: [journalID + "/" + entryID]))
            journal.entryCount = max(0, journal.entryCount - 1)
            try self.commitJournalChange(tx, origin: device, now: now, details) { seq in
                try tx.deleteJournalEntry(journalID: journalID, entryID: entryID)
                try Self.touch(tx, &journal, seq: seq, now: now)
            }
        }
    }

    // MARK: - Helpers shared by the journal operations

    static let noSuchJournal = DomainError.notFound(message: "No such journal.")
    static let noSuchEntry = DomainError.notFound(message: "No such entry.")
    // A request about something that does not exist answers `404` with or without `If-Match`:
    // preconditions are evaluated only when the request would otherwise succeed (RFC 9110
    // §13.2.1). Only a PUT that would create an entry evaluates `If-Match` against nothing: `412`.

    /// Journal IDs are the server's (UUIDs): anything else cannot name one, and is simply not found.
    static func findJournal(_ tx: any AccountReadTransaction, _ journalID: String) throws -> StoredJournal? {
        guard Identifiers.isValidLocalIdentifier(journalID) else { return nil }
        return try tx.journal(journalID: journalID)
    }

    static func validateTitle(_ title: String) throws(DomainError) {
        guard !title.isEmpty, title.utf8.count <= Self.maxTitleBytes else {
            throw DomainError.badRequest(message: "title must be 1 to \(Self.maxTitleBytes) bytes.", field: "title")
        }
        try Self.refuseNUL(title, field: "title")
    }

    /// Entry IDs are the client's: 1–255 bytes of UTF-8 without control characters (the rules of a local identifier).
    static func validateEntryID(_ entryID: String) throws(DomainError) {
        guard Identifiers.isValidLocalIdentifier(entryID) else {
            throw DomainError.badRequest(message: "An entry ID must be 1 to 255 bytes of UTF-8 without control characters.", field: "entryID")
        }
    }

    /// `If-Match` (RFC 9110 §13.1.1): absent passes; `*` passes when the thing exists; a list passes
    /// when it names the current version. Otherwise `versionMismatch` carrying the current version
    /// (none when the thing does not exist).
    static func checkPrecondition(_ ifMatch: IfMatch?, current: Int64?) throws {
        guard let ifMatch else { return }
        guard let current else { throw DomainError.versionMismatch(currentVersion: nil) }
        switch ifMatch {
        case .any: return
        case .versions(let versions):
            let v = Self.versionString(current)
            guard versions.contains(v) else { throw DomainError.versionMismatch(currentVersion: v) }
        }
    }

    static func versionString(_ seq: Int64) -> String { String(seq) }

    static func summary(_ j: StoredJournal) -> JournalSummary {
        JournalSummary(journalID: j.journalID, title: j.title, version: Self.versionString(j.version), entryCount: j.entryCount,
                       createdAt: Date(timeIntervalSince1970: j.createdAt), updatedAt: Date(timeIntervalSince1970: j.updatedAt))
    }

    static func view(_ e: StoredJournalEntry, _ answers: [String: MappingResult]) -> JournalEntryView {
        JournalEntryView(entryID: e.entryID, text: e.text, version: Self.versionString(e.version), photos: e.photos.map { c in
            JournalPhoto(cloudIdentifier: c, result: answers[c] ?? .error(.invalidIdentifier))
        })
    }

    /// `422 unprocessable` naming every photo that could not be mapped, in entry order:
    /// `"photos": [{"index", "localIdentifier" | "cloudIdentifier", "error"}]`.
    static func unmappablePhotos(_ photos: [JournalPhotoInput], _ failures: [(index: Int, error: ItemError)]) -> DomainError {
        let items: [DetailValue] = failures.map { f in
            var fields = [DetailField("index", .int(f.index))]
            switch photos[f.index] {
            case .localIdentifier(let id): fields.append(DetailField("localIdentifier", .string(id)))
            case .cloudIdentifier(let s): fields.append(DetailField("cloudIdentifier", .string(s)))
            }
            fields.append(DetailField("error", f.error.detailValue))
            return .object(fields)
        }
        let first: String
        switch photos[failures[0].index] {
        case .localIdentifier(let id): first = id
        case .cloudIdentifier(let s): first = s
        }
        let message = failures.count == 1 ? "The photo \(first) cannot be mapped; nothing was stored."
            : "\(failures.count) photos cannot be mapped (the first is \(first)); nothing was stored."
        return DomainError.unprocessable(message: message, details: [DetailField("photos", .array(items))])
    }

    /// Resolves every photo of every list (cloud → local) in ONE batch: the distinct identifiers of
    /// all lists go through `resolve` together. Answers are keyed by the stored (canonical) string.
    static func resolvePhotos(_ tx: any MappingReads, device: DeviceRef, _ lists: [[String]], limited: Bool)
        throws -> (answers: [String: MappingResult], links: [(localIdentifier: String, record: CloudRecord)]) {
        // Stored strings are canonical, so distinct strings are distinct identifiers: one slot each.
        var slot: [String: Int] = [:]
        var identifiers: [CloudIdentifier] = []
        var keys: [String] = []
        var unreadable: [String] = []
        for list in lists {
            for s in list where slot[s] == nil {
                guard let c = Self.storedCloudIdentifier(s) else { unreadable.append(s); continue }
                slot[s] = identifiers.count
                identifiers.append(c)
                keys.append(s)
            }
        }
        let resolved = try MappingService.resolve(tx, device: device, identifiers: identifiers, limited: limited)
        var answers: [String: MappingResult] = [:]
        answers.reserveCapacity(keys.count + unreadable.count)
        for (i, s) in keys.enumerated() {
            answers[s] = (i < resolved.answers.count ? resolved.answers[i] : nil) ?? .error(.identifierNotFound(limitedLibrary: limited))
        }
        for s in unreadable { answers[s] = .error(.invalidIdentifier) }
        return (answers, resolved.links)
    }

    /// A stored photo's identifier. Entries hold only canonical strings (`CloudIdentifier.stringValue`:
    /// 36-byte upper-case GUID, `:`, 3-digit type, `:`, fingerprint), so the fixed layout is sliced
    /// without the full parser's validation (the read path of a 2000-photo journal is dominated by
    /// per-photo work); anything else falls back to the full parser.
    static func storedCloudIdentifier(_ s: String) -> CloudIdentifier? {
        let u = s.utf8
        guard u.count >= 41 else { return CloudIdentifier(parsing: s) }
        let colon1 = u.index(u.startIndex, offsetBy: 36)
        let typeStart = u.index(after: colon1)
        let colon2 = u.index(typeStart, offsetBy: 3)
        guard u[colon1] == UInt8(ascii: ":"), u[colon2] == UInt8(ascii: ":"),
              let type = ObjectType(code: String(decoding: u[typeStart..<colon2], as: UTF8.self)) else { return CloudIdentifier(parsing: s) }
        return CloudIdentifier(guid: String(decoding: u[u.startIndex..<colon1], as: UTF8.self), type: type,
                               fingerprint: String(decoding: u[u.index(after: colon2)...], as: UTF8.self))
    }

    /// The entry with its photos resolved for `device`, inside a write transaction: links found by
    /// content are stored right there.
    static func resolvedView(_ tx: any AccountWriteTransaction, device: DeviceRef, _ entry: StoredJournalEntry, limited: Bool, core: ServiceCore) throws -> JournalEntryView {
        let resolved = try Self.resolvePhotos(tx, device: device, [entry.photos], limited: limited)
        if !resolved.links.isEmpty { try MappingService.storeFoundLinks(tx, device: device, resolved.links, core: core) }
        return Self.view(entry, resolved.answers)
    }

    /// One journal change, the only way a journal write happens: the account's next feed sequence
    /// number is handed to `apply` (it becomes the version of what `apply` writes), then the change is
    /// appended to the feed and the feed pruned by the history retention (the same `historyMaxChanges`
    /// and `historyMaxAge` as a device's library history). Runs under the account's write lock, so
    /// sequence numbers commit in order.
    func commitJournalChange<T>(_ tx: any AccountWriteTransaction, origin: DeviceRef, now: Date, _ details: JournalChangeDetails,
                                _ apply: (Int64) throws -> T) throws -> T {
        let feed = try tx.journalFeed()
        let seq = feed.lastChangeSeq + 1
        let result = try apply(seq)
        try tx.appendJournalChange(seq: seq, createdAt: now.timeIntervalSince1970, details: details)
        try WebhookOutbox.journalsChanged(self.core, tx, accountID: origin.accountID, seq: seq, origin: origin.deviceID,
                                          at: now.timeIntervalSince1970)
        let boundary = try self.journalRetentionBoundary(tx, lastSeq: seq, prunedThrough: feed.prunedThroughSeq, now: now)
        if boundary > feed.prunedThroughSeq { try tx.pruneJournalChanges(throughSeq: boundary) }
        return result
    }

    /// Stores the journal with `seq` as its version (one of its entries changed, or its title).
    static func touch(_ tx: any AccountWriteTransaction, _ journal: inout StoredJournal, seq: Int64, now: Date) throws {
        journal.version = seq
        journal.updatedAt = now.timeIntervalSince1970
        try tx.putJournal(journal)
    }

    /// The oldest journal token still valid (`ServiceCore.retentionBoundary`, per account).
    func journalRetentionBoundary(_ tx: any AccountReadTransaction, lastSeq: Int64, prunedThrough: Int64, now: Date) throws -> Int64 {
        try self.core.retentionBoundary(lastSeq: lastSeq, prunedThrough: prunedThrough, now: now) { time in
            try tx.latestJournalChangeSeq(createdAtOrBefore: time)
        }
    }

    // MARK: - The account's journal change feed

    /// `GET /v1/journals/token`: the token of the account's last journal change (valid before any journal exists).
    public func currentJournalChangeToken(device: DeviceRef) throws(DomainError) -> String {
        let feed = try self.read(device) { tx, _ in
            return try tx.journalFeed()
        }
        return self.tokens.encode(seq: feed.lastChangeSeq, scope: .journals(accountID: device.accountID))
    }

    /// `GET /v1/journals/changes?since=&limit=`: journal changes strictly after `since`, in order (the history feed's rules).
    public func journalChanges(since: String, limit: Int?, device: DeviceRef) throws(DomainError) -> JournalChangePage {
        let limit = limit ?? self.configuration.defaultChangesLimit
        guard limit >= 1, limit <= self.configuration.maxChangesLimit else {
            throw DomainError.badRequest(message: "limit must be between 1 and \(self.configuration.maxChangesLimit).", field: "limit")
        }
        let scope = ChangeTokenScope.journals(accountID: device.accountID)
        guard let sinceSeq = self.tokens.decode(since, scope: scope) else { throw DomainError.invalidChangeToken }
        let now = self.now
        let stored = try self.read(device) { tx, _ in
            let feed = try tx.journalFeed()
            // A valid MAC on a seq never reached: a token from a restored or older database.
            guard sinceSeq <= feed.lastChangeSeq else { throw DomainError.invalidChangeToken }
            let boundary = try self.journalRetentionBoundary(tx, lastSeq: feed.lastChangeSeq,
                                                             prunedThrough: feed.prunedThroughSeq, now: now)
            guard sinceSeq >= boundary else { throw DomainError.persistentChangeTokenExpired }
            return try tx.journalChanges(after: sinceSeq, limit: limit + 1)
        }
        return JournalChangePage(stored: stored, limit: limit, since: since, tokens: self.tokens, scope: scope)
    }
}
