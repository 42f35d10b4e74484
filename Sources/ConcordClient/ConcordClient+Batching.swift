import Foundation

extension ConcordClient {
    /// Runs `perform` over `items` in chunks of at most the batch size, reassembling the answers
    /// in the items' order. `perform` must answer one result per item, in order.
    ///
    /// A `413 batchTooLarge` naming a smaller `maxBatch` lowers the client's batch size and the
    /// refused chunk is split again; the rest of the batch uses the smaller size too.
    func batched<Item: Sendable, Result: Sendable>(
        _ items: [Item], perform: @escaping @Sendable ([Item]) async throws -> [Result]
    ) async throws -> [Result] {
        guard !items.isEmpty else { return [] }
        let chunks = Self.chunks(items, size: self.batchLimit.value)
        let concurrency = max(1, self.configuration.batchConcurrency)
        if chunks.count == 1 || concurrency == 1 {
            var results: [Result] = []
            results.reserveCapacity(items.count)
            for chunk in chunks { results += try await self.runChunk(chunk, perform: perform) }
            return results
        }
        // A sliding window of `concurrency` chunks; answers land in their chunk's slot.
        return try await withThrowingTaskGroup(of: (Int, [Result]).self) { group in
            var slots = [[Result]](repeating: [], count: chunks.count)
            var next = 0
            while next < min(concurrency, chunks.count) {
                let index = next, chunk = chunks[index]
                group.addTask { (index, try await self.runChunk(chunk, perform: perform)) }
                next += 1
            }
            while let (index, result) = try await group.next() {
                slots[index] = result
                if next < chunks.count {
                    let index = next, chunk = chunks[index]
                    group.addTask { (index, try await self.runChunk(chunk, perform: perform)) }
                    next += 1
                }
            }
            return slots.flatMap { $0 }
        }
    }

    private func runChunk<Item: Sendable, Result: Sendable>(
        _ chunk: [Item], perform: @escaping @Sendable ([Item]) async throws -> [Result]
    ) async throws -> [Result] {
        let results: [Result]
        do {
            results = try await perform(chunk)
        } catch let error as ConcordError where error.name == "batchTooLarge" {
            // Only a strictly smaller size makes progress; anything else would loop.
            guard let max = error.maxBatch, max >= 1, max < chunk.count else { throw error }
            self.batchLimit.lower(to: max)
            var results: [Result] = []
            for sub in Self.chunks(chunk, size: self.batchLimit.value) {
                results += try await self.runChunk(sub, perform: perform)
            }
            return results
        }
        guard results.count == chunk.count else {
            throw ConcordError(status: 200, name: "invalidResponse", message: "Asked \(chunk.count) items, answered \(results.count).")
        }
        return results
    }

    static func chunks<Item>(_ items: [Item], size: Int) -> [[Item]] {
        let size = max(1, size)
        return stride(from: 0, to: items.count, by: size).map { Array(items[$0..<min($0 + size, items.count)]) }
    }
}
