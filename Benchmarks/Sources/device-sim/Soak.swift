// The soak. Several simulated devices of a few accounts send a mixed load for
// `--minutes` against one instance or several sharing a database (every request goes to an
// instance picked at random), while a sampler reads each server's /proc every `--interval`
// seconds (VmRSS, open descriptors, threads) and the database's size. At the end everything
// acknowledged is read back. Writes a plot-ready CSV (`--csv`) and prints Markdown on stdout.
//
//   device-sim soak --ports P[,P2] --pids PID[,PID2] --admin-token T --csv FILE
//                   (--sqlite-file PATH | --pg-url URL) [--engine NAME] [--minutes 30]
//                   [--interval 60] [--warmup 5] [--accounts 3] [--devices 3] [--assets 2000]
//                   [--think-ms 25] [--poll-wait 15] [--rotate-seconds 120]
//
// The mix, per device (one thread each, one keep-alive connection per instance):
//   - local→cloud batches (100 of its identifiers): every one must map, to the same record as
//     before while the object lives with its fingerprint;
//   - cloud→local batches: 50 of its own cloud identifiers (each must come back as its own local
//     identifier) and 50 other devices' (any per-item answer);
//   - library changes (`POST /v1/library/changes`, If-Match its last token, an Idempotency-Key):
//     5 new assets, 3 updated, sometimes a fingerprint changed, 5 deleted; the counts are checked;
//     some sent with a stale If-Match (412 expected, naming the current token); some resent with
//     the same key (the same status and body expected, `Idempotent-Replayed: true`);
//   - journal entry writes (each device owns its entries: If-Match its last version; some with a
//     stale version: 412 expected, naming the current one) and journal reads;
//   - token rotation every ~`--rotate-seconds` (the account token rotates the device's; the
//     rotation is resent with its key: a replayed 409 naming the device and not the token is
//     expected; the old token must get 401).
// And per device a long-poll on its library feed, per account one on the journal feed, held
// `--poll-wait` seconds and woken by the writes; a poll held with a rotated token gets 401
// (expected). Any other status, or any answer that contradicts what the device knows, is an
// unexpected error, counted and reported.
#if canImport(Glibc)
import Glibc
#endif
import ConcordJSON
import Foundation
import Synchronization
import typealias ConcordDomain.SHA256

// MARK: - Settings

struct SoakSettings {
    /// The instances (one port and one pid each, in the same order): requests go to one at random,
    /// the sampler reads each one's /proc.
    var ports: [Int]
    var pids: [Int32]
    var adminToken: String
    /// Where the samples go, one row per instance per interval.
    var csv: String
    /// The database whose size is sampled: a SQLite file or a PostgreSQL URL; `engine` names it.
    var sqliteFile: String?
    var pgURL: String?
    var engine: String
    /// How long the load runs; a sample every `interval` seconds.
    var minutes: Double
    var interval: Double
    /// Minutes of the start left out of the growth figures (caches filling, indexes loading).
    var warmup: Double
    /// Accounts, devices per account, assets per device at the start.
    var accounts: Int
    var devices: Int
    var assets: Int
    /// A device's pause between operations, and how long its long-polls are held.
    var thinkMS: Int
    var pollWait: Int
    /// About how often a device's token is rotated (0.5 to 1.5 times this, at random).
    var rotateSeconds: Double
    /// Percent of new assets (and of fingerprint changes) with content no device had: each
    /// makes a new cloud record for good (records outlive their objects), so the
    /// account's records and the mapping index grow. 0 (default): new assets are photos of the
    /// account's shared set, and a deleted asset's record is taken again by a later copy of its
    /// content on that device. Records still accumulate, more and more slowly: a device that comes
    /// to hold more copies of a photo than any record count of it needs one more (measured with
    /// PostgreSQL: 6 950 → 18 290 records in 14 minutes, 1 000 a minute at first, 300 at the end).
    var newContent: Int

    static func parse() -> SoakSettings? {
        func list(_ name: String) -> [String] { (option(name) ?? "").split(separator: ",").map(String.init) }
        let ports = list("--ports").compactMap { Int($0) }
        let pids = list("--pids").compactMap { Int32($0) }
        guard !ports.isEmpty, pids.count == ports.count, let admin = option("--admin-token"), let csv = option("--csv") else { return nil }
        let minutes = Double(option("--minutes") ?? "30") ?? 30
        return SoakSettings(
            ports: ports, pids: pids, adminToken: admin, csv: csv,
            sqliteFile: option("--sqlite-file"), pgURL: option("--pg-url"), engine: option("--engine") ?? "sqlite",
            minutes: minutes, interval: Double(option("--interval") ?? "60") ?? 60,
            warmup: Double(option("--warmup") ?? "") ?? max(0, (minutes / 6).rounded()),
            accounts: max(1, intOption("--accounts", 3)), devices: max(2, intOption("--devices", 3)),
            assets: max(100, intOption("--assets", 2000)), thinkMS: max(0, intOption("--think-ms", 25)),
            pollWait: max(1, intOption("--poll-wait", 15)), rotateSeconds: Double(option("--rotate-seconds") ?? "120") ?? 120,
            newContent: min(100, max(0, intOption("--new-content", 0))))
    }
}

// MARK: - Counters

struct SoakCounts {
    var requests: [Int]
    var errors: [Int]
    var expected: [Int]
    var operations: [String: Int] = [:]
    var expectedKinds: [String: Int] = [:]
    var unexpectedKinds: [String: Int] = [:]
    var examples: [String] = []
}

final class SoakStats: Sendable {
    let counts: Mutex<SoakCounts>
    let stop = Atomic<Bool>(false)

    init(instances: Int) {
        self.counts = Mutex(SoakCounts(requests: Array(repeating: 0, count: instances), errors: Array(repeating: 0, count: instances),
                                       expected: Array(repeating: 0, count: instances)))
    }

    /// One answer (or transport failure) from `instance`: fine, an error the mix asked for, or not.
    func answer(_ instance: Int, ok: Bool, expectedKind: String? = nil, unexpected: String? = nil, detail: String = "") {
        self.counts.withLock { c in
            c.requests[instance] += 1
            if let kind = expectedKind {
                c.expected[instance] += 1
                c.expectedKinds[kind, default: 0] += 1
            } else if !ok {
                c.errors[instance] += 1
                let kind = unexpected ?? "unexpected"
                c.unexpectedKinds[kind, default: 0] += 1
                if c.examples.count < 30 { c.examples.append("\(kind): \(detail.prefix(240))") }
            }
        }
    }

    /// An answer with the right status whose content contradicts what the device knows.
    func contradiction(_ instance: Int, _ kind: String, _ detail: String) {
        self.counts.withLock { c in
            c.errors[instance] += 1
            c.unexpectedKinds[kind, default: 0] += 1
            if c.examples.count < 30 { c.examples.append("\(kind): \(detail.prefix(240))") }
        }
    }

    func operation(_ name: String, _ n: Int = 1) { self.counts.withLock { $0.operations[name, default: 0] += n } }
    var stopped: Bool { self.stop.load(ordering: .relaxed) }
}

// MARK: - Shared state

/// A device's token, shared by its worker and its poll thread. `generation` counts rotations;
/// `rotating` is set before the rotation is sent, so a poll answered 401 meanwhile knows why.
final class SoakDevice: Sendable {
    let account: Int
    let index: Int        // within the account
    let global: Int
    let deviceID: String
    let token: Mutex<(value: String, generation: Int, rotating: Bool)>

    init(account: Int, index: Int, global: Int, deviceID: String, token: String) {
        self.account = account; self.index = index; self.global = global; self.deviceID = deviceID
        self.token = Mutex((token, 0, false))
    }
    var current: (value: String, generation: Int, rotating: Bool) { self.token.withLock { $0 } }
}

final class SoakAccount: Sendable {
    let accountToken: String
    let journals: [String]
    let photos: PhotoSet
    /// Cloud identifiers any device of the account has been given (a ring): other devices ask for them.
    let pool = Mutex<(ids: [String], next: Int)>(([], 0))

    init(accountToken: String, journals: [String], photos: PhotoSet) {
        self.accountToken = accountToken; self.journals = journals; self.photos = photos
    }

    func share(_ ids: [String]) {
        self.pool.withLock { p in
            for id in ids {
                if p.ids.count < 4000 { p.ids.append(id) } else { p.ids[p.next] = id; p.next = (p.next + 1) % 4000 }
            }
        }
    }
    func sample(_ n: Int, _ rng: inout SplitMix) -> [String] {
        self.pool.withLock { p in p.ids.isEmpty ? [] : (0..<n).map { _ in p.ids[rng.below(p.ids.count)] } }
    }
}

/// An acknowledged journal entry: what the last `200` said.
struct KnownEntry {
    var journal: String
    var version: String
    var previousVersion: String?
    var text: String
    var photos: [String]
}

/// What a device worker knows, handed back for the read-back.
struct DeviceKnowledge {
    var assets: [String: (fingerprint: String, favorite: Bool)] = [:]
    var cloudOf: [String: String] = [:]
    var entries: [String: KnownEntry] = [:]   // entryID → entry
}

func encodeQuery(_ s: String) -> String { s.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? s }

/// `GUID:type` of a cloud identifier: the record, whatever the fingerprint spelling.
func recordOf(_ cloud: String) -> String { cloud.split(separator: ":", omittingEmptySubsequences: false).prefix(2).joined(separator: ":") }

// MARK: - A device's connections

/// One keep-alive connection per instance; every request counted in `stats` by instance.
final class SoakClient {
    let ports: [Int]
    var connections: [HTTPConnection?]
    let stats: SoakStats

    init(ports: [Int], stats: SoakStats) {
        self.ports = ports; self.stats = stats
        self.connections = Array(repeating: nil, count: ports.count)
    }

    /// Sends `request` to `instance`; nil (counted as an unexpected error) on a transport failure.
    func send(_ instance: Int, _ request: RawRequest, what: String) -> RawResponse? {
        do {
            if self.connections[instance] == nil { self.connections[instance] = try HTTPConnection(port: self.ports[instance]) }
            return try self.connections[instance]!.send(request)
        } catch {
            self.connections[instance] = nil
            self.stats.answer(instance, ok: false, unexpected: "transport (\(what))", detail: "\(error)")
            usleep(100_000)
            return nil
        }
    }

    /// Sends and classifies: `expect` is fine; `expectedError` statuses count as errors the mix
    /// asked for (`kind`); anything else is unexpected. Returns the answer when it was `expect`
    /// or an expected error.
    @discardableResult
    func exchange(_ instance: Int, _ request: RawRequest, what: String, expect: Int = 200,
                  expectedError: (status: Int, kind: String)? = nil) -> RawResponse? {
        guard let answer = self.send(instance, request, what: what) else { return nil }
        if answer.status == expect {
            self.stats.answer(instance, ok: true)
            return answer
        }
        if let e = expectedError, answer.status == e.status {
            self.stats.answer(instance, ok: false, expectedKind: e.kind)
            return answer
        }
        self.stats.answer(instance, ok: false, unexpected: "\(what): \(answer.status)",
                          detail: String(decoding: answer.body.prefix(300), as: UTF8.self))
        return nil
    }
}

// MARK: - The device worker

final class SoakWorker {
    let s: SoakSettings
    let device: SoakDevice
    let account: SoakAccount
    let stats: SoakStats
    let client: SoakClient
    var rng: SplitMix
    var knowledge = DeviceKnowledge()
    var ids: [String] = []
    var position: [String: Int] = [:]
    var libraryToken: String
    var previousLibraryToken: String?
    var sequence = 0
    var nextRotation: Double

    init(_ s: SoakSettings, device: SoakDevice, account: SoakAccount, stats: SoakStats, library: DeviceLibrary, token: String) {
        self.s = s; self.device = device; self.account = account; self.stats = stats
        self.client = SoakClient(ports: s.ports, stats: stats)
        self.rng = SplitMix(state: 0x50AC_0000 &+ UInt64(device.global) &* 7919)
        self.libraryToken = token
        self.nextRotation = 0
        for (i, local) in library.localIdentifiers.enumerated() {
            let p = library.photoIndex[i]
            self.knowledge.assets[local] = (account.photos.fingerprints[p], p % 37 == 0)
            self.add(local)
        }
        self.nextRotation = now() + s.rotateSeconds * (0.5 + Double(self.rng.below(1000)) / 1000)
    }

    private func add(_ local: String) { self.position[local] = self.ids.count; self.ids.append(local) }
    private func remove(_ local: String) {
        guard let i = self.position.removeValue(forKey: local) else { return }
        let last = self.ids.removeLast()
        if i < self.ids.count { self.ids[i] = last; self.position[last] = i }
    }
    private func instance() -> Int { self.s.ports.count == 1 ? 0 : self.rng.below(self.s.ports.count) }
    private var token: String { self.device.current.value }
    private func pick(_ n: Int) -> [String] {
        var chosen = Set<String>()
        while chosen.count < min(n, self.ids.count) { chosen.insert(self.ids[self.rng.below(self.ids.count)]) }
        return Array(chosen)
    }

    func run(until end: Double) {
        while now() < end && !self.stats.stopped {
            if now() >= self.nextRotation {
                self.rotate()
                self.nextRotation = now() + self.s.rotateSeconds * (0.5 + Double(self.rng.below(1000)) / 1000)
            }
            let roll = self.rng.below(100)
            switch roll {
            case 0..<28: self.localToCloud()
            case 28..<48: self.cloudToLocal()
            case 48..<70: self.libraryChange()
            case 70..<90: self.journalWrite()
            default: self.journalRead()
            }
            if self.s.thinkMS > 0 { usleep(UInt32(self.s.thinkMS * 1000)) }
        }
    }

    /// One mapping batch through an instance picked at random, counted as `operation`: the
    /// instance and the answer's items, or nil when there was no answer (counted by `exchange`) or
    /// it does not hold one item per identifier asked (counted here).
    func mapBatch(_ asked: [String], localToCloud: Bool, operation: String) -> (Int, [(String, found: String?, error: String?)])? {
        let direction = localToCloud ? "local→cloud" : "cloud→local"
        let inst = self.instance()
        let request = localToCloud
            ? RawRequest("POST", "/v1/library/cloud-identifiers", token: self.token, body: identifiersBody("localIdentifiers", asked[...]))
            : RawRequest("POST", "/v1/library/local-identifiers", token: self.token, body: identifiersBody("cloudIdentifiers", asked[...]))
        guard let answer = self.client.exchange(inst, request, what: direction) else { return nil }
        self.stats.operation(operation)
        let (askedKey, foundKey) = localToCloud ? ("localIdentifier", "cloudIdentifier") : ("cloudIdentifier", "localIdentifier")
        guard let items = try? mappings(answer.body, askedKey: askedKey, foundKey: foundKey), items.count == asked.count else {
            self.stats.contradiction(inst, "\(direction) answer unreadable", String(decoding: answer.body.prefix(200), as: UTF8.self))
            return nil
        }
        return (inst, items)
    }

    // Local → cloud: every identifier maps, to the record it mapped to before.
    func localToCloud() {
        let asked = self.pick(100)
        guard let (inst, items) = self.mapBatch(asked, localToCloud: true, operation: "local→cloud batches (100 ids)") else { return }
        var fresh: [String] = []
        for (i, item) in items.enumerated() {
            guard item.0 == asked[i], let cloud = item.found else {
                self.stats.contradiction(inst, "local→cloud: an existing asset did not map", "\(asked[i]): \(item.error ?? "?")"); continue
            }
            if let before = self.knowledge.cloudOf[asked[i]] {
                if recordOf(before) != recordOf(cloud) {
                    self.stats.contradiction(inst, "local→cloud: another record than before", "\(asked[i]): \(before) then \(cloud)")
                }
            } else {
                fresh.append(cloud)
            }
            self.knowledge.cloudOf[asked[i]] = cloud
        }
        self.account.share(fresh)
    }

    // Cloud → local: its own identifiers come back to their objects; other devices' answer anything.
    func cloudToLocal() {
        let linked = self.pick(80).filter { self.knowledge.cloudOf[$0] != nil }.prefix(50)
        let own = linked.map { self.knowledge.cloudOf[$0]! }
        let others = self.account.sample(50, &self.rng)
        let asked = own + others
        guard !asked.isEmpty else { return }
        guard let (inst, items) = self.mapBatch(asked, localToCloud: false, operation: "cloud→local batches (≤ 100 ids)") else { return }
        for (i, local) in linked.enumerated() where items[i].found != local {
            self.stats.contradiction(inst, "cloud→local: own identifier not back to its object",
                                     "\(own[i]) → \(items[i].found ?? items[i].error ?? "?"), expected \(local)")
        }
    }

    private func asset(_ w: inout JSONWriter, _ local: String, _ fingerprint: String, _ favorite: Bool) {
        w.beginObject()
        w.key("localIdentifier"); w.string(local)
        w.key("fingerprint"); w.string(fingerprint)
        w.key("mediaType"); w.string("image")
        w.key("isFavorite"); w.bool(favorite)
        w.endObject()
    }

    /// Content for a new asset or a changed fingerprint: a photo of the account's set, or (with
    /// `--new-content`) content no device had.
    private func content() -> String {
        if self.rng.below(100) < self.s.newContent {
            self.sequence += 1
            return Encode.base64URL(SHA256.hash(Array("soak \(self.device.global) \(self.sequence)".utf8)))
        }
        return self.account.photos.fingerprints[self.rng.below(self.account.photos.fingerprints.count)]
    }

    // A library change: 5 new, 3 updated (one maybe a new fingerprint), 5 deleted.
    /// Sends `request`, whose If-Match is stale, to one instance: it must be 412, its error naming
    /// in `field` the `current` value (the last acknowledged); counted under `counted`.
    private func sendStale(_ request: RawRequest, what: String, counted: String, field: String, current: String, named: String, detail: String) {
        let inst = self.instance()
        guard let answer = self.client.exchange(inst, request, what: "\(what), stale If-Match", expect: -1,
                                                expectedError: (412, "412 \(what) with a stale If-Match")) else { return }
        self.stats.operation("\(counted) with a stale If-Match (412 expected)")
        if let error = try? parseObject(answer.body), case .object(let e)? = error["error"], case .string(let other)? = e[field], other != current {
            self.stats.contradiction(inst, "412 names another \(named) than the last acknowledged", "\(detail)\(other) vs \(current)")
        }
    }

    func libraryChange() {
        var w = JSONWriter(capacity: 4096)
        var upserts: [(String, String, Bool)] = []
        var refingerprinted: Set<String> = []
        for _ in 0..<5 {
            self.sequence += 1
            let local = "SOAK-\(self.device.global)-\(self.sequence)/L0/001"
            let fingerprint = self.content()
            upserts.append((local, fingerprint, false))
        }
        let touched = self.pick(8)
        let updated = Array(touched.prefix(3)), deleted = Array(touched.dropFirst(3))
        for (i, local) in updated.enumerated() {
            let known = self.knowledge.assets[local]!
            if i == 0 && self.rng.below(10) < 3 {
                self.sequence += 1
                var other = self.content()
                while other == known.fingerprint { other = self.content() }
                upserts.append((local, other, known.favorite))
                refingerprinted.insert(local)
            } else {
                upserts.append((local, known.fingerprint, !known.favorite))
            }
        }
        w.beginObject(); w.key("assets"); w.beginObject()
        w.key("upsert"); w.beginArray()
        for (l, fp, fav) in upserts { self.asset(&w, l, fp, fav) }
        w.endArray()
        w.key("delete"); w.beginArray(); for l in deleted { w.string(l) }; w.endArray()
        w.endObject(); w.endObject()
        let body = w.bytes

        // Some sent with a stale If-Match first: 412 naming the current token, nothing stored.
        if let stale = self.previousLibraryToken, self.rng.below(100) < 8 {
            let request = RawRequest("POST", "/v1/library/changes", token: self.token, body: body,
                                     headers: [("If-Match", "\"\(stale)\""), ("Idempotency-Key", "stale-\(self.device.global)-\(self.sequence)")])
            self.sendStale(request, what: "library change", counted: "library changes", field: "changeToken", current: self.libraryToken,
                           named: "token", detail: "")
        }
        let key = "lib-\(self.device.global)-\(self.sequence)"
        let request = RawRequest("POST", "/v1/library/changes", token: self.token, body: body,
                                 headers: [("If-Match", "\"\(self.libraryToken)\""), ("Idempotency-Key", key)])
        let inst = self.instance()
        guard let answer = self.client.exchange(inst, request, what: "library change") else { return }
        self.stats.operation("library changes (5 new, 3 updated, 5 deleted)")
        guard let object = try? parseObject(answer.body), let token = try? stringField(object, "changeToken") else {
            self.stats.contradiction(inst, "library change answer unreadable", String(decoding: answer.body.prefix(200), as: UTF8.self)); return
        }
        func count(_ k: String) -> Int { if case .number(let n)? = object[k] { return Int(n) }; return -1 }
        if count("inserted") != 5 || count("updated") != 3 || count("deleted") != 5 {
            self.stats.contradiction(inst, "library change counts", String(decoding: answer.body.prefix(200), as: UTF8.self))
        }
        // Acknowledged: the device's expected library moves.
        for (l, fp, fav) in upserts {
            if self.knowledge.assets[l] == nil { self.add(l) }
            self.knowledge.assets[l] = (fp, fav)
            if refingerprinted.contains(l) { self.knowledge.cloudOf[l] = nil }
        }
        for l in deleted { self.knowledge.assets[l] = nil; self.knowledge.cloudOf[l] = nil; self.remove(l) }
        self.previousLibraryToken = self.libraryToken
        self.libraryToken = token

        // Some resent with the same key, maybe through another instance: the first answer again.
        if self.rng.below(100) < 15 {
            let again = self.instance()
            guard let replay = self.client.exchange(again, request, what: "library change resend") else { return }
            self.stats.operation("idempotent resends (library change)")
            if replay.body != answer.body || replay.header("Idempotent-Replayed") != "true" {
                self.stats.contradiction(again, "resend not the first answer",
                                         "replayed=\(replay.header("Idempotent-Replayed") ?? "nil") \(String(decoding: replay.body.prefix(160), as: UTF8.self))")
            }
        }
    }

    // A journal entry of its own: If-Match its last version (or none to create); some stale.
    func journalWrite() {
        let k = self.rng.below(12)
        let entryID = "d\(self.device.global)-e\(k)"
        let journal = self.account.journals[k % self.account.journals.count]
        let known = self.knowledge.entries[entryID]
        let photos = self.pick(1 + self.rng.below(4))
        self.sequence += 1
        let text = "entry \(entryID) write \(self.sequence)"
        var w = JSONWriter(capacity: 1024)
        w.beginObject(); w.key("text"); w.string(text)
        w.key("photos"); w.beginArray()
        for p in photos { w.beginObject(); w.key("localIdentifier"); w.string(p); w.endObject() }
        w.endArray(); w.endObject()
        let path = "/v1/journals/\(journal)/entries/\(entryID)"

        if let known, let stale = known.previousVersion, self.rng.below(100) < 15 {
            let request = RawRequest("PUT", path, token: self.token, body: w.bytes, headers: [("If-Match", "\"\(stale)\"")])
            self.sendStale(request, what: "journal entry", counted: "journal writes", field: "version", current: known.version,
                           named: "version", detail: "\(entryID): ")
            return
        }
        let headers = known.map { [("If-Match", "\"\($0.version)\"")] } ?? []
        let inst = self.instance()
        let request = RawRequest("PUT", path, token: self.token, body: w.bytes, headers: headers)
        guard let answer = self.client.exchange(inst, request, what: "journal entry write") else { return }
        self.stats.operation("journal entry writes (If-Match current)")
        guard let entry = try? parseObject(answer.body), let version = try? stringField(entry, "version"),
              case .array(let ps)? = entry["photos"] else {
            self.stats.contradiction(inst, "journal entry answer unreadable", String(decoding: answer.body.prefix(200), as: UTF8.self)); return
        }
        let clouds = ps.compactMap { p -> String? in if case .object(let o) = p, case .string(let c)? = o["cloudIdentifier"] { return c }; return nil }
        self.knowledge.entries[entryID] = KnownEntry(journal: journal, version: version, previousVersion: known?.version, text: text, photos: clouds)
    }

    // A journal read: its own entries stand as last acknowledged.
    func journalRead() {
        let journal = self.account.journals[self.rng.below(self.account.journals.count)]
        let inst = self.instance()
        guard let answer = self.client.exchange(inst, RawRequest("GET", "/v1/journals/\(journal)", token: self.token), what: "journal read") else { return }
        self.stats.operation("journal reads")
        guard let object = try? parseObject(answer.body), case .array(let es)? = object["entries"] else {
            self.stats.contradiction(inst, "journal answer unreadable", ""); return
        }
        var seen: [String: String] = [:]
        for case .object(let e) in es { if case .string(let id)? = e["entryID"], case .string(let v)? = e["version"] { seen[id] = v } }
        for (id, known) in self.knowledge.entries where known.journal == journal && seen[id] != known.version {
            self.stats.contradiction(inst, "journal read: own entry not as acknowledged", "\(id): \(seen[id] ?? "missing") vs \(known.version)")
        }
    }

    // Token rotation by the account; resent with its key (same new token); the old token is 401.
    func rotate() {
        let old = self.device.current.value
        self.device.token.withLock { $0.rotating = true }
        let key = "rot-\(self.device.global)-\(self.sequence)-\(self.rng.below(1_000_000))"
        let request = RawRequest("POST", "/v1/devices/\(self.device.deviceID)/token", token: self.account.accountToken, body: Array("{}".utf8),
                                 headers: [("Idempotency-Key", key)])
        let inst = self.instance()
        guard let answer = self.client.exchange(inst, request, what: "token rotation"),
              let object = try? parseObject(answer.body), let fresh = try? stringField(object, "deviceToken") else {
            self.device.token.withLock { $0.rotating = false }
            return
        }
        self.device.token.withLock { $0 = (fresh, $0.generation + 1, false) }
        self.stats.operation("token rotations")
        let again = self.instance()
        // An answer that issues a token is never kept, so its resend is a replayed `409
        // idempotencyKeyAnswerLost` (`"reason": "tokenNotKept"`) naming the device, never the token.
        if let replay = self.client.exchange(again, request, what: "token rotation resend", expect: 409) {
            self.stats.operation("idempotent resends (token rotation)")
            let text = String(decoding: replay.body, as: UTF8.self)
            if !text.contains("\"tokenNotKept\"") || !text.contains(self.device.deviceID) || text.contains(fresh) {
                self.stats.contradiction(again, "rotation resend not the kept 409", String(text.prefix(300)))
            }
        }
        let probe = self.instance()
        self.client.exchange(probe, RawRequest("GET", "/v1/library/token", token: old), what: "old token after rotation", expect: -1,
                             expectedError: (401, "401 for the rotated-out token"))
        self.client.exchange(probe, RawRequest("GET", "/v1/library/token", token: fresh), what: "new token after rotation")
    }
}

/// Hands a worker to the one thread that runs it (created on the main thread, then used only there).
final class WorkerBox: @unchecked Sendable {
    let worker: SoakWorker
    init(_ worker: SoakWorker) { self.worker = worker }
}

// MARK: - Long-polls

/// Holds `GET <feed>?since=…&wait=…` with the device's current token, again and again.
func soakPoll(_ s: SoakSettings, device: SoakDevice, stats: SoakStats, feed: String, tokenPath: String, label: String) {
    let client = SoakClient(ports: s.ports, stats: stats)
    var rng = SplitMix(state: 0x9011 &+ UInt64(device.global) &* 31 &+ UInt64(feed.count))
    var since: String?
    while !stats.stopped {
        let inst = s.ports.count == 1 ? 0 : rng.below(s.ports.count)
        let token = device.current
        let path = since.map { "\(feed)?since=\(encodeQuery($0))&wait=\(s.pollWait)" } ?? tokenPath
        let sentAt = now()
        guard let answer = client.send(inst, RawRequest("GET", path, token: token.value), what: label) else { continue }
        let held = now() - sentAt
        if answer.status == 401 {
            let latest = device.current
            if latest.generation != token.generation || latest.rotating {
                stats.answer(inst, ok: false, expectedKind: "401 for a poll held with a rotated-out token")
                stats.operation("\(label): ended by a rotation (401)")
                // The device learns its new token when the rotation answers: wait for it (else
                // this loop would only collect more 401s with the old one).
                let deadline = now() + 30
                while device.current.generation == token.generation && !stats.stopped && now() < deadline { usleep(20_000) }
            } else {
                stats.answer(inst, ok: false, unexpected: "\(label): 401 with the current token", detail: "")
                usleep(200_000)
            }
            continue
        }
        guard answer.status == 200, let object = try? parseObject(answer.body), let next = try? stringField(object, "changeToken") else {
            stats.answer(inst, ok: false, unexpected: "\(label): \(answer.status)", detail: String(decoding: answer.body.prefix(200), as: UTF8.self))
            usleep(200_000)
            continue
        }
        stats.answer(inst, ok: true)
        if since != nil {
            if case .array(let changes)? = object["changes"], !changes.isEmpty {
                // Held (≥ 50 ms) and woken by a write, or answered at once (changes were there).
                stats.operation(held >= 0.05 ? "\(label): held, then woken by a change" : "\(label): answered at once with changes")
            } else {
                stats.operation("\(label): wait ran out (empty page)")
            }
        }
        since = next
    }
}

// MARK: - Sampling

struct SoakSample {
    var minute: Double
    var instance: Int
    var rssKiB: Int
    var fds: Int
    var threads: Int
    var dbBytes: Int
    var requests: Int
    var errors: Int
    var expected: Int
}

func procStatus(_ pid: Int32, _ field: String) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return -1 }
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) } ?? -1
    }
    return -1
}

func openDescriptors(_ pid: Int32) -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
}

/// A few gauges from the server's /metrics: the mapping index, connections, held polls.
func serverGauges(_ port: Int) -> [String: Double] {
    guard let body = try? call(port, RawRequest("GET", "/metrics")) else { return [:] }
    var out: [String: Double] = [:]
    for line in String(decoding: body, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
        let parts = line.split(separator: " ")
        guard parts.count >= 2, let value = Double(parts[parts.count - 1]) else { continue }
        let name = String(parts[0].split(separator: "{").first ?? "")
        if ["concord_mapping_index_resident_bytes", "concord_mapping_index_accounts", "concord_http_open_connections",
            "concord_long_poll_waiting"].contains(name) {
            out[name, default: 0] += value
        }
    }
    return out
}

func databaseBytes(_ s: SoakSettings) -> Int {
    if let file = s.sqliteFile {
        func size(_ p: String) -> Int { ((try? FileManager.default.attributesOfItem(atPath: p))?[.size] as? NSNumber)?.intValue ?? 0 }
        return size(file) + size(file + "-wal")
    }
    guard let url = s.pgURL else { return -1 }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["psql", url, "-Atc", "SELECT pg_database_size(current_database())"]
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    do { try process.run() } catch { return -1 }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return Int(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
}

// MARK: - The scenario

func soakScenario() throws {
    guard let s = SoakSettings.parse() else {
        log("usage: device-sim soak --ports P[,P2] --pids PID[,PID2] --admin-token T --csv FILE (--sqlite-file F | --pg-url U) [--minutes M] [--interval S] [--warmup M] [--accounts N] [--devices N] [--assets N] [--think-ms MS] [--poll-wait S] [--rotate-seconds S]")
        exit(2)
    }
    let instances = s.ports.count
    let stats = SoakStats(instances: instances)

    // Set-up (not counted): accounts, devices, libraries uploaded, journals.
    log("soak (\(s.engine)): \(s.accounts) accounts × \(s.devices) devices × \(s.assets) assets, \(instances) instance(s), \(f(s.minutes, 1)) min")
    let photos = PhotoSet(count: s.assets * 10 / 9)
    var accounts: [SoakAccount] = []
    var workers: [SoakWorker] = []
    var devices: [SoakDevice] = []
    for a in 0..<s.accounts {
        let port = s.ports[a % instances]
        let account = try parseObject(call(port, RawRequest("POST", "/v1/accounts", token: s.adminToken, body: Array(#"{"name":"soak \#(a)"}"#.utf8)), expect: 201))
        let accountToken = try stringField(account, "accountToken")
        var created: [(String, String)] = []
        for d in 0..<s.devices {
            let device = try parseObject(call(port, RawRequest("POST", "/v1/devices", token: accountToken, body: Array(#"{"name":"soak \#(a)-\#(d)","platform":"iOS"}"#.utf8)), expect: 201))
            created.append((try stringField(device, "deviceID"), try stringField(device, "deviceToken")))
        }
        var journals: [String] = []
        for j in 0..<2 {
            let journal = try parseObject(call(port, RawRequest("POST", "/v1/journals", token: created[0].1, body: Array(#"{"title":"Soak \#(a)-\#(j)"}"#.utf8)), expect: 201))
            journals.append(try stringField(journal, "journalID"))
        }
        let shared = SoakAccount(accountToken: accountToken, journals: journals, photos: photos)
        accounts.append(shared)
        for (d, (id, token)) in created.enumerated() {
            let global = a * s.devices + d
            let library = DeviceLibrary(device: global, assets: s.assets, photos: photos, albumCount: 0)
            let answer = try parseObject(call(port, RawRequest("PUT", "/v1/library", token: token, body: library.manifest(photos))))
            let device = SoakDevice(account: a, index: d, global: global, deviceID: id, token: token)
            devices.append(device)
            workers.append(SoakWorker(s, device: device, account: shared, stats: stats, library: library, token: try stringField(answer, "changeToken")))
        }
    }

    // CSV and sampler.
    _ = FileManager.default.createFile(atPath: s.csv, contents: Data("minute,instance,rss_kib,fds,threads,db_bytes,requests,errors,expected_errors\n".utf8))
    let csv = FileHandle(forWritingAtPath: s.csv)!
    csv.seekToEndOfFile()
    // The server's own gauges beside it (not in the main CSV's fixed columns): what RSS holds.
    let gaugesPath = s.csv.hasSuffix(".csv") ? String(s.csv.dropLast(4)) + "-server.csv" : s.csv + "-server.csv"
    _ = FileManager.default.createFile(atPath: gaugesPath, contents: Data("minute,instance,mapping_index_bytes,mapping_index_accounts,open_connections,long_poll_waiting\n".utf8))
    let gaugesCSV = FileHandle(forWritingAtPath: gaugesPath)!
    gaugesCSV.seekToEndOfFile()
    let started = now()
    let end = started + s.minutes * 60
    var samples: [SoakSample] = []
    var last = (requests: Array(repeating: 0, count: instances), errors: Array(repeating: 0, count: instances), expected: Array(repeating: 0, count: instances))
    func sample() {
        let minute = (now() - started) / 60
        let db = databaseBytes(s)
        let c = stats.counts.withLock { $0 }
        var line = ""
        for i in 0..<instances {
            let x = SoakSample(minute: minute, instance: i + 1, rssKiB: procStatus(s.pids[i], "VmRSS"), fds: openDescriptors(s.pids[i]),
                               threads: procStatus(s.pids[i], "Threads"), dbBytes: db,
                               requests: c.requests[i] - last.requests[i], errors: c.errors[i] - last.errors[i], expected: c.expected[i] - last.expected[i])
            samples.append(x)
            line += "\(f(x.minute, 2)),\(x.instance),\(x.rssKiB),\(x.fds),\(x.threads),\(x.dbBytes),\(x.requests),\(x.errors),\(x.expected)\n"
            log("soak \(s.engine) minute \(f(minute, 1)) instance \(i + 1): RSS \(x.rssKiB) KiB, fds \(x.fds), threads \(x.threads), db \(x.dbBytes) B, requests \(x.requests), errors \(x.errors), expected \(x.expected)")
        }
        last = (c.requests, c.errors, c.expected)
        csv.write(Data(line.utf8))
        var gaugeLine = ""
        for i in 0..<instances {
            let g = serverGauges(s.ports[i])
            func v(_ k: String) -> String { g[k].map { String(Int($0)) } ?? "" }
            gaugeLine += "\(f(minute, 2)),\(i + 1),\(v("concord_mapping_index_resident_bytes")),\(v("concord_mapping_index_accounts")),\(v("concord_http_open_connections")),\(v("concord_long_poll_waiting"))\n"
        }
        gaugesCSV.write(Data(gaugeLine.utf8))
    }
    sample()

    // The load: a worker and a library poll per device, a journal poll per account.
    let group = DispatchGroup()
    func spawn(_ body: @escaping @Sendable () -> Void) {
        group.enter()
        let thread = Thread { body(); group.leave() }
        thread.stackSize = 1 << 20
        thread.start()
    }
    for worker in workers {
        let box = WorkerBox(worker)
        spawn { box.worker.run(until: end) }
        let device = worker.device
        spawn { soakPoll(s, device: device, stats: stats, feed: "/v1/library/changes", tokenPath: "/v1/library/token", label: "library long-poll") }
    }
    for a in 0..<s.accounts {
        let device = devices[a * s.devices + s.devices - 1]
        spawn { soakPoll(s, device: device, stats: stats, feed: "/v1/journals/changes", tokenPath: "/v1/journals/token", label: "journal long-poll") }
    }
    // Samples at every interval up to the end (the last at the end when the interval divides it).
    var nextSample = started + s.interval
    while nextSample <= end + 0.5 {
        while now() < nextSample { usleep(UInt32(min(max(nextSample - now(), 0.001), 1) * 1_000_000)) }
        sample()
        nextSample += s.interval
    }
    while now() < end { usleep(200_000) }
    stats.stop.store(true, ordering: .relaxed)
    let loadSeconds = now() - started
    log("soak \(s.engine): load over; waiting for the workers and the held polls (≤ \(s.pollWait) s)")
    group.wait()
    try? csv.close()
    try? gaugesCSV.close()

    // MARK: read-back
    log("soak \(s.engine): reading everything back")
    var problems: [String] = []
    var checked = (assets: 0, entries: 0, roundTrips: 0)
    var missing = (assets: 0, extra: 0, wrong: 0, entries: 0, mapping: 0)
    for (w, worker) in workers.enumerated() {
        let token = worker.device.current.value
        let listPort = s.ports[w % instances], mapPort = s.ports[(w + 1) % instances]
        var listed: [String: (String?, Bool)] = [:]
        var after: String?
        repeat {
            let path = "/v1/library/objects?type=assets&limit=1000" + (after.map { "&after=\(encodeQuery($0))" } ?? "")
            let page = try parseObject(call(listPort, RawRequest("GET", path, token: token)))
            guard case .array(let objects)? = page["objects"] else { throw ClientError(description: "listing lacks objects") }
            for case .object(let o) in objects {
                guard case .string(let local)? = o["localIdentifier"] else { continue }
                var fp: String?; if case .string(let v)? = o["fingerprint"] { fp = v }
                var fav = false; if case .bool(let v)? = o["isFavorite"] { fav = v }
                listed[local] = (fp, fav)
            }
            if case .string(let next)? = page["next"] { after = next } else { after = nil }
        } while after != nil
        for (local, known) in worker.knowledge.assets {
            checked.assets += 1
            guard let got = listed[local] else {
                missing.assets += 1; if problems.count < 40 { problems.append("device \(w + 1): acknowledged asset \(local) missing") }; continue
            }
            if got.0 != known.fingerprint || got.1 != known.favorite {
                missing.wrong += 1; if problems.count < 40 { problems.append("device \(w + 1): \(local) stored \(got), acknowledged \(known)") }
            }
        }
        for local in listed.keys where worker.knowledge.assets[local] == nil {
            missing.extra += 1; if problems.count < 40 { problems.append("device \(w + 1): \(local) listed but its deletion was acknowledged") }
        }
        // Mapping round trips over the whole library, through the other instance.
        let locals = Array(worker.knowledge.assets.keys)
        for start in stride(from: 0, to: locals.count, by: 1000) {
            let batch = Array(locals[start..<min(start + 1000, locals.count)])
            let l2c = try mappings(call(mapPort, RawRequest("POST", "/v1/library/cloud-identifiers", token: token, body: identifiersBody("localIdentifiers", batch[...]))),
                                   askedKey: "localIdentifier", foundKey: "cloudIdentifier")
            var clouds: [String] = [], back: [String] = []
            for (i, m) in l2c.enumerated() {
                guard let cloud = m.found else {
                    missing.mapping += 1; if problems.count < 40 { problems.append("device \(w + 1): \(batch[i]) does not map: \(m.error ?? "?")") }; continue
                }
                if let before = worker.knowledge.cloudOf[batch[i]], recordOf(before) != recordOf(cloud) {
                    missing.mapping += 1; if problems.count < 40 { problems.append("device \(w + 1): \(batch[i]) maps to \(cloud), earlier \(before)") }
                }
                clouds.append(cloud); back.append(batch[i])
            }
            let c2l = try mappings(call(listPort, RawRequest("POST", "/v1/library/local-identifiers", token: token, body: identifiersBody("cloudIdentifiers", clouds[...]))),
                                   askedKey: "cloudIdentifier", foundKey: "localIdentifier")
            for (i, m) in c2l.enumerated() {
                checked.roundTrips += 1
                if m.found != back[i] {
                    missing.mapping += 1
                    if problems.count < 40 { problems.append("device \(w + 1): \(clouds[i]) back to \(m.found ?? m.error ?? "?"), expected \(back[i])") }
                }
            }
        }
    }
    // Journals: every acknowledged entry, as acknowledged.
    for (a, account) in accounts.enumerated() {
        let reader = devices[a * s.devices]
        var stored: [String: (version: String, text: String, photos: [String])] = [:]
        for (j, journal) in account.journals.enumerated() {
            let object = try parseObject(call(s.ports[j % instances], RawRequest("GET", "/v1/journals/\(journal)", token: reader.current.value)))
            guard case .array(let es)? = object["entries"] else { throw ClientError(description: "journal lacks entries") }
            for case .object(let e) in es {
                guard case .string(let id)? = e["entryID"], case .string(let v)? = e["version"], case .string(let t)? = e["text"] else { continue }
                var ps: [String] = []
                if case .array(let photos)? = e["photos"] { for case .object(let p) in photos { if case .string(let c)? = p["cloudIdentifier"] { ps.append(c) } } }
                stored["\(journal)/\(id)"] = (v, t, ps)
            }
        }
        for worker in workers where worker.device.account == a {
            for (id, known) in worker.knowledge.entries {
                checked.entries += 1
                guard let got = stored["\(known.journal)/\(id)"] else {
                    missing.entries += 1; if problems.count < 40 { problems.append("entry \(id) missing from journal \(known.journal)") }; continue
                }
                if got.version != known.version || got.text != known.text || got.photos.map(recordOf) != known.photos.map(recordOf) {
                    missing.entries += 1; if problems.count < 40 { problems.append("entry \(id): stored \(got.version) '\(got.text)', acknowledged \(known.version) '\(known.text)'") }
                }
            }
        }
    }

    // MARK: report
    let c = stats.counts.withLock { $0 }
    let totalRequests = c.requests.reduce(0, +), totalErrors = c.errors.reduce(0, +), totalExpected = c.expected.reduce(0, +)
    let engineName = s.engine == "postgres" ? "PostgreSQL, \(instances) instance\(instances == 1 ? "" : "s") on one database" : "SQLite, \(instances) instance\(instances == 1 ? "" : "s")"
    print(markdown: "", "### Soak — \(engineName), \(f(s.minutes, 0)) min", "")
    print("\(s.accounts) accounts × \(s.devices) devices (\(s.accounts * s.devices) device threads, \(s.accounts * s.devices) library long-polls, \(s.accounts) journal long-polls), \(s.assets) assets per device at the start, \(s.thinkMS) ms think time, polls held \(s.pollWait) s, a rotation per device every ~\(f(s.rotateSeconds, 0)) s, \(s.newContent) % new content; samples every \(f(s.interval, 0)) s, warm-up \(f(s.warmup, 1)) min. Load ran \(f(loadSeconds / 60, 1)) min: \(totalRequests) requests (\(f(Double(totalRequests) / max(1, loadSeconds), 0))/s)\(instances > 1 ? ", by instance " + c.requests.map(String.init).joined(separator: " / ") : "").")
    print(markdown: "", "| operation | count |", "|---|---:|")
    for (name, n) in c.operations.sorted(by: { $0.key < $1.key }) { print("| \(name) | \(n) |") }

    print(markdown: "", "| instance | metric | minute 0 | after warm-up (min \(f(s.warmup, 0))) | end | mean of the last third | growth after warm-up | |", "|---|---|---:|---:|---:|---:|---:|---|")
    let endMinute = samples.map(\.minute).max() ?? 0
    for i in 1...instances {
        let mine = samples.filter { $0.instance == i }
        guard let first = mine.first, let lastSample = mine.last else { continue }
        let base = mine.first { $0.minute >= s.warmup - 0.01 } ?? first
        let tail = mine.filter { $0.minute >= endMinute * 2 / 3 - 0.01 }
        let metrics: [(String, (SoakSample) -> Int)] = [("RSS (KiB)", \.rssKiB), ("open fds", \.fds), ("threads", \.threads), ("database bytes", \.dbBytes)]
        for (name, value) in metrics {
            let mean = tail.isEmpty ? Double(value(lastSample)) : Double(tail.map(value).reduce(0, +)) / Double(tail.count)
            let growth = value(base) > 0 ? (mean - Double(value(base))) / Double(value(base)) * 100 : 0
            print("| \(i) | \(name) | \(value(first)) | \(value(base)) | \(value(lastSample)) | \(f(mean, 0)) | \(f(growth, 1)) % | \(growth > 5 ? "**> 5 %**" : "flat") |")
        }
    }
    let writes = c.operations.filter { $0.key.hasPrefix("library changes (") || $0.key.hasPrefix("journal entry writes") }.map(\.value).reduce(0, +)
    if let d0 = samples.first?.dbBytes, let d1 = samples.last?.dbBytes, writes > 0 {
        print(markdown: "", "Database: \(d0) → \(d1) bytes over \(writes) acknowledged writes (library changes and journal entry writes): \(f(Double(d1 - d0) / Double(writes), 0)) bytes per write. Server gauges (mapping index, connections, held polls) per sample: `\(gaugesPath.split(separator: "/").suffix(3).joined(separator: "/"))`.")
    }
    print(markdown: "", "Errors: \(totalExpected) expected (the mix asked for them), \(totalErrors) unexpected.", "")
    print(markdown: "| expected error | count |", "|---|---:|")
    for (name, n) in c.expectedKinds.sorted(by: { $0.key < $1.key }) { print("| \(name) | \(n) |") }
    if !c.unexpectedKinds.isEmpty {
        print(markdown: "", "| unexpected | count |", "|---|---:|")
        for (name, n) in c.unexpectedKinds.sorted(by: { $0.key < $1.key }) { print("| \(name) | \(n) |") }
        print(markdown: "", "First unexpected answers:", "")
        for e in c.examples.prefix(10) { print("- `\(e.replacingOccurrences(of: "`", with: "'"))`") }
    }
    let lost = missing.assets + missing.extra + missing.wrong + missing.entries + missing.mapping
    print(markdown: "", "Read-back: \(checked.assets) acknowledged assets checked against `GET /v1/library/objects` (missing \(missing.assets), wrong \(missing.wrong), deleted but listed \(missing.extra)); \(checked.entries) acknowledged journal entries (missing or not as acknowledged: \(missing.entries)); \(checked.roundTrips) local→cloud→local round trips (disagreeing: \(missing.mapping)). **Missing: \(lost)**.")
    for p in problems.prefix(20) { print("- \(p)") }
    print(markdown: "", "CSV: `\(s.csv.split(separator: "/").suffix(3).joined(separator: "/"))`.")
    log("soak \(s.engine): \(totalRequests) requests, \(totalErrors) unexpected errors, \(totalExpected) expected, read-back missing \(lost)")
}
