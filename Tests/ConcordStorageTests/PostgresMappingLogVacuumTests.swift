import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordStorage

/// The mapping log's pruned rows leave their bytes in its TOAST table until a vacuum: an instance
/// vacuums `mapping_deltas` itself once it has logged `mappingLogVacuumBytes`, off the request path.
@Suite(.enabled(if: TestEngine.postgresAvailable, Comment(rawValue: TestEngine.postgresSkipReason)))
struct PostgresMappingLogVacuumTests {
    @Test func theLogIsVacuumedOnceItsBytesAddUp() throws {
        try OldSchemaDatabase.postgresSchema(atVersion: PostgresMigrations.latestVersion, seed: "") { url in
            let store = try PostgresStore(configuration: PostgresConfiguration(url: url, poolSize: 2))
            defer { store.close() }
            let probe = try PGConnection(parameters: PostgresConfiguration(url: url).connectionParameters)
            defer { probe.close() }
            let vacuums = "SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = 'mapping_deltas'::regclass"
            let before = try probe.scalarInt(vacuums) ?? 0
            let row = [UInt8](repeating: 7, count: PostgresStore.mappingLogVacuumBytes / 3)
            for version in 1...2 {   // short of the bound: no vacuum
                try store.write(account: "acc") { tx in try (tx as! PostgresTransaction).appendMappingLog(version: Int64(version), changes: row) }
            }
            Thread.sleep(forTimeInterval: 0.5)
            #expect(try probe.scalarInt(vacuums) ?? 0 == before)
            try store.write(account: "acc") { tx in try (tx as! PostgresTransaction).appendMappingLog(version: 3, changes: row + [1, 2, 3]) }
            var after = before
            for _ in 0..<100 where after == before {
                Thread.sleep(forTimeInterval: 0.1)
                after = try probe.scalarInt(vacuums) ?? 0
            }
            #expect(after == before + 1)
        }
    }
}
