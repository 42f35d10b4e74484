import Foundation

/// Uploads in parts: a device's open uploads and their parts, inside the account's one write
/// transaction.
public protocol UploadWrites {
    /// The open uploads of `device` (expired ones included until `deleteUploads(touchedBefore:)`).
    func uploads(_ device: DeviceRef) throws -> [StoredUpload]
    /// The upload with this ID if `device` made it; nil otherwise (unknown, or another device's).
    func upload(_ device: DeviceRef, uploadID: String) throws -> StoredUpload?
    func insertUpload(_ device: DeviceRef, uploadID: String, at time: Double) throws
    /// Removes the upload and its parts.
    func deleteUpload(uploadID: String) throws
    /// Removes the account's uploads last touched before `time`, with their parts.
    func deleteUploads(touchedBefore time: Double) throws
    /// Stores part `part` of the upload (replacing a part of that number) and touches the upload.
    /// The objects' identifiers are distinct (checked by the caller).
    func putUploadPart(uploadID: String, part: Int, objects: [LibraryObject], at time: Double) throws
    /// Parts stored and objects they hold, all parts together.
    func uploadTotals(uploadID: String) throws -> (parts: Int, objects: Int)
    /// A local identifier two parts of the upload hold, if any.
    func uploadRepeatedIdentifier(uploadID: String) throws -> String?
    /// The upload's objects strictly after `after`, in local identifier byte order; only albums and
    /// folders when `containersOnly`.
    func uploadObjectPage(uploadID: String, containersOnly: Bool, after: String?, limit: Int) throws -> [LibraryObject]
    /// The upload's objects strictly after `after`, in the order they arrived: part by part in part
    /// number order, a part's objects in local identifier byte order. `last`: where the page ends.
    func uploadObjectPageInPartOrder(uploadID: String, after: UploadPosition?, limit: Int) throws -> (objects: [LibraryObject], last: UploadPosition?)
    /// The types of those of `localIdentifiers` the upload holds.
    func uploadObjectTypes(uploadID: String, localIdentifiers: [String]) throws -> [(localIdentifier: String, type: ObjectType)]
}

/// An object's place in an upload: its part and its local identifier.
public struct UploadPosition: Sendable, Equatable {
    public var part: Int
    public var localIdentifier: String
    public init(part: Int, localIdentifier: String) {
        self.part = part
        self.localIdentifier = localIdentifier
    }
}
