#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ConcordDomain

/// The mapping index's snapshots as files in one directory, one per account
/// (`mappingIndexSnapshots`; ConcordMappingIndex/IndexSnapshot.swift). A snapshot is
/// written to a temporary file and renamed over the old one, so a reader sees a whole old one or
/// a whole new one. Not synced to disk: a snapshot torn by a power cut fails its checksum and costs
/// one load from the tables.
public final class IndexSnapshotDirectory: MappingIndexSnapshotStore {
    public let path: String

    /// Creates the directory (owner only) when missing, and removes the temporary files of saves
    /// a killed process left.
    public init(path: String) throws {
        self.path = path
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw SnapshotFileError(message: "cannot create the snapshot directory \(path): \(String(cString: strerror(errno)))")
        }
        guard let directory = opendir(path) else {
            throw SnapshotFileError(message: "cannot read the snapshot directory \(path): \(String(cString: strerror(errno)))")
        }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasSuffix(".index") { continue }
            if name.contains(".index.tmp-") { unlink(path + "/" + name) }
        }
    }

    /// The account's file: its ID as it is when made of letters, digits, '-' and '_' (Concord's
    /// IDs are), else in hex.
    public func file(_ accountID: String) -> String {
        let plain = !accountID.isEmpty && accountID.utf8.count <= 128
            && accountID.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D || $0 == 0x5F }
        let hex = accountID.utf8.prefix(128).map { ($0 < 0x10 ? "0" : "") + String($0, radix: 16) }.joined()   // two digits a byte: one name per ID
        let name = plain ? accountID : "x" + hex
        return self.path + "/" + name + ".index"
    }

    public func open(account accountID: String) -> (any MappingIndexSnapshotInput)? {
        let fd = Glibc.open(self.file(accountID), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0 else { Glibc.close(fd); return nil }
        return FileSnapshotInput(fd: fd, size: Int(info.st_size))
    }

    public func save(account accountID: String, _ body: (any MappingIndexSnapshotOutput) throws -> Void) throws {
        let target = self.file(accountID)
        let temporary = target + ".tmp-\(getpid())"
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SnapshotFileError(message: "cannot create \(temporary): \(String(cString: strerror(errno)))") }
        let output = FileSnapshotOutput(fd: fd)
        do {
            try body(output)
            try output.flush()
            Glibc.close(fd)
        } catch {
            Glibc.close(fd)
            unlink(temporary)
            throw error
        }
        guard rename(temporary, target) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw SnapshotFileError(message: "cannot rename \(temporary): \(reason)")
        }
    }

    public func remove(account accountID: String) {
        unlink(self.file(accountID))
    }
}

public struct SnapshotFileError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { self.message }
}

/// Reads through a 1 MiB buffer; a read at least that large goes straight into the caller's memory.
final class FileSnapshotInput: MappingIndexSnapshotInput {
    private let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 1 << 20)
    private var start = 0, end = 0
    private(set) var remaining: Int

    init(fd: Int32, size: Int) {
        self.fd = fd
        self.remaining = size
    }

    func read(into target: UnsafeMutableRawBufferPointer) throws {
        guard target.count <= self.remaining else { throw SnapshotFileError(message: "the snapshot ends early") }
        var done = 0
        let buffered = min(self.end - self.start, target.count)
        if buffered > 0 {
            self.buffer.withUnsafeBytes { b in target.baseAddress!.copyMemory(from: b.baseAddress! + self.start, byteCount: buffered) }
            self.start += buffered
            done = buffered
        }
        while done < target.count {
            let wanted = target.count - done
            if wanted >= self.buffer.count {
                done += try self.readSome(into: target.baseAddress! + done, wanted)
            } else {
                let n = try self.buffer.withUnsafeMutableBytes { try self.readSome(into: $0.baseAddress!, $0.count) }
                let taken = min(n, wanted)
                self.buffer.withUnsafeBytes { b in (target.baseAddress! + done).copyMemory(from: b.baseAddress!, byteCount: taken) }
                self.start = taken
                self.end = n
                done += taken
            }
        }
        self.remaining -= target.count
    }

    /// One `read` of up to `count` bytes (at least one), again when a signal interrupted it.
    private func readSome(into target: UnsafeMutableRawPointer, _ count: Int) throws -> Int {
        while true {
            let n = Glibc.read(self.fd, target, count)
            if n > 0 { return n }
            if n < 0 && errno == EINTR { continue }
            throw SnapshotFileError(message: "cannot read the snapshot: \(n == 0 ? "it ends early" : String(cString: strerror(errno)))")
        }
    }

    func close() { Glibc.close(self.fd) }
}

/// Writes through a 1 MiB buffer; a write at least that large goes straight to the file.
final class FileSnapshotOutput: MappingIndexSnapshotOutput {
    private let fd: Int32
    private var buffer: [UInt8] = []

    init(fd: Int32) {
        self.fd = fd
        self.buffer.reserveCapacity(1 << 20)
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        if self.buffer.count + bytes.count > self.buffer.capacity { try self.flush() }
        if bytes.count >= self.buffer.capacity {
            try self.writeAll(bytes)
        } else {
            self.buffer.append(contentsOf: bytes)
        }
    }

    func flush() throws {
        try self.buffer.withUnsafeBytes { try self.writeAll($0) }
        self.buffer.removeAll(keepingCapacity: true)
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(self.fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw SnapshotFileError(message: "cannot write the snapshot: \(String(cString: strerror(errno)))") }
            done += n
        }
    }
}
