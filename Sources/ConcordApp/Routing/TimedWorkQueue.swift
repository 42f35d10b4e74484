import ConcordDomain

/// The pending work of a scheduler: a binary min-heap of (deadline, sequence) over the work still
/// scheduled. The sequence (the token's id) breaks ties, so equal deadlines run in the order they
/// were scheduled. Cancelled work leaves the table at once and its heap entry is skipped when it
/// surfaces; the heap is rebuilt when such entries outnumber the live ones.
struct TimedWorkQueue {
    private var heap: [(deadline: Int64, id: UInt64)] = []
    private var work: [UInt64: @Sendable () -> Void] = [:]
    private var nextID: UInt64 = 1

    /// Work scheduled and not yet taken or cancelled.
    var count: Int { self.work.count }

    mutating func add(at deadline: Int64, _ work: @escaping @Sendable () -> Void) -> ScheduledWork {
        let id = self.nextID
        self.nextID += 1
        self.work[id] = work
        self.push((deadline, id))
        return ScheduledWork(id: id)
    }

    /// True when the work was pending (it is now gone).
    mutating func cancel(_ token: ScheduledWork) -> Bool {
        guard self.work.removeValue(forKey: token.id) != nil else { return false }
        // Entries of cancelled work are dropped in one pass once they are most of the heap
        // (long-polls answered early cancel their deadline: the heap must not grow with them).
        if self.heap.count > 64 && self.heap.count > 2 * self.work.count {
            self.heap = self.heap.filter { self.work[$0.id] != nil }
            self.heap.sort { Self.before($0, $1) }   // a sorted array is a valid heap
        }
        return true
    }

    /// The earliest deadline of work still pending.
    mutating func nextDeadline() -> Int64? {
        self.dropCancelledTop()
        return self.heap.first?.deadline
    }

    /// Takes the earliest work whose deadline is at or before `now`.
    mutating func takeDue(_ now: Int64) -> (@Sendable () -> Void)? {
        self.dropCancelledTop()
        guard let first = self.heap.first, first.deadline <= now else { return nil }
        self.popTop()
        return self.work.removeValue(forKey: first.id)
    }

    /// Empties the queue; what was pending never runs.
    mutating func removeAll() {
        self.heap = []
        self.work = [:]
    }

    private mutating func dropCancelledTop() {
        while let first = self.heap.first, self.work[first.id] == nil { self.popTop() }
    }

    private static func before(_ a: (deadline: Int64, id: UInt64), _ b: (deadline: Int64, id: UInt64)) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.id < b.id
    }

    private mutating func push(_ entry: (deadline: Int64, id: UInt64)) {
        self.heap.append(entry)
        var child = self.heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(self.heap[child], self.heap[parent]) else { break }
            self.heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popTop() {
        let last = self.heap.removeLast()
        guard !self.heap.isEmpty else { return }
        self.heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < self.heap.count, Self.before(self.heap[left], self.heap[smallest]) { smallest = left }
            if right < self.heap.count, Self.before(self.heap[right], self.heap[smallest]) { smallest = right }
            if smallest == parent { break }
            self.heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
