import ConcordTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@testable import ConcordApp
@testable import ConcordStorage

/// A full disk is told honestly: a write that storage cannot take is
/// `507 insufficientStorage` with `Retry-After`, `/ready` is 503 while writes fail, nothing
/// acknowledged is lost, and once space is freed `/ready` and writes recover with no restart.
/// The SQLite file lives on a small tmpfs filled up by a file of our own (mounting needs root,
/// as in CI; without it SQLite's own page limit makes the engine report the same SQLITE_FULL).
@Suite struct StorageFullTests {
    /// A 16 MiB tmpfs at a new directory; nil when this process may not mount.
    static func mountSmallTmpfs() -> URL? {
        let directory = makeTemporaryDirectory()
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/bin/mount")
        mount.arguments = ["-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", directory.path]
        mount.standardError = FileHandle.nullDevice
        guard (try? mount.run()) != nil else { return nil }
        mount.waitUntilExit()
        return mount.terminationStatus == 0 ? directory : nil
    }

    static func unmount(_ directory: URL) {
        let umount = Process()
        umount.executableURL = URL(fileURLWithPath: "/bin/umount")
        umount.arguments = [directory.path]
        try? umount.run()
        umount.waitUntilExit()
    }

    static func freeBytes(_ directory: URL) -> Int {
        var stats = statvfs()
        guard statvfs(directory.path, &stats) == 0 else { return 0 }
        return Int(stats.f_bavail) * Int(stats.f_frsize)
    }

    static func manifest(_ count: Int, prefix: String) -> String {
        let assets = (0..<count).map { #"{"localIdentifier":"\#(prefix)-\#($0)/L0/001","fingerprint":"\#(String(repeating: "Q", count: 43))"}"# }
        return #"{"assets":[\#(assets.joined(separator: ","))]}"#
    }

    /// A server whose SQLite file is on a small disk (a tmpfs when this process may mount, else
    /// SQLite's page limit), with one device that has one acknowledged asset, `kept/L0/001`.
    final class SmallDisk {
        let tmpfs: URL?
        let directory: URL
        let server: APIServer
        let device: (id: String, token: String)
        private var filler: URL { self.directory.appendingPathComponent("filler") }
        private var fillerSize = 0

        init() throws {
            self.tmpfs = StorageFullTests.mountSmallTmpfs()
            self.directory = self.tmpfs ?? makeTemporaryDirectory()
            let path = self.directory.appendingPathComponent("concord.sqlite").path
            self.server = try APIServer { c in c.database = .sqlite(path: path) }
            let account = try self.server.account()
            self.device = try self.server.device(account.token)
            try self.server.upsert(self.device.token, assets: [("kept/L0/001", String(repeating: "A", count: 43))])
        }

        deinit { if let tmpfs { StorageFullTests.unmount(tmpfs) } }

        /// SQLite's page limit: `current` pages above the file's size, nil: none.
        private func setMaxPages(above current: Int?) throws {
            let store = try #require(self.server.app.context.storage.store as? SQLiteStore)
            var limit: Int64 = 1_073_741_823
            if let current { limit = (try store.writer.scalarInt("PRAGMA page_count") ?? 0) + Int64(current) }
            _ = try store.writer.scalarInt("PRAGMA max_page_count=\(limit)")
        }

        /// Fills the disk to the last byte (without a tmpfs: `pages` more pages allowed).
        func fill(pages: Int) throws {
            guard self.tmpfs != nil else { return try self.setMaxPages(above: pages) }
            let fd = open(self.filler.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            try #require(fd >= 0)
            let block = [UInt8](repeating: 0, count: 4096)
            while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 { self.fillerSize += 4096 }
            close(fd)
        }

        /// Frees `bytes` of the filler (without a tmpfs: `pages` more pages allowed).
        func leaveRoom(bytes: Int, pages: Int) throws {
            guard self.tmpfs != nil else { return try self.setMaxPages(above: pages) }
            #expect(truncate(self.filler.path, off_t(self.fillerSize - bytes)) == 0)
        }

        /// Frees the disk.
        func free() throws {
            guard self.tmpfs != nil else { return try self.setMaxPages(above: nil) }
            try FileManager.default.removeItem(at: self.filler)
        }

        func put(_ body: String) throws -> RawResponse {
            try rawRequest(port: self.server.port, "PUT", "/v1/library", headers: ["Authorization: Bearer \(self.device.token)"], body: body)
        }

        func readyStatus() throws -> Int { try rawRequest(port: self.server.port, "GET", "/ready").status }
    }

    @Test func aFullDiskIs507AndNotReadyUntilSpaceIsFreed() throws {
        let disk = try SmallDisk()
        let server = disk.server, device = disk.device

        // Fill the disk to the last byte.
        try disk.fill(pages: 8)
        if disk.tmpfs != nil { #expect(Self.freeBytes(disk.directory) < 4096) }
        let put = try disk.put(Self.manifest(20_000, prefix: "big"))
        #expect(put.status == 507, "\(put.body.prefix(200))")
        #expect(put.body.contains(#""name":"insufficientStorage""#))
        #expect(put.header("Retry-After") != nil)
        #expect(try disk.readyStatus() == 503)
        // Reads still work, and what was acknowledged is there; the refused manifest is not.
        let kept = try server.call("GET", "/v1/library/objects/kept%2FL0%2F001", token: device.token)
        #expect(kept.status == 200)
        #expect(try server.call("GET", "/v1/library/objects/big-0%2FL0%2F001", token: device.token).status == 404)

        // Space freed: ready again without a restart, and the write goes through.
        try disk.free()
        #expect(try disk.readyStatus() == 200)
        let again = try disk.put(Self.manifest(2_000, prefix: "small"))
        #expect(again.status == 200, "\(again.body.prefix(200))")
    }

    /// On a disk with room for a small write but not an ordinary one, the small
    /// write commits — and `/ready` stays 503 (it used to clear the state at once, and its own
    /// probe was too small to fail), until an ordinary write can be stored again.
    @Test func aSmallWriteThatFitsDoesNotMakeAFullDiskReady() throws {
        let disk = try SmallDisk()

        // Fill the disk to the last byte; an ordinary write fails.
        try disk.fill(pages: 4)
        let put = try disk.put(Self.manifest(20_000, prefix: "big"))
        #expect(put.status == 507, "\(put.body.prefix(200))")
        #expect(try disk.readyStatus() == 503)

        // Room for a small write (256 KiB, or 64 pages), not for an ordinary one.
        try disk.leaveRoom(bytes: 256 * 1024, pages: 64)
        try disk.server.upsert(disk.device.token, assets: [("small/L0/001", String(repeating: "C", count: 43))])
        #expect(try disk.readyStatus() == 503)
        #expect(try disk.readyStatus() == 503)
        let ordinary = try disk.put(Self.manifest(20_000, prefix: "big"))
        #expect(ordinary.status == 507)

        // Space freed: ready again.
        try disk.free()
        #expect(try disk.readyStatus() == 200)
    }
}
