@testable import ConcordStorage
import Foundation
import Testing

/// Checkpoints off the request path (WALCheckpointer): a commit past the background bound is copied
/// into the database file by a background checkpoint; past the inline bound, by the writer itself.
@Suite struct WALCheckpointTests {
    /// About 1.5 MB of new pages in one commit (~370 WAL frames of 4 KiB).
    static let largeCommit = """
        CREATE TABLE filler (b BLOB);
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500) INSERT INTO filler SELECT randomblob(3000) FROM n
        """

    static func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
    }

    @Test func aLargeCommitIsCopiedIntoTheDatabaseFileInTheBackground() throws {
        let dir = try TempDir()
        let store = try SQLiteStore(path: dir.db, checkpointFrames: (background: 64, inline: 1 << 30))
        try store.writer.execute(Self.largeCommit)
        // The commit returned without a checkpoint; the background one follows (no bound on its speed here).
        let deadline = Date().addingTimeInterval(60)
        while Self.fileSize(dir.db) < 1_500_000 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(Self.fileSize(dir.db) >= 1_500_000)
        #expect(try store.writer.scalarInt("SELECT count(*) FROM filler") == 500)
        store.close()
        #expect(try SQLiteStore(path: dir.db).writer.scalarInt("SELECT count(*) FROM filler") == 500)
    }

    @Test func pastTheInlineBoundTheCommitCheckpointsItself() throws {
        let dir = try TempDir()
        let store = try SQLiteStore(path: dir.db, checkpointFrames: (background: 1 << 30, inline: 64))
        try store.writer.execute(Self.largeCommit)
        #expect(Self.fileSize(dir.db) >= 1_500_000)
    }

    @Test func smallCommitsLeaveTheDatabaseFileAlone() throws {
        let dir = try TempDir()
        let store = try SQLiteStore(path: dir.db, checkpointFrames: (background: 1 << 30, inline: 1 << 30))
        let before = Self.fileSize(dir.db)
        try store.writer.execute(Self.largeCommit)
        #expect(Self.fileSize(dir.db) == before)
        // Nothing is lost for it: the rows are in the WAL, and a clean close folds them in.
        store.close()
        #expect(try SQLiteStore(path: dir.db).writer.scalarInt("SELECT count(*) FROM filler") == 500)
    }
}
