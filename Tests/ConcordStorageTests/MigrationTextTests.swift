import ConcordDomain
@testable import ConcordStorage
import Testing

/// A migration already applied to a database must never change: a database migrated by an older
/// build and one migrated by this build have to hold the same schema. The SQL each migration runs is
/// pinned here by its SHA-256, so that sharing or generating schema text between the engines (or
/// between tables) can only ever be a change of how the text is written, never of the text.
/// A new migration adds its line; an existing line never changes.
@Suite struct MigrationTextTests {
    static let sqlite: [Int: String] = [
        1: "3df32b1e8641f61c29552700a0a12b944d6d3ac8aab26c13f40bdc8fb54c5903",
        2: "d8cc6627d1cd1834bd09a37742748b337c5966dde14125aeed21e4e3c3f1ed43",
        3: "750af11b8725123d12a9fafd61625055780015c05e6930dbefad133a80ff0e18",
        4: "ea6e4c8e4ce66c43ae225d57a5b8e5fea6afab1d3caa347a73e8624ec6ce148d",
        5: "e624772e71f50e60db841e2889626c9bfca1c079bdd2cbe7b3056c1ea4fa571c",
        6: "bf26e9b39e213bbc10ae680daeb5a8da4de9ff6031d306b2621ef732161f6163",
        7: "b309ce169a948726552cd76519bf9797a741f72419a1c3fe0a4b81aa7b52ce5a",
        8: "0ffc05ed99a80079685bc6995fc1ebc2dbf8476381316ee502c7154a3a0a1f47",
        9: "95592b075a1e96c60808ec0614202135339c81fb05af9ecd4ddbde47f4ae425f",
        10: "a40a1f60e064c7986aac42fd9ae99ca050b9c38129a9821d64ddca9413a1fb67",
        11: "ddc2fc624e74f3927685c355b84ca77badf1a6c9906a28f5a5dbacaea48539f8",
        12: "20cdcd3e7936972ddd45c74dda61da41db0e284e9a563e4e93ca931e0d982eac",
        13: "097af3eff750cc6555ebcc4817b0f39a60fa64a85b7455876edef9812d402f40",
        14: "fe64a07b7718637def352599bc566725b9f6e94814f522294210b63b1108a700",
        15: "f7a73b4573162c5180b20941885d26ca3c8752c7d0a832fbd8a296cbd90f3f2b",
        16: "e4e5c919a60db5759df8dc5fc3fc8a3f2441834840b70d554de7ea7f5f1ee8bd",
        17: "87735c4f1eb04de0bc6dff53dd68a94394c9e537daaf106282407b6d05660840",
        18: "283b9a816df4abde3dd183064cc59e15a840971e55656f49ebedaea8ab97dd8c",
        19: "626c4f6a8fce3cf8de9b464a9801d2e6b7ffb5ff3b1776ac0be7e98ffdebf862",
        20: "06827bf1f405122146d45693c5cb37088cfe100f8901c12cd72fb570bae3f232",
    ]
    static let postgres: [Int: String] = [
        1: "c9a9129a8e80b3fc24fc759c379b76fcad12535c981a92291a9e06493798c0ca",
        2: "6930c76ac94a19235051704ed88568d9a824e67412f8f5df7520ecd20b0fedfb",
        3: "c9645d9863b5fecdf717db2c85cfd4187f75657ff3a26a0f2cfa14c69b9b47a4",
        4: "707c21097dcab46630c3e218c41651d7bf10e888574212cc7d6211d2bb779d4c",
        5: "27fa0296c0e1de3d2526eb064e48f73c700a0e19dcfaccbc2e59f7ec5cf168cf",
        6: "393cfc00a47ac99c3fba9ad2b45d69ae480d3aefde9a29675d0e3ddd277201df",
        7: "f9b77f4f2b1c99a29b0a35199a34c5a91281a01ffa128eb74c9752cfc0099f66",
        8: "db5ba1dfc8cd2833de5cce0ebd32db3a9f1cecf86a136ab5901c60a49e2b05cd",
        9: "97235021003ec7766057c748544bf2f4f3279da8e4bbfaff34eca8121272fa57",
        10: "3822b3cbeff4d98bd626906173706e1cdd87038f44dd8e47a6228b1585a41bf4",
        11: "fb74e589eafb727ae31dce8b39898380562093555be26819f283edbde5184782",
        12: "e96cea942391c3230f391cc160aa15a6c0c3c24070ef10408c3a08b774e1596a",
        13: "283b9a816df4abde3dd183064cc59e15a840971e55656f49ebedaea8ab97dd8c",
        14: "924720e3d299866a03336835ae8d0b7231c0801bd5698988cb24ea3758712588",
        15: "596ee6b6d46342244a0fc565868ce84055e244626750e5a1e21d3c43b4bea440",
        16: "3bcaefc383898d42069dc6dbb272e6b33b4a72fef354bac4dea931ab1209117f",
        17: "1d93e8bed2a50a0cebdb79c4cf908d9ad511308b4bf9581f36ce1da902285c9a",
        18: "98a73c9579392e6d656f41dab196310df8d83703e0ebe764ec86736628162591",
        19: "a3c1a3afe05f0ec41c0eb75e4546b7d2f4f93ed0accdb00db073364af3a03c5f",
        20: "72467effd7bad608f0db6eb524f0bcb9e2756ca9a7154e274e8a0084d8211735",
        21: "c0390b8184df9727da2252dafbb1b11b647cebb5481cade3c1c5665c0ab1b966",
        22: "0737d60016953d3e4e634e6580f50ad5deef956912bfb181de4b19ec9b97ee3c",
    ]

    static func digests(_ migrations: [(version: Int, sql: String)]) -> [Int: String] {
        var out: [Int: String] = [:]
        for m in migrations {
            out[m.version] = SHA256.hash(Array(m.sql.utf8)).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        }
        return out
    }

    static func source(_ digests: [Int: String]) -> String {
        digests.keys.sorted().map { "        \($0): \"\(digests[$0]!)\"," }.joined(separator: "\n")
    }

    @Test func sqliteMigrationsRunTheSQLTheyAlwaysRan() {
        let now = Self.digests(SQLiteMigrations.all)
        #expect(now == Self.sqlite, "SQLite migrations now:\n\(Self.source(now))")
    }

    @Test func postgresMigrationsRunTheSQLTheyAlwaysRan() {
        let now = Self.digests(PostgresMigrations.all)
        #expect(now == Self.postgres, "PostgreSQL migrations now:\n\(Self.source(now))")
    }
}
