import ConcordBytes
import Foundation

/// `POST /v1/library/uploads`'s answer.
public struct UploadOpened: Sendable, Equatable {
    public var uploadID: String
    public var expiresAt: Date
}

/// A part's answer: parts and objects received so far, all parts together.
public struct UploadProgress: Sendable, Equatable {
    public var parts: Int
    public var objects: Int
}

/// Uploads in parts: a whole library sent as slices, each small enough to resend alone,
/// stored as they arrive and applied at the commit as one `PUT /v1/library`. Parts live in storage
/// (not in memory), and the commit streams them through `LibraryReplacement`, so the server's
/// memory stays bounded by the parts in flight whatever the library's size.
public struct UploadService: ServiceArea {
    let core: ServiceCore

    /// An upload expires this long after its last part (or its opening, while it has none).
    public static let lifetime: TimeInterval = 24 * 3600
    /// Open uploads per device; a third is `409 tooManyUploads`.
    public static let maxOpenPerDevice = 2
    /// Part numbers run 1 through this.
    public static let maxPartNumber = 10_000
    /// Albums and folders checked per round trip at the commit (their members in one query).
    static let containerPage = 500

    /// `POST /v1/library/uploads`. Expired uploads of the account go first, so that they free their
    /// device's places (and storage) without a background sweep.
    public func open(device: DeviceRef, idempotency: IdempotencyScope? = nil) throws(DomainError) -> UploadOpened {
        let now = self.now.timeIntervalSince1970
        let id = self.core.newID()
        return try self.write(device, idempotency: idempotency) { tx, _ in
            try tx.deleteUploads(touchedBefore: now - Self.lifetime)
            guard try tx.uploads(device).count < Self.maxOpenPerDevice else { throw DomainError.tooManyUploads(limit: Self.maxOpenPerDevice) }
            try tx.insertUpload(device, uploadID: id, at: now)
            return UploadOpened(uploadID: id, expiresAt: Date(timeIntervalSince1970: now + Self.lifetime))
        }
    }

    /// `PUT /v1/library/uploads/{uploadID}/parts/{n}`: checked for shape now (each object by
    /// `PUT /v1/library`'s rules, an identifier once within the part), stored, the upload touched.
    /// A part sent again replaces the one of that number. The parts together are bounded by the
    /// device's object quota.
    public func putPart(_ part: Int, of uploadID: String, _ slice: LibrarySnapshot, device: DeviceRef) throws(DomainError) -> UploadProgress {
        guard (1...Self.maxPartNumber).contains(part) else {
            throw DomainError.badRequest(message: "A part number is 1 to \(Self.maxPartNumber).", field: "n")
        }
        // A part is one slice (at most one body): unpacked once, for storage.
        let objects = slice.objects
        var identifiers = SnapshotIdentifiers(capacity: slice.count)
        for (i, o) in objects.enumerated() {
            try LibraryService.validate(o, field: o.type.partName)
            guard identifiers.insert(i, of: slice) else { throw LibraryService.duplicate(o.localIdentifier) }
        }
        let now = self.now.timeIntervalSince1970
        return try self.write(device, idempotency: nil) { tx, _ in
            _ = try self.requireUpload(tx, device, uploadID, now: now)
            let before = try tx.uploadTotals(uploadID: uploadID)
            try tx.putUploadPart(uploadID: uploadID, part: part, objects: objects, at: now)
            let after = try tx.uploadTotals(uploadID: uploadID)
            let quota = self.configuration.quotas.objectsPerDevice
            if after.objects > quota, after.objects > before.objects {
                throw DomainError.quotaExceeded(quota: "objectsPerDevice", limit: quota)
            }
            return UploadProgress(parts: after.parts, objects: after.objects)
        }
    }

    /// `POST /v1/library/uploads/{uploadID}/commit`: every part together applied as `PUT /v1/library`
    /// would apply them, as one change; the upload is gone. A refused commit (`400`, `412`, `422`,
    /// `403`) rolls back whole and leaves the upload open to correct.
    public func commit(_ uploadID: String, reset: Bool, ifMatch: IfMatch? = nil, device: DeviceRef, idempotency: IdempotencyScope? = nil) throws(DomainError) -> LibraryChangeResult {
        let precondition = LibraryService(core: self.core).precondition(ifMatch, device: device)
        let now = self.now.timeIntervalSince1970
        return try self.write(device, idempotency: idempotency) { tx, state in
            _ = try self.requireUpload(tx, device, uploadID, now: now)
            if let repeated = try tx.uploadRepeatedIdentifier(uploadID: uploadID) {
                throw DomainError.badRequest(message: "\(repeated) appears in more than one part of the upload.", field: "localIdentifier")
            }
            try self.checkMembers(tx, uploadID)
            let total = try tx.uploadTotals(uploadID: uploadID).objects
            var after: String?, arrivedAfter: UploadPosition?
            let result = try LibraryService(core: self.core).replace(tx, state, reset: reset, sentCount: total, precondition: precondition, nextSent: {
                let page = try tx.uploadObjectPage(uploadID: uploadID, containersOnly: false, after: after, limit: LibraryReplacement.pageSize)
                after = page.last?.localIdentifier ?? after
                return page
            }, nextArrived: {
                let page = try tx.uploadObjectPageInPartOrder(uploadID: uploadID, after: arrivedAfter, limit: LibraryReplacement.pageSize)
                arrivedAfter = page.last ?? arrivedAfter
                return page.objects
            })
            try tx.deleteUpload(uploadID: uploadID)
            return result
        }
    }

    /// `DELETE /v1/library/uploads/{uploadID}`: the parts are discarded.
    public func delete(_ uploadID: String, device: DeviceRef) throws(DomainError) {
        let now = self.now.timeIntervalSince1970
        try self.write(device, idempotency: nil) { tx, _ in
            _ = try self.requireUpload(tx, device, uploadID, now: now)
            try tx.deleteUpload(uploadID: uploadID)
        }
    }

    /// The device's own, unexpired upload; anything else is `404` as an unknown ID. An expired
    /// one found here is removed.
    private func requireUpload(_ tx: any AccountWriteTransaction, _ device: DeviceRef, _ uploadID: String, now: Double) throws -> StoredUpload {
        guard let upload = try tx.upload(device, uploadID: uploadID) else { throw Self.unknown }
        guard upload.touchedAt > now - Self.lifetime else {
            try tx.deleteUpload(uploadID: uploadID)
            throw Self.unknown
        }
        return upload
    }

    private static let unknown = DomainError.notFound(message: "No such upload (unknown, expired, committed or deleted).")

    /// An album must list assets the upload holds, a folder collections it holds (`422`, as for
    /// `PUT /v1/library`): the upload's albums and folders a page at a time, their members' types
    /// in one query per page.
    private func checkMembers(_ tx: any AccountWriteTransaction, _ uploadID: String) throws {
        var after: String?
        while true {
            let containers = try tx.uploadObjectPage(uploadID: uploadID, containersOnly: true, after: after, limit: Self.containerPage)
            guard let last = containers.last else { return }
            after = last.localIdentifier
            var members = Set<ByteKey>()
            for c in containers { members.formUnion(c.members.lazy.map(ByteKey.init)) }
            var types: [ByteKey: ObjectType] = [:]
            for found in try tx.uploadObjectTypes(uploadID: uploadID, localIdentifiers: members.map(\.string)) {
                types[ByteKey(found.localIdentifier)] = found.type
            }
            try LibraryService.checkMembers(containers, typeOf: { types[ByteKey($0)] })
        }
    }
}
