import ConcordTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@testable import ConcordApp
@testable import ConcordStorage

/// A full disk is told honestly (issue 12): a write that storage cannot take is
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

    @Test func aFullDiskIs507AndNotReadyUntilSpaceIsFreed() throws {
        let tmpfs = Self.mountSmallTmpfs()
        defer { if let tmpfs { Self.unmount(tmpfs) } }
        let directory = tmpfs ?? makeTemporaryDirectory()
        let server = try APIServer { c in c.database = .sqlite(path: directory.appendingPathComponent("concord.sqlite").path) }
        let account = try server.account()
        let device = try server.device(account.token)
        try server.upsert(device.token, assets: [("kept/L0/001", String(repeating: "A", count: 43))])

        // Fill the disk to the last byte.
        let filler = directory.appendingPathComponent("filler")
        if tmpfs != nil {
            let fd = open(filler.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            try #require(fd >= 0)
            let block = [UInt8](repeating: 0, count: 4096)
            while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
            close(fd)
            #expect(Self.freeBytes(directory) < 4096)
        } else {
            let store = try #require(server.app.context.storage.store as? SQLiteStore)
            let pages = try store.writer.scalarInt("PRAGMA page_count") ?? 0
            _ = try store.writer.scalarInt("PRAGMA max_page_count=\(pages + 8)")
        }
        let put = try rawRequest(port: server.port, "PUT", "/v1/library", headers: ["Authorization: Bearer \(device.token)"],
                                 body: Self.manifest(20_000, prefix: "big"))
        #expect(put.status == 507, "\(put.body.prefix(200))")
        #expect(put.body.contains(#""name":"insufficientStorage""#))
        #expect(put.header("Retry-After") != nil)
        #expect(try rawRequest(port: server.port, "GET", "/ready").status == 503)
        // Reads still work, and what was acknowledged is there; the refused manifest is not.
        let kept = try server.call("GET", "/v1/library/objects/kept%2FL0%2F001", token: device.token)
        #expect(kept.status == 200)
        #expect(try server.call("GET", "/v1/library/objects/big-0%2FL0%2F001", token: device.token).status == 404)

        // Space freed: ready again without a restart, and the write goes through.
        if tmpfs != nil {
            try FileManager.default.removeItem(at: filler)
        } else {
            let store = try #require(server.app.context.storage.store as? SQLiteStore)
            _ = try store.writer.scalarInt("PRAGMA max_page_count=1073741823")
        }
        #expect(try rawRequest(port: server.port, "GET", "/ready").status == 200)
        let again = try rawRequest(port: server.port, "PUT", "/v1/library", headers: ["Authorization: Bearer \(device.token)"],
                                   body: Self.manifest(2_000, prefix: "small"))
        #expect(again.status == 200, "\(again.body.prefix(200))")
    }

    /// Issue 23, defect 3: on a disk with room for a small write but not an ordinary one, the small
    /// write commits — and `/ready` stays 503 (it used to clear the state at once, and its own
    /// probe was too small to fail), until an ordinary write can be stored again.
    @Test func aSmallWriteThatFitsDoesNotMakeAFullDiskReady() throws {
        let tmpfs = Self.mountSmallTmpfs()
        defer { if let tmpfs { Self.unmount(tmpfs) } }
        let directory = tmpfs ?? makeTemporaryDirectory()
        let server = try APIServer { c in c.database = .sqlite(path: directory.appendingPathComponent("concord.sqlite").path) }
        let account = try server.account()
        let device = try server.device(account.token)
        try server.upsert(device.token, assets: [("kept/L0/001", String(repeating: "A", count: 43))])

        // Fill the disk to the last byte; an ordinary write fails.
        let filler = directory.appendingPathComponent("filler")
        var fillerSize = 0
        if tmpfs != nil {
            let fd = open(filler.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            try #require(fd >= 0)
            let block = [UInt8](repeating: 0, count: 4096)
            while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 { fillerSize += 4096 }
            close(fd)
        } else {
            let store = try #require(server.app.context.storage.store as? SQLiteStore)
            let pages = try store.writer.scalarInt("PRAGMA page_count") ?? 0
            _ = try store.writer.scalarInt("PRAGMA max_page_count=\(pages + 4)")
        }
        let put = try rawRequest(port: server.port, "PUT", "/v1/library", headers: ["Authorization: Bearer \(device.token)"],
                                 body: Self.manifest(20_000, prefix: "big"))
        #expect(put.status == 507, "\(put.body.prefix(200))")
        #expect(try rawRequest(port: server.port, "GET", "/ready").status == 503)

        // Room for a small write (256 KiB, or 64 pages), not for an ordinary one.
        if tmpfs != nil {
            #expect(truncate(filler.path, off_t(fillerSize - 256 * 1024)) == 0)
        } else {
            let store = try #require(server.app.context.storage.store as? SQLiteStore)
            let pages = try store.writer.scalarInt("PRAGMA page_count") ?? 0
            _ = try store.writer.scalarInt("PRAGMA max_page_count=\(pages + 64)")
        }
        try server.upsert(device.token, assets: [("small/L0/001", String(repeating: "C", count: 43))])
        #expect(try rawRequest(port: server.port, "GET", "/ready").status == 503)
        #expect(try rawRequest(port: server.port, "GET", "/ready").status == 503)
        let ordinary = try rawRequest(port: server.port, "PUT", "/v1/library", headers: ["Authorization: Bearer \(device.token)"],
                                      body: Self.manifest(20_000, prefix: "big"))
        #expect(ordinary.status == 507)

        // Space freed: ready again.
        if tmpfs != nil {
            try FileManager.default.removeItem(at: filler)
        } else {
            let store = try #require(server.app.context.storage.store as? SQLiteStore)
            _ = try store.writer.scalarInt("PRAGMA max_page_count=1073741823")
        }
        #expect(try rawRequest(port: server.port, "GET", "/ready").status == 200)
    }
}
