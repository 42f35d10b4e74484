import Synchronization

/// Asks for `ANALYZE` of `objects`, `records` and `links` once this process has written a tenth of a table
/// (at least 1 000 rows) since its last one. PostgreSQL's autovacuum analyses a table
/// only on its next round (up to a minute later) after such a change, and until then plans its
/// queries with the old row counts: right after a library of 300 000 was uploaded, each of the
/// first mapping requests took 4–6 s instead of 50 ms. Bookkeeping only: the store runs the
/// `ANALYZE` off the request path, one table at a time. A new process starts from the sizes
/// PostgreSQL last estimated (`analysed` at the store's open): a second instance's first write of
/// 1000 links into a table of millions is not due one.
final class TableStatistics: Sendable {
    static let tables = ["objects", "records", "links"]

    private struct Table {
        var written = 0
        /// Rows at its last `ANALYZE` (here, or the estimate found at open; 0: none yet).
        var rows = 0
        var analysing = false
    }

    private let state = Mutex([String: Table]())

    /// After a commit: the tables now due an `ANALYZE` (each marked as being analysed).
    func wrote(objects: Int, records: Int, links: Int = 0) -> [String] {
        guard objects > 0 || records > 0 || links > 0 else { return [] }
        return self.state.withLock { state in
            var due: [String] = []
            for (table, n) in zip(Self.tables, [objects, records, links]) where n > 0 {
                var t = state[table] ?? Table()
                t.written += n
                if !t.analysing, t.written >= max(1_000, t.rows / 10) {
                    t.analysing = true
                    t.written = 0
                    due.append(table)
                }
                state[table] = t
            }
            return due
        }
    }

    /// The `ANALYZE` of `table` ended; `rows`: the table's row estimate after it (nil: it failed).
    func analysed(_ table: String, rows: Int64?) {
        self.state.withLock { state in
            state[table, default: Table()].analysing = false
            if let rows { state[table, default: Table()].rows = Int(max(0, rows)) }
        }
    }

    /// For tests: how many `ANALYZE`s are running.
    var analysing: Int { self.state.withLock { $0.values.count { $0.analysing } } }
}
