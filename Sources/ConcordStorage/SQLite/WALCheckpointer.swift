import CSQLite
import Dispatch
import Foundation

/// Checkpoints the writer's WAL on a background thread and a connection of its own, so that no
/// request waits for a checkpoint.
///
/// SQLite's automatic checkpoint runs inside the COMMIT that takes the WAL past 1000 pages: that
/// request copies the whole WAL into the database file and waits for two fsyncs (the WAL's, the
/// database's). With random identifiers a batch of 10 000 at a million objects commits ~15 000
/// pages, so each large request paid a checkpoint of its own size in wall time. Here the writer's
/// commit only looks at the WAL's length (its WAL hook, which replaces the automatic checkpoint);
/// past 64 MiB it wakes a background checkpoint (PASSIVE: it blocks neither the writer nor
/// readers). Checkpointing every few tens of MiB instead of every 4 MiB also copies a page that
/// several commits changed once. Past 1 GiB (the background cannot keep up, or a long read pins
/// the WAL) the committing writer checkpoints itself, as SQLite would, so the WAL stays bounded.
/// After a kill -9 the next open reads the WAL's committed frames again (up to ~64 MiB of them).
///
/// Durability is unchanged: a commit is in the WAL (the OS holds it) before COMMIT returns; a
/// checkpoint only copies committed pages, and one cut short by a crash is redone at the next open.
final class WALCheckpointer: @unchecked Sendable {
    // @unchecked Sendable: the flags are read and written under `condition`; `connection` only by
    // the one running checkpoint (`running`), and by `close()` once none runs.
    /// The default bounds: a background checkpoint past 64 MiB of WAL (4 KiB pages), the writer's
    /// own past 1 GiB.
    static let defaultFrames = (background: 16_384, inline: 262_144)
    /// WAL length (pages) past which a commit asks for a background checkpoint.
    private let backgroundFrames: Int
    /// WAL length past which the committing writer checkpoints itself.
    private let inlineFrames: Int

    private let condition = NSCondition()
    private var running = false
    private var requestedAgain = false
    private var closed = false
    private var connection: Connection?
    private let openConnection: () throws -> Connection

    /// `openConnection` opens the checkpoint's own connection (on first use, on the background thread).
    init(frames: (background: Int, inline: Int) = WALCheckpointer.defaultFrames, openConnection: @escaping () throws -> Connection) {
        self.backgroundFrames = frames.background
        self.inlineFrames = frames.inline
        self.openConnection = openConnection
    }

    /// Installs the WAL hook on the writer connection `db`: this object must stay alive until
    /// `detach(from:)` (the hook holds it unretained).
    func attach(to db: Connection) {
        sqlite3_wal_hook(db.handle, { context, db, _, frames in
            guard let context, let db else { return SQLITE_OK }
            Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue().committed(frames: Int(frames), on: db)
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Removes the hook (back to no automatic checkpoint at all on `db`).
    func detach(from db: Connection) {
        sqlite3_wal_hook(db.handle, nil, nil)
    }

    /// Called by the writer's commit (inside it, holding the write lock) with the WAL's length.
    private func committed(frames: Int, on db: OpaquePointer) {
        if frames >= self.inlineFrames {
            sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        } else if frames >= self.backgroundFrames {
            self.request()
        }
    }

    /// Starts a background checkpoint, or asks the running one for another pass when it ends.
    func request() {
        self.condition.lock()
        defer { self.condition.unlock() }
        guard !self.closed else { return }
        if self.running {
            self.requestedAgain = true
            return
        }
        self.running = true
        DispatchQueue.global(qos: .utility).async { self.run() }
    }

    private func run() {
        while true {
            self.checkpointOnce()
            self.condition.lock()
            if self.requestedAgain && !self.closed {
                self.requestedAgain = false
                self.condition.unlock()
                continue
            }
            self.running = false
            self.condition.broadcast()
            self.condition.unlock()
            return
        }
    }

    /// One PASSIVE checkpoint: copies what no reader still needs, and never waits for a lock.
    /// A failure (busy, I/O) leaves the WAL as it is; the next request or the writer's own
    /// checkpoint past the inline bound tries again.
    private func checkpointOnce() {
        // Only this thread uses `connection` while `running` is true; `close()` waits for that.
        if self.connection == nil { self.connection = try? self.openConnection() }
        guard let c = self.connection else { return }
        sqlite3_wal_checkpoint_v2(c.handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
    }

    /// Waits for a running checkpoint, then closes the connection; later requests do nothing.
    func close() {
        self.condition.lock()
        self.closed = true
        while self.running { self.condition.wait() }
        let c = self.connection
        self.connection = nil
        self.condition.unlock()
        c?.close()
    }
}
