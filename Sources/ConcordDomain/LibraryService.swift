import ConcordBytes
import Foundation

/// A device's library.
public struct LibraryService: ServiceArea {
    let core: ServiceCore

    // MARK: - A device's library

    /// `POST /v1/library/changes`: applied atomically; one history entry when anything changed.
    /// `ifMatch`: the write precondition, checked in the write transaction after the body's own
    /// checks (`checkPrecondition`).
    @discardableResult
    public func applyChanges(_ request: LibraryChangeRequest, ifMatch: IfMatch? = nil, device: DeviceRef, idempotency: IdempotencyScope? = nil) throws(DomainError) -> LibraryChangeResult {
        // The API bounds only PUT /v1/library by the body limit "not by maxBatch": an incremental
        // change request is a batch, so its items (upserts and deletes of all types) count against it.
        let itemCount = [ObjectType.asset, .assetCollection, .collectionList].reduce(0) { $0 + request.part($1).upsert.count + request.part($1).delete.count }
        guard itemCount <= self.configuration.maxBatch else { throw DomainError.batchTooLarge(maxBatch: self.configuration.maxBatch) }
        // Identifiers are byte strings: sets and maps of them are keyed by their bytes.
        var seen = Set<ByteKey>()
        var upserts: [LibraryObject] = []
        var deletes: [(type: ObjectType, id: String)] = []
        for type in [ObjectType.asset, .assetCollection, .collectionList] {
            let part = request.part(type)
            for var object in part.upsert {
                object.type = type
                try Self.validate(object, field: type.partName + ".upsert")
                guard seen.insert(ByteKey(object.localIdentifier)).inserted else { throw Self.duplicate(object.localIdentifier) }
                upserts.append(object)
            }
            for id in part.delete {
                guard Identifiers.isValidLocalIdentifier(id) else {
                    throw DomainError.badRequest(message: "A local identifier must be 1 to 255 bytes of UTF-8 without control characters.", field: type.partName + ".delete")
                }
                guard seen.insert(ByteKey(id)).inserted else { throw Self.duplicate(id) }
                deletes.append((type, id))
            }
        }
        let precondition = self.precondition(ifMatch, device: device)
        let now = self.now
        return try self.write(device, idempotency: idempotency) { tx, state in
            // One query for every identifier the request names, members included.
            var wanted = seen
            for o in upserts { wanted.formUnion(o.members.map(ByteKey.init)) }
            var existing: [ByteKey: StoredObject] = [:]
            for s in try self.core.storedObjects(tx, device, localIdentifiers: wanted.map(\.string)) { existing[ByteKey(s.object.localIdentifier)] = s }

            var details = ChangeDetails()
            var puts: [StoredObject] = []
            var news: [StoredObject] = []   // not stored: inserted without a lookup of their identifiers
            var deleteIDs: [String] = []
            var unchanged = 0
            var takes: [(object: LibraryObject, record: CloudRecord)] = []
            for sent in upserts {
                if let old = existing[ByteKey(sent.localIdentifier)] {
                    guard old.object.type == sent.type else { throw Self.typeChange(sent.localIdentifier, from: old.object.type, to: sent.type) }
                    let o = Self.merged(sent, keeping: old.object)
                    if old.object == o { unchanged += 1; continue }
                    let link = Self.keptLink(old, new: o, reset: false)
                    puts.append(StoredObject(object: o, link: link))
                    if let link, Self.givesRecordMore(old.object, o) { takes.append((o, link)) }
                    details[o.type].updated.append(o.localIdentifier)
                } else {
                    news.append(StoredObject(object: sent, link: nil))
                    details[sent.type].inserted.append(sent.localIdentifier)
                }
            }
            for (type, id) in deletes {
                guard let old = existing[ByteKey(id)] else { continue }   // unknown: ignored
                guard old.object.type == type else {
                    throw DomainError.badRequest(message: "\(id) is in \(old.object.type.partName), not \(type.partName).", field: type.partName + ".delete")
                }
                deleteIDs.append(id)
                details[type].deleted.append(id)
            }
            // Members must exist after the request applies (a batch of assets lists none: no map to build).
            if upserts.contains(where: { !$0.members.isEmpty }) {
                var after: [ByteKey: ObjectType] = [:]
                for (id, s) in existing { after[id] = s.object.type }
                for id in deleteIDs { after[ByteKey(id)] = nil }
                for o in upserts { after[ByteKey(o.localIdentifier)] = o.type }
                try Self.checkMembers(upserts, typeOf: { after[ByteKey($0)] })
            }
            // PhotoKit semantics: a deleted asset leaves every album, a deleted collection every folder.
            // An identifier appears once per request, so a deleted one is never re-added here.
            let upserted = deleteIDs.isEmpty ? [] : Set(upserts.lazy.map { ByteKey($0.localIdentifier) })
            let cascaded = try Self.removeDeletedMembers(tx, device, deleted: deleteIDs, typeOf: { existing[ByteKey($0)]?.object.type },
                                                         skipping: upserted)
            for s in cascaded {
                puts.append(s)
                details[s.object.type].updated.append(s.object.localIdentifier)
            }

            let ins = details.count(\.inserted), upd = details.count(\.updated), del = deleteIDs.count
            try Self.checkPrecondition(precondition, state: state, tokens: self.tokens)
            var seq = state.lastChangeSeq
            if !details.isEmpty {
                try self.checkObjectQuota(state.objectCount + ins - del)
                try tx.putObjects(device, puts)
                if !news.isEmpty { try tx.insertNewObjects(device, news) }
                try tx.deleteObjects(device, localIdentifiers: deleteIDs)
                try MappingService.recordsTake(tx, takes)
                seq = try HistoryService.appendChange(self.core, tx, state, details: details, now: now, objectCount: state.objectCount + ins - del)
            }
            return LibraryChangeResult(changeToken: self.tokens.encode(seq: seq, scope: .library(device)),
                                       inserted: ins, updated: upd, deleted: del, unchanged: unchanged)
        }
    }

    /// A library may hold `quotas.objectsPerDevice` objects.
    func checkObjectQuota(_ count: Int) throws(DomainError) {
        let quota = self.configuration.quotas.objectsPerDevice
        if count > quota { throw DomainError.quotaExceeded(quota: "objectsPerDevice", limit: quota) }
    }

    /// `PUT /v1/library`: the whole library; the difference to what is stored becomes one change.
    /// `reset`: one change whose details are unavailable, and every link of the device dropped.
    /// `ifMatch`: the write precondition, as for `applyChanges`.
    @discardableResult
    public func replaceLibrary(_ snapshot: LibrarySnapshot, reset: Bool, ifMatch: IfMatch? = nil, device: DeviceRef) throws(DomainError) -> LibraryChangeResult {
        // The snapshot stays packed: an object is unpacked to be checked, and again when its page
        // of the merge comes; identifiers are compared as the snapshot's bytes.
        var identifiers = SnapshotIdentifiers(capacity: snapshot.count)
        for i in 0..<snapshot.count {
            let o = snapshot[i]
            try Self.validate(o, field: o.type.partName)
            guard identifiers.insert(i, of: snapshot) else { throw Self.duplicate(o.localIdentifier) }
        }
        for i in 0..<snapshot.count where snapshot.type(at: i) != .asset {
            try Self.checkMembers([snapshot[i]], typeOf: { identifiers.number(of: $0, in: snapshot).map(snapshot.type(at:)) })
        }
        identifiers = SnapshotIdentifiers(capacity: 0)
        // The merge takes the sent library in byte order, a page at a time; new objects are written
        // in the body's order.
        let order = snapshot.numbersInIdentifierOrder()
        let precondition = self.precondition(ifMatch, device: device)
        return try self.write(device, idempotency: nil) { tx, state in
            var offset = 0, arrived = 0
            return try self.replace(tx, state, reset: reset, sentCount: order.count, precondition: precondition, nextSent: {
                let page = order[offset..<min(offset + LibraryReplacement.pageSize, order.count)].map { snapshot[$0] }
                offset += page.count
                return page
            }, nextArrived: {
                let page = (arrived..<min(arrived + LibraryReplacement.pageSize, snapshot.count)).map { snapshot[$0] }
                arrived += page.count
                return page
            })
        }
    }

    /// Replaces the device's library by the one `nextSent` gives, a page at a time in byte order
    /// (`nextArrived`: the same in arrival order), its own rules checked already
    /// (`LibraryReplacement`), and appends the change to the history.
    func replace(_ tx: any AccountWriteTransaction, _ state: DeviceState, reset: Bool, sentCount: Int, precondition: Precondition?,
                 nextSent: () throws -> [LibraryObject], nextArrived: () throws -> [LibraryObject]) throws -> LibraryChangeResult {
        var preconditionFailure: DomainError?
        do { try Self.checkPrecondition(precondition, state: state, tokens: self.tokens) } catch { preconditionFailure = error }
        var quotaFailure: DomainError?
        do { try self.checkObjectQuota(sentCount) } catch { quotaFailure = error }
        var replacement = LibraryReplacement(tx: tx, device: state.ref, reset: reset, preconditionFailure: preconditionFailure,
                                             quotaFailure: quotaFailure, storedCount: state.objectCount, sentCount: sentCount)
        let (changed, details, unchanged) = try replacement.run(nextSent: nextSent, nextArrived: nextArrived)
        var seq = state.lastChangeSeq
        if changed {
            seq = try HistoryService.appendChange(self.core, tx, state, details: reset ? nil : details, now: self.now, objectCount: sentCount)
        }
        return LibraryChangeResult(changeToken: self.tokens.encode(seq: seq, scope: .library(state.ref)),
                                   inserted: details.count(\.inserted), updated: details.count(\.updated),
                                   deleted: details.count(\.deleted), unchanged: unchanged)
    }

    /// `GET /v1/library/objects/{localIdentifier}`.
    public func object(localIdentifier: String, device: DeviceRef) throws(DomainError) -> LibraryObject {
        guard Identifiers.isValidLocalIdentifier(localIdentifier) else {
            throw DomainError.badRequest(message: "A local identifier must be 1 to 255 bytes of UTF-8 without control characters.", field: "localIdentifier")
        }
        let found = try self.read(device) { tx, _ in
            return try tx.objects(device, localIdentifiers: [localIdentifier]).first
        }
        guard let found else { throw DomainError.notFound(message: "No object with this local identifier.") }
        return found.object
    }

    /// `GET /v1/library/objects?type=&after=&limit=`: paged in local identifier byte order, of one
    /// type or (nil) of every type. Identifiers are unique across types, so the first `limit` of the
    /// types' pages merged are the library's next `limit`.
    public func listObjects(type: ObjectType?, after: String?, limit: Int?, device: DeviceRef) throws(DomainError) -> ObjectPage {
        let limit = limit ?? self.configuration.defaultObjectsLimit
        guard limit >= 1, limit <= self.configuration.maxObjectsLimit else {
            throw DomainError.badRequest(message: "limit must be between 1 and \(self.configuration.maxObjectsLimit).", field: "limit")
        }
        if let after, !Identifiers.isValidLocalIdentifier(after) {
            throw DomainError.badRequest(message: "after must be a local identifier.", field: "after")
        }
        let types = type.map { [$0] } ?? ObjectType.allCases
        var objects = try self.read(device) { tx, _ in
            try types.flatMap { try tx.objectPage(device, type: $0, after: after, limit: limit + 1) }
        }
        if types.count > 1 { objects.sort { $0.localIdentifier.utf8Precedes($1.localIdentifier) } }
        var next: String?
        if objects.count > limit {
            objects.removeLast(objects.count - limit)
            next = objects.last?.localIdentifier
        }
        return ObjectPage(objects: objects, next: next)
    }

    /// `PUT /v1/library/authorization`.
    public func setAuthorization(_ status: AuthorizationStatus, device: DeviceRef) throws(DomainError) {
        try self.write(device, idempotency: nil) { tx, _ in
            try tx.setAuthorization(device, status)
        }
    }

    // MARK: - Write precondition

    /// What a library write's `If-Match` asks for, decoded before the write transaction begins
    /// (decoding may look up a rotated key in storage, which must not wait inside the writer).
    enum Precondition: Equatable {
        /// `*`: the device's library always exists, so it always matches.
        case any
        /// The change sequence numbers the strong tags name (tags that are not this device's library
        /// tokens name none). Empty: nothing can match.
        case seqs(Set<Int64>)
    }

    /// `ifMatch` in sequence numbers of this device's library history; nil without `If-Match`.
    /// A tag matches when it is a valid token of this device's library naming its current change:
    /// the same change's token signed with an earlier key (before `rotate-change-key`) is the same
    /// entity, so a client holding the token of its own last write is never taken for a copy.
    func precondition(_ ifMatch: IfMatch?, device: DeviceRef) -> Precondition? {
        switch ifMatch {
        case nil: return nil
        case .any?: return .any
        case .versions(let tags)?:
            let scope = ChangeTokenScope.library(device)
            return .seqs(Set(tags.compactMap { self.tokens.decode($0, scope: scope) }))
        }
    }

    /// Inside the write transaction, after every check of the body (a request that would be `400`
    /// or `422` stays so whatever `If-Match` says) and before anything is stored: the write applies
    /// only when the precondition names the device's current change; otherwise `412 versionMismatch`
    /// carrying the current token. The account's write lock makes check and write one step, so of
    /// two writers holding one token exactly one applies.
    static func checkPrecondition(_ precondition: Precondition?, state: DeviceState, tokens: ChangeTokenCodec) throws(DomainError) {
        switch precondition {
        case nil, .any?: return
        case .seqs(let seqs)?:
            guard !seqs.contains(state.lastChangeSeq) else { return }
            throw DomainError.changeTokenMismatch(currentChangeToken: tokens.encode(seq: state.lastChangeSeq, scope: .library(state.ref)))
        }
    }

    // MARK: - Helpers

    /// Albums listing a deleted asset and folders listing a deleted collection, with those members
    /// removed (order kept) and their links kept (the fingerprint is unchanged). Containers deleted in
    /// the same request are skipped (they are gone), and so are those in `skipping` (upserted in the
    /// same request: the client's list is what it wants, and `checkMembers` holds it to the rule).
    /// Built from existing store primitives so every engine gets it: one paged scan of the device's
    /// albums (or folders) by type, only when the request deletes something they can list, then one
    /// batched read of the changed ones for their links.
    static func removeDeletedMembers(_ tx: any AccountWriteTransaction, _ device: DeviceRef, deleted: [String],
                                     typeOf: (String) -> ObjectType?, skipping: Set<ByteKey>) throws -> [StoredObject] {
        guard !deleted.isEmpty else { return [] }
        let gone = Set(deleted.map(ByteKey.init))
        var deletedAssets = Set<ByteKey>()
        var deletedCollections = Set<ByteKey>()
        for id in deleted {
            switch typeOf(id) {
            case .asset: deletedAssets.insert(ByteKey(id))
            case .assetCollection, .collectionList: deletedCollections.insert(ByteKey(id))
            case nil: break
            }
        }
        var changed: [ByteKey: [String]] = [:]   // container → its new member list
        var order: [String] = []
        for (containerType, removed) in [(ObjectType.assetCollection, deletedAssets), (.collectionList, deletedCollections)] where !removed.isEmpty {
            var after: String?
            while true {
                let page = try tx.objectPage(device, type: containerType, after: after, limit: Self.containerScanPage)
                for c in page where !gone.contains(ByteKey(c.localIdentifier)) && !skipping.contains(ByteKey(c.localIdentifier)) {
                    guard c.members.contains(where: { removed.contains(ByteKey($0)) }) else { continue }
                    changed[ByteKey(c.localIdentifier)] = c.members.filter { !removed.contains(ByteKey($0)) }
                    order.append(c.localIdentifier)
                }
                guard page.count == Self.containerScanPage, let last = page.last else { break }
                after = last.localIdentifier
            }
        }
        guard !order.isEmpty else { return [] }
        var stored: [ByteKey: StoredObject] = [:]
        for s in try tx.objects(device, localIdentifiers: order) { stored[ByteKey(s.object.localIdentifier)] = s }
        var result: [StoredObject] = []
        result.reserveCapacity(order.count)
        for id in order {
            guard var s = stored[ByteKey(id)], let members = changed[ByteKey(id)] else { continue }
            s.object.members = members
            result.append(s)
        }
        return result
    }

    /// Page size of the container scan: one round trip for all but very large libraries of albums.
    static let containerScanPage = 10_000

    /// What is stored after `sent` is applied over `stored`: a fingerprint or
    /// `photoKitCloudIdentifier` not sent (or `null`) keeps the stored one.
    static func merged(_ sent: LibraryObject, keeping stored: LibraryObject) -> LibraryObject {
        var o = sent
        if o.fingerprint.isEmpty { o.fingerprint = stored.fingerprint }
        if o.photoKitCloudIdentifier == nil { o.photoKitCloudIdentifier = stored.photoKitCloudIdentifier }
        return o
    }

    /// The link an updated object keeps: none after a reset or when its fingerprint changed
    /// from one value to another (new content); a fingerprint appearing, or a new key, keeps it.
    static func keptLink(_ old: StoredObject, new: LibraryObject, reset: Bool) -> CloudRecord? {
        guard !reset, old.object.fingerprint.isEmpty || old.object.fingerprint == new.fingerprint else { return nil }
        return old.link
    }

    /// Whether the linked record takes something from the update: a key it may not carry yet,
    /// or a fingerprint it may lack.
    static func givesRecordMore(_ old: LibraryObject, _ new: LibraryObject) -> Bool {
        (new.key != nil && new.key != old.key) || (!old.hasFingerprint && new.hasFingerprint)
    }

    static func validate(_ o: LibraryObject, field: String) throws(DomainError) {
        guard Identifiers.isValidLocalIdentifier(o.localIdentifier) else {
            throw DomainError.badRequest(message: "A local identifier must be 1 to 255 bytes of UTF-8 without control characters.", field: field + ".localIdentifier")
        }
        if let pk = o.photoKitCloudIdentifier, PhotoKitCloudIdentifier.keyPart(pk, type: o.type) == nil {
            throw DomainError.badRequest(message: "photoKitCloudIdentifier of \(o.localIdentifier) \(PhotoKitCloudIdentifier.rule).",
                                         field: field + ".photoKitCloudIdentifier")
        }
        guard o.fingerprint.isEmpty || Identifiers.isValidFingerprint(o.fingerprint) else {
            throw DomainError.badRequest(message: "fingerprint of \(o.localIdentifier) must be base64url without padding of 16 to 64 bytes.", field: field + ".fingerprint")
        }
        for (value, name) in [(o.creationDate, "creationDate"), (o.modificationDate, "modificationDate")] {
            if let value, !RFC3339.isValid(value) {
                throw DomainError.badRequest(message: "\(name) of \(o.localIdentifier) must be an RFC 3339 time.", field: field + "." + name)
            }
        }
        if let title = o.title, title.utf8.count > 4096 {
            throw DomainError.badRequest(message: "title of \(o.localIdentifier) is longer than 4096 bytes.", field: field + ".title")
        }
        if let title = o.title, title.utf8.contains(0) {
            throw DomainError.badRequest(message: "title of \(o.localIdentifier) contains U+0000, which cannot be stored.", field: field + ".title")
        }
        for m in o.members where !Identifiers.isValidLocalIdentifier(m) {
            throw DomainError.badRequest(message: "members of \(o.localIdentifier) must be local identifiers.",
                                         field: field + (o.type == .collectionList ? ".collections" : ".assets"))
        }
    }

    /// An album must list assets of the library, a folder collections of the library (422 naming them).
    static func checkMembers(_ objects: [LibraryObject], typeOf: (String) -> ObjectType?) throws(DomainError) {
        for o in objects where !o.members.isEmpty {
            let missing: [String]
            if o.type == .assetCollection {
                missing = o.members.filter { typeOf($0) != .asset }
            } else if o.type == .collectionList {
                missing = o.members.filter { let t = typeOf($0); return t != .assetCollection && t != .collectionList }
            } else {
                continue
            }
            guard let first = missing.first else { continue }
            let what = o.type == .assetCollection ? "asset" : "collection"
            throw DomainError.unprocessable(
                message: "\(o.localIdentifier) lists \(what) \(first), which the library lacks.",
                details: [DetailField("localIdentifier", .string(o.localIdentifier)),
                          DetailField("missing", .array(missing.map { .string($0) }))])
        }
    }

    static func duplicate(_ id: String) -> DomainError {
        .badRequest(message: "\(id) appears more than once in the request.", field: "localIdentifier")
    }

    static func typeChange(_ id: String, from: ObjectType, to: ObjectType) -> DomainError {
        .badRequest(message: "\(id) is in \(from.partName); an identifier keeps its type.", field: to.partName)
    }
}
