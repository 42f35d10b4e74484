import ConcordDomain
import Foundation
import Synchronization

/// Whether writes are failing for lack of storage (disk full, read-only, I/O errors), shared by
/// both engines (issue 12). A failed write sets it; the next write that commits clears it.
/// `/ready` answers 503 while it is set, after one small probe write of its own: a full disk
/// freed meanwhile is noticed without waiting for a client's write.
final class WriteHealth: Sendable {
    private let failing = Atomic<Bool>(false)

    var isFailing: Bool { self.failing.load(ordering: .relaxed) }

    /// Runs a write transaction, noting whether storage took it.
    func tracking<T>(_ write: () throws -> T) throws -> T {
        do {
            let result = try write()
            if self.failing.load(ordering: .relaxed) { self.failing.store(false, ordering: .relaxed) }
            return result
        } catch let error as DomainError {
            if case .insufficientStorage = error { self.failing.store(true, ordering: .relaxed) }
            throw error
        }
    }

    /// Whether storage takes writes now: true unless writes are failing and a probe write (one
    /// setting row, rewritten) fails too.
    func probe(_ store: any ConcordStore) -> Bool {
        guard self.isFailing else { return true }
        return (try? store.writeServer { tx in
            try tx.setSetting("readyProbe", Array(String(Date().timeIntervalSince1970).utf8))
        }) != nil
    }
}
