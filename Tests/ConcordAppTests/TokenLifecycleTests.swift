import ConcordObservability
import ConcordTestSupport
import Foundation
import Synchronization
import Testing

@testable import ConcordApp
@testable import ConcordStorage
@testable import ConcordDomain

/// Token lifecycle, over a real socket on both engines: rotating an account or a
/// device token ends the old one at once and keeps the library; deleting an account deletes
/// every row it owns (counted table by table) and nothing of another account; token times show
/// on the device list; every token event and failed authentication is an audit line without
/// the token.
@Suite struct TokenLifecycleTests {
    /// Rows of `accountID` in each of the account's tables, read straight from the database.
    static func rows(_ server: APIServer, accountID: String, accountKey: Int64?) throws -> [String: Int64] {
        var counts: [String: Int64] = [:]
        if let store = server.app.context.storage.store as? SQLiteStore {
            for table in SQLiteTransaction.accountTables {
                counts[table] = try store.writer.scalarInt("SELECT count(*) FROM \(table) WHERE account_key = ?", [.int(accountKey ?? -1)]) ?? 0
            }
        } else {
            try server.app.context.storage.store.readServer { tx in
                let db = (tx as! PostgresTransaction).db
                for table in PostgresTransaction.accountTables {
                    counts[table] = try db.scalarInt("SELECT count(*)::int8 FROM \(table) WHERE account_id = $1", [.text(accountID)]) ?? 0
                }
                for table in PostgresTransaction.accountKeyTables {
                    counts[table] = try db.scalarInt("SELECT count(*)::int8 FROM \(table) WHERE account_key = $1", [.int(accountKey ?? -1)]) ?? 0
                }
            }
        }
        return counts
    }

    /// The account's integer key (both engines key their large tables by it), read before a deletion.
    static func accountKey(_ server: APIServer, _ accountID: String) throws -> Int64? {
        guard let store = server.app.context.storage.store as? SQLiteStore else {
            return try server.app.context.storage.store.readServer { tx in
                try (tx as! PostgresTransaction).db.scalarInt("SELECT account_key FROM accounts WHERE account_id = $1", [.text(accountID)])
            }
        }
        return try store.writer.scalarInt("SELECT account_key FROM accounts WHERE account_id = ?", [.text(accountID)])
    }

    /// An account with two devices, a library, links, history and a journal entry.
    static func populatedAccount(_ server: APIServer, _ name: String) throws -> (id: String, token: String, device: String) {
        let account = try server.account(name)
        let phone = try server.device(account.token, "phone")
        let tablet = try server.device(account.token, "tablet")
        let fingerprint = String(repeating: "F", count: 43)
        try server.upsert(phone.token, assets: [("p1/L0/001", fingerprint)])
        try server.upsert(tablet.token, assets: [("t1/L0/001", fingerprint)])
        let mapped = try server.call("POST", "/v1/library/cloud-identifiers", token: phone.token, body: #"{"localIdentifiers":["p1/L0/001"]}"#)
        try #require(mapped.status == 200)
        let journal = try server.call("POST", "/v1/journals", token: phone.token, body: #"{"title":"Trip"}"#)
        let journalID = try #require(journal["journalID"]?.stringValue)
        let entry = try server.call("PUT", "/v1/journals/\(journalID)/entries/e1", token: phone.token,
                                    body: #"{"text":"day 1","photos":[{"localIdentifier":"p1/L0/001"}]}"#)
        try #require(entry.status == 200, "\(entry.raw.body)")
        return (account.id, account.token, phone.token)
    }

    @Test(arguments: TestEngine.available)
    func rotatingTokensEndsTheOldOnesAndKeepsTheLibrary(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine)
        let account = try server.account()
        let device = try server.device(account.token)
        try server.upsert(device.token, assets: [("a/L0/001", String(repeating: "A", count: 43))])

        let rotated = try server.call("POST", "/v1/account/token", token: account.token)
        #expect(rotated.status == 200)
        let newAccountToken = try #require(rotated["accountToken"]?.stringValue)
        #expect(newAccountToken != account.token)
        #expect(try server.call("GET", "/v1/devices", token: account.token).status == 401)
        server.app.context.service.core.lastUse.flush()   // last use is written in the background
        let list = try server.call("GET", "/v1/devices", token: newAccountToken)
        #expect(list.status == 200)
        #expect(list.raw.body.contains(#""tokenCreatedAt":"20"#))
        #expect(list.raw.body.contains(#""tokenLastUsedAt":"20"#))   // the upsert used it

        let deviceRotated = try server.call("POST", "/v1/devices/\(device.id)/token", token: newAccountToken)
        #expect(deviceRotated.status == 200)
        #expect(deviceRotated["deviceID"]?.stringValue == device.id)
        let newDeviceToken = try #require(deviceRotated["deviceToken"]?.stringValue)
        #expect(try server.call("GET", "/v1/library/token", token: device.token).status == 401)
        let object = try server.call("GET", "/v1/library/objects/a%2FL0%2F001", token: newDeviceToken)
        #expect(object.status == 200)   // the library stayed
        // A device of another account, or none: 404, nothing rotated.
        let other = try server.account("Other")
        #expect(try server.call("POST", "/v1/devices/\(device.id)/token", token: other.token).status == 404)
        #expect(try server.call("GET", "/v1/library/token", token: newDeviceToken).status == 200)
    }

    @Test(arguments: TestEngine.available)
    func deletingAnAccountDeletesEveryRowItOwnsAndNoOther(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine)
        let gone = try Self.populatedAccount(server, "Gone")
        let kept = try Self.populatedAccount(server, "Kept")
        let goneKey = try Self.accountKey(server, gone.id)
        let keptKey = try Self.accountKey(server, kept.id)
        let keptBefore = try Self.rows(server, accountID: kept.id, accountKey: keptKey)
        let goneBefore = try Self.rows(server, accountID: gone.id, accountKey: goneKey)
        for table in ["accounts", "tokens", "devices", "objects", "records", "changes", "journals", "journal_entries"] {
            #expect(goneBefore[table, default: 0] > 0, "\(table) had no row to delete")
        }

        #expect(try server.call("DELETE", "/v1/account", token: gone.token).status == 204)
        #expect(try Self.rows(server, accountID: gone.id, accountKey: goneKey).values.allSatisfy { $0 == 0 })
        #expect(try Self.rows(server, accountID: kept.id, accountKey: keptKey) == keptBefore)
        #expect(try server.call("GET", "/v1/devices", token: gone.token).status == 401)
        #expect(try server.call("GET", "/v1/library/token", token: gone.device).status == 401)
        #expect(try server.call("GET", "/v1/library/token", token: kept.device).status == 200)

        // The admin's way, and an unknown ID.
        #expect(try server.call("DELETE", "/v1/accounts/\(kept.id)", token: testAdminToken).status == 204)
        #expect(try Self.rows(server, accountID: kept.id, accountKey: keptKey).values.allSatisfy { $0 == 0 })
        #expect(try server.call("DELETE", "/v1/accounts/\(kept.id)", token: testAdminToken).status == 404)
    }

    @Test func tokenEventsAndFailedAuthenticationsAreAuditedWithoutTheToken() throws {
        let lines = Mutex<[String]>([])
        let directory = makeTemporaryDirectory()
        let app = try startApp(testServerConfiguration(.sqlite(path: directory.appendingPathComponent("concord.sqlite").path), quiet: false), sink: LogSink(flushInterval: 0, output: { bytes in
            lines.withLock { $0 += String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init) }
        }))
        defer { app.shutdown() }
        let port = app.port
        func call(_ method: String, _ path: String, _ token: String?, _ body: String = "") throws -> RawResponse {
            try rawRequest(port: port, method, path, headers: token.map { ["Authorization: Bearer \($0)"] } ?? [], body: body)
        }
        let created = try call("POST", "/v1/accounts", testAdminToken, #"{"name":"A"}"#)
        let accountToken = try #require(created.body.split(separator: "\"").first { $0.hasPrefix("cat_") }.map(String.init))
        let device = try call("POST", "/v1/devices", accountToken, #"{"name":"D"}"#)
        let deviceToken = try #require(device.body.split(separator: "\"").first { $0.hasPrefix("cdt_") }.map(String.init))
        _ = try call("POST", "/v1/account/token", accountToken)
        _ = try call("GET", "/v1/library/token", "cdt_guess")
        _ = try call("GET", "/v1/library/token", testAdminToken)
        app.sink.flush()
        let audit = lines.withLock { $0 }.filter { $0.contains(#""audit":true"#) }
        for event in ["token issued", "token rotated", "authentication failed"] {
            #expect(audit.contains { $0.contains(#""msg":"\#(event)""#) }, "no \(event) line")
        }
        #expect(audit.contains { $0.contains(#""reason":"unknown token""#) && $0.contains(#""remoteAddress":"127.0.0.1""#) })
        #expect(audit.contains { $0.contains(#""reason":"admin token""#) })
        let everything = lines.withLock { $0 }.joined()
        for secret in [accountToken, deviceToken, testAdminToken, "cdt_guess"] { #expect(!everything.contains(secret)) }
    }
}

/// `concord rotate-change-key` on a database: exit 0, and the next key signs new tokens.
@Test func rotateChangeKeyCommandAddsAKey() throws {
    let directory = makeTemporaryDirectory()
    let path = directory.appendingPathComponent("c.sqlite").path
    let first = try StorageHook.open(.sqlite(path: path))
    let account = try first.service.accounts.createAccount(name: "A")
    let created = try first.service.accounts.createDevice(accountID: account.accountID, name: "D", platform: nil)
    let device = DeviceRef(accountID: account.accountID, deviceID: created.deviceID)
    let oldToken = try first.service.history.currentChangeToken(device: device)
    first.close()

    #expect(OperatorCommands.run(["rotate-change-key", "--database", "sqlite:" + path], environment: [:]) == 0)
    #expect(OperatorCommands.run(["rotate-change-key", "--to", "x"], environment: [:]) == 2)

    let second = try StorageHook.open(.sqlite(path: path))
    defer { second.close() }
    let newToken = try second.service.history.currentChangeToken(device: device)
    #expect(newToken != oldToken)
    #expect(Base64URL.decode(newToken)?.prefix(2) == [2, 1])
    #expect(try second.service.history.changes(since: oldToken, limit: nil, device: device).changes.isEmpty)
}
