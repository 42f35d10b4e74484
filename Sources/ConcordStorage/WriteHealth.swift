import ConcordDomain
import Foundation
import Synchronization

/// Whether writes are failing for lack of storage (disk full, read-only, I/O errors), shared by
/// both engines. A failed write sets it; only a probe write of ordinary size
/// clears it.
///
/// A small write can still commit on a disk that cannot take an ordinary one — into SQLite's free
/// pages or the room left in its WAL file —, so a client's small write that commits says nothing
/// (one such write used to clear the state while every manifest still failed). `/ready`
/// therefore answers 503 while the state is set and a probe of `probeBytes` (random, so no engine
/// can compress it away) cannot be stored; once one is, the state clears and the probe's row is
/// emptied again.
final class WriteHealth: Sendable {
    /// The size of the probe: an ordinary write (a change batch of a few thousand objects).
    static let probeBytes = 1 << 20

    private let failing = Atomic<Bool>(false)
    private let probeBytes: Int

    init(probeBytes: Int = WriteHealth.probeBytes) {
        self.probeBytes = probeBytes
    }

    var isFailing: Bool { self.failing.load(ordering: .relaxed) }

    /// Runs a write transaction, noting whether storage took it. A failure for lack of storage
    /// sets the state; a success does not clear it (it may have been small: see the type).
    func tracking<T>(_ write: () throws -> T) throws -> T {
        do {
            return try write()
        } catch let error as DomainError {
            if case .insufficientStorage = error { self.failing.store(true, ordering: .relaxed) }
            throw error
        }
    }

    /// Whether storage takes writes now: true unless writes are failing and a probe write of
    /// `probeBytes` (one setting row) fails too. A probe that is stored clears the state. While
    /// writes fail, each `/ready` writes one probe (and nothing is written while they do not).
    func probe(_ store: any ConcordStore) -> Bool {
        guard self.isFailing else { return true }
        let payload = Secrets.randomBytes(self.probeBytes)
        let stored = (try? store.writeServer { tx in try tx.setSetting("readyProbe", payload) }) != nil
        if stored {
            // Give the space back for clients' writes (the engine keeps it for its next pages).
            _ = try? store.writeServer { tx in try tx.setSetting("readyProbe", []) }
            self.failing.store(false, ordering: .relaxed)
        }
        return stored
    }
}
