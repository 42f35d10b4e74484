import ConcordBytes
import ConcordDomain
import Foundation

/// The store's operations on one connection inside one transaction. Lists of identifiers are
/// bound as one JSON array and expanded with `json_each`, so a batch is one statement.
/// Account and device UUIDs are turned into their integer storage keys once per transaction.
/// This file holds the class, its key cache and what every concern shares; the operations are in
/// one file per storage concern (`SQLiteTransaction+Devices`, `+Objects`, `+Records`, `+Mapping`,
/// `+History`, `+Uploads`, `+Idempotency`, `+Journals`), as the domain's protocols are.
final class SQLiteTransaction: AccountWriteTransaction, ServerWriteTransaction {
    let db: Connection
    /// The account this transaction is scoped to ("" for a server-wide one).
    let accountID: String
    /// Storage keys found so far (kept current by the device concern's inserts and deletes).
    var accountKeys: [String: Int64] = [:]
    var deviceKeys: [DeviceRef: Int64] = [:]
    /// Told of each mapping change and feed append (`TransactionObservers`).
    let observers = TransactionObservers()
    /// Links this transaction set by the row numbers it was given (`setLinks(_:_:rows:)`; tests).
    var linksSetByRow = 0

    init(_ db: Connection, accountID: String) {
        self.db = db
        self.accountID = accountID
    }

    func add(observer: any TransactionObserver) { self.observers.add(observer) }
    var changedMapping: Bool { self.observers.changedMapping }

    // MARK: - Keys

    /// The account's storage key, nil if there is no such account.
    func accountKey(_ accountID: String) throws -> Int64? {
        if let k = self.accountKeys[accountID] { return k }
        guard let k = try self.db.scalarInt("SELECT account_key FROM accounts WHERE account_id = ?", [.text(accountID)]) else { return nil }
        self.accountKeys[accountID] = k
        return k
    }

    /// The device's (account, device) storage keys, nil if there is no such device in that account.
    func keys(_ device: DeviceRef) throws -> (account: Int64, device: Int64)? {
        guard let a = try self.accountKey(device.accountID) else { return nil }
        if let d = self.deviceKeys[device] { return (a, d) }
        guard let d = try self.db.scalarInt("SELECT device_key FROM devices WHERE account_key = ? AND device_id = ?",
                                            [.int(a), .text(device.deviceID)]) else { return nil }
        self.deviceKeys[device] = d
        return (a, d)
    }

    /// Keys for a write: a missing device is `notFound` (deleted while the request ran).
    func requireKeys(_ device: DeviceRef) throws -> (account: Int64, device: Int64) {
        guard let k = try self.keys(device) else { throw DomainError.notFound(message: "No such device.") }
        return k
    }

    // MARK: - Batch queries, in every concern file (json_each drives the join: CROSS JOIN fixes it as the outer loop, so
    // each identifier is one index lookup instead of a scan of the library). Without ANALYZE
    // statistics the planner may prefer another index's (account, device) prefix over the content
    // index, hence INDEXED BY (checked by QueryPlanTests).

    /// Columns of an object row followed by its linked record's type and fingerprint (LEFT JOIN).
    static let objectColumns = StorageRows.objectColumns
    static let linkJoin = "LEFT JOIN records r ON r.account_key = o.account_key AND r.guid = o.record_guid"

    /// `[[type, text], ...]` as JSON: (type, fingerprint) content keys, (type, A) object keys.
    /// `sorted`: in (type, text) order, the text in byte order, for queries whose answer does not
    /// depend on the input's order. Built as bytes: with a `String` per pair and `String <` between
    /// pairs it took 3.5 % of a first mapping's CPU on SQLite.
    static func typedPairsJSON(_ pairs: [(type: ObjectType, text: String)], sorted: Bool = false) -> String {
        var order = Array(pairs.indices)
        if sorted {
            // Byte order of the texts, then grouped by type (a handful of types; stable within each).
            let byText = ByteOrder.positions(of: pairs.map(\.text))
            let types = Set(pairs.map(\.type.rawValue)).sorted()
            order = types.count == 1 ? byText : types.flatMap { t in byText.filter { pairs[$0].type.rawValue == t } }
        }
        var out = [UInt8]()
        out.reserveCapacity(2 + pairs.count * 56)
        out.append(UInt8(ascii: "["))
        for (n, i) in order.enumerated() {
            if n > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "["))
            out.append(contentsOf: String(pairs[i].type.rawValue).utf8)
            out.append(UInt8(ascii: ","))
            appendJSONString(pairs[i].text, to: &out)
            out.append(UInt8(ascii: "]"))
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }

    /// Keys in the order of the B-trees they are looked up in (byte order, SQLite's BINARY
    /// collation), for lookups whose answer does not depend on the input's order: a batch then
    /// visits each page once, in order, instead of jumping about a library larger than the page cache.
    static func inKeyOrder(_ keys: [String]) -> [String] { ByteOrder.positions(of: keys).map { keys[$0] } }
}
