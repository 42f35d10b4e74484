/// Room left at the end of an index's arrays once loaded: a sixteenth more (a small account's
/// arrays stay small, as its budget counts capacity). Without it the first write after a load
/// (a change batch of 10 000 into a library of a million) reallocates and copies each array it
/// appends to, tens of megabytes, on the request that catches up with it.
enum Headroom {
    static func capacity(for count: Int) -> Int { count + count / 16 + 16 }
}

extension Array where Element: BitwiseCopyable {
    /// A copy whose capacity is `Headroom.capacity(for: count)`: loading's spare capacity (up to
    /// half of the array) let go, a sixteenth kept for the writes to come. The array itself when
    /// its spare capacity is at most twice that (reserved before the load): no copy.
    func withHeadroom() -> [Element] {
        if self.capacity - self.count <= 2 * (Headroom.capacity(for: self.count) - self.count) { return self }
        return self.withUnsafeBufferPointer { source in
            [Element](unsafeUninitializedCapacity: Headroom.capacity(for: source.count)) { buffer, initialized in
                if let base = source.baseAddress { buffer.baseAddress!.initialize(from: base, count: source.count) }
                initialized = source.count
            }
        }
    }
}
