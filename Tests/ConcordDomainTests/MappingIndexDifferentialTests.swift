import ConcordDomain
import ConcordMappingIndex
import ConcordStorage
import ConcordTestSupport
import Foundation
import Testing

/// The mapping index answers exactly what storage answers. The same seeded sequence of random
/// operations — manifest uploads, changes, deletes, fingerprint changes, links, resets,
/// authorization changes, journal writes and reads, device deletion and creation, over two
/// accounts with two devices each, from small pools of identifiers and contents so duplicates and
/// collisions are common; objects with keys, without fingerprints, with creation dates in several
/// time zones; the wanted list and status, objects wanted for their link and cloud identifiers
/// spelled with an empty fingerprint part) — runs against four services, each on its own database: one answering
/// from storage alone (index off), one with the index, one with an index budget so small that
/// accounts are evicted all the time, and one whose budget no account fits (served from storage). Every operation's answer, and after every step a
/// full sweep of both mapping directions on every device, must be identical across the four.
/// Identifiers (`newID`) and the clock are deterministic, so the four databases stay identical.
/// A sixth side has its index saved and the service restarted every 37 steps: its accounts then
/// load from their snapshots, and must answer as storage does from there on. A seventh loads every
/// account off the request path (storage answering meanwhile, its writes kept for the load).
@Suite struct MappingIndexDifferentialTests {
    @Test(arguments: TestEngine.available) func indexAnswersEqualStorageAnswers(_ engine: TestEngine) throws {
        let steps = engine == .sqlite ? 1500 : 1000
        for seed: UInt64 in [0xC0FFEE, 42] {
            try Scenario(engine: engine, seed: seed).run(steps: steps)
        }
    }
}

/// The invariant under races: two devices whose objects carry the same keys, asking at
/// the same moment through two instances sharing the database, get one record per key — with the
/// index on both instances, on neither, and on one only; and afterwards every side answers alike.
@Suite struct MappingIndexKeyRaceTests {
    @Test(arguments: TestEngine.available) func twoDevicesRacingWithOneKeyGetOneRecord(_ engine: TestEngine) throws {
        for budgets in [(256 << 20, 256 << 20), (0, 0), (256 << 20, 0)] {
            let database = try TestDatabase(engine)
            let clock = ManualClock()
            func service(_ store: any ConcordStore, _ bytes: Int) throws -> ConcordService {
                var configuration = DomainConfiguration()
                configuration.mappingIndexBytes = bytes
                return try ConcordService(store: store, configuration: configuration, clock: { clock.now })
            }
            let services = [try service(database.store, budgets.0), try service(try database.openAnotherStore(), budgets.1)]
            let account = try services[0].accounts.createAccount(name: "race")
            let devices = try (0..<2).map { i in
                DeviceRef(accountID: account.accountID, deviceID: try services[0].accounts.createDevice(accountID: account.accountID, name: "d\(i)", platform: nil).deviceID)
            }
            let keys = (0..<60).map { "KEY-\($0)" }
            for (i, d) in devices.enumerated() {
                // Device 0 has fingerprints for half of them; device 1 none: keys decide.
                let objects = keys.enumerated().map { k, key in
                    LibraryObject.asset("\(i)-\(key)", fingerprint: i == 0 && k % 2 == 0 ? fp(k) : "", photoKitCloudIdentifier: "\(key):001:")
                }
                try services[i].library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: objects)), device: d)
            }
            let answers = Mutex2<[Int: [String]]>([:])
            DispatchQueue.concurrentPerform(iterations: 2) { i in
                let result = try? services[i].mapping.cloudIdentifiers(forLocalIdentifiers: keys.map { "\(i)-\($0)" }, device: devices[i])
                answers.set(i, result?.map { if case .found(let c) = $0.result { return CloudIdentifier(parsing: c)?.guid ?? "" } else { return "" } } ?? [])
            }
            #expect(answers.get(0).count == 60 && answers.get(0) == answers.get(1), "budgets \(budgets)")
            #expect(Set(answers.get(0)).count == 60)
            // Both instances, both directions, agree afterwards.
            for i in 0..<2 {
                let mine = try services[i].mapping.cloudIdentifiers(forLocalIdentifiers: keys.map { "\(i)-\($0)" }, device: devices[i]).map(\.result)
                let other = try services[1 - i].mapping.cloudIdentifiers(forLocalIdentifiers: keys.map { "\(i)-\($0)" }, device: devices[i]).map(\.result)
                #expect(mine == other)
            }
        }
    }
}

/// Sequential upper-case UUIDs: the same on every side of the comparison.
final class SequentialIDs: @unchecked Sendable {
    // @unchecked Sendable: `next` is only touched while holding `lock`.
    private let lock = NSLock()
    private var next: UInt64 = 1
    func make() -> String {
        let n = self.lock.withLock { () -> UInt64 in defer { self.next += 1 }; return self.next }
        return String(format: "%08X-0000-4000-8000-%012llX", UInt32(n >> 48), n & 0xFFFF_FFFF_FFFF)
    }
}

private final class Scenario {
    /// One service under comparison, with its own database.
    final class Side {
        let name: String
        let database: TestDatabase
        private(set) var service: ConcordService
        var accounts: [String] = []
        var devices: [DeviceRef] = []
        private let configuration: DomainConfiguration
        private let ids = SequentialIDs()
        private let clock: ManualClock
        /// Snapshot loads and saves over every restart.
        private(set) var snapshotLoads = 0, savedSnapshots = 0, restarts = 0
        init(_ name: String, engine: TestEngine, indexBytes: Int, protectSeconds: Double = 0, snapshots: (any MappingIndexSnapshotStore)? = nil,
             inlineLoadObjects: Int = DomainConfiguration().mappingIndexInlineLoadObjects, clock: ManualClock) throws {
            self.name = name
            self.database = try TestDatabase(engine)
            var configuration = DomainConfiguration()
            configuration.mappingIndexBytes = indexBytes
            configuration.mappingIndexProtectSeconds = protectSeconds
            configuration.mappingIndexSnapshots = snapshots
            configuration.mappingIndexInlineLoadObjects = inlineLoadObjects
            configuration.maxBatch = 500
            self.configuration = configuration
            self.clock = clock
            let ids = self.ids
            self.service = try ConcordService(store: self.database.store, configuration: configuration, clock: { clock.now }, newID: { ids.make() })
        }

        /// A clean shutdown and a new start on the same database: the index saved to its
        /// snapshots, then a new service (a new index, empty) that loads from them.
        func restart() throws {
            let (saved, failures) = self.service.saveMappingIndexSnapshots()
            #expect(failures.isEmpty, "\(failures)")
            let statistics = self.service.mappingIndex?.statistics
            self.snapshotLoads += statistics?.snapshotLoads ?? 0
            self.savedSnapshots += saved
            self.restarts += 1
            let ids = self.ids, clock = self.clock
            self.service = try ConcordService(store: self.database.store, configuration: self.configuration, clock: { clock.now }, newID: { ids.make() })
        }
    }

    let engine: TestEngine
    let seed: UInt64
    var random: SeededGenerator
    let clock = ManualClock()
    let sides: [Side]
    /// Cloud identifiers seen in answers, replayed in later requests (plus malformed and foreign ones).
    var seenCloud: [String] = []
    var journals: [String] = []
    var step = 0
    /// How often each outcome was answered: the run must have met every one of them.
    var outcomes: [String: Int] = [:]

    init(engine: TestEngine, seed: UInt64) throws {
        self.engine = engine
        self.seed = seed
        self.random = SeededGenerator(state: seed)
        self.sides = [
            try Side("storage", engine: engine, indexBytes: 0, clock: self.clock),
            try Side("index", engine: engine, indexBytes: 256 << 20, clock: self.clock),
            try Side("tiny index", engine: engine, indexBytes: 10_000, clock: self.clock),
            try Side("index nothing fits", engine: engine, indexBytes: 4_000, clock: self.clock),
            // The no-thrash admission: an account used in the last 30 steps is not evicted.
            try Side("tiny index, no thrash", engine: engine, indexBytes: 10_000, protectSeconds: 30, clock: self.clock),
            // Restarted now and then: each start loads the accounts from the snapshots the last saved.
            try Side("index restarted from snapshots", engine: engine, indexBytes: 256 << 20,
                     snapshots: try IndexSnapshotDirectory(path: NSTemporaryDirectory() + "concord-snapshots-" + UUID().uuidString), clock: self.clock),
            // Every load off the request path: storage answers while it runs, and the writes made
            // meanwhile are applied to it once installed.
            try Side("index loaded in the background", engine: engine, indexBytes: 256 << 20, inlineLoadObjects: 0, clock: self.clock),
        ]
    }

    func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &self.random)] }
    func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self.random) < p }

    /// A local identifier of the pool (some in NFD/NFC pairs: distinct bytes, canonically equal;
    /// some PhotoKit-shaped, which the index stores compactly, beside others that are not and
    /// sort among them).
    func localID() -> String {
        let n = Int.random(in: 0..<24, using: &self.random)
        switch n {
        case 16: return "6F9619FF-8B86-D011-B42D-00C04FC964FF/L0/001"
        case 17: return "6F9619FF-8B86-D011-B42D-00C04FC964FF"
        case 18: return "6f9619ff-8b86-d011-b42d-00c04fc964ff/L0/001"   // lower case: stored as it is
        case 19: return "6F9619FF-ZZ/L0/001"
        case 20: return "00000000-0000-0000-0000-000000000000/L0/002"
        case 21: return "A0000000-0000-0000-0000-00000000000F/L0/001"
        case 22: return "CAF\u{00C9}/L0/001"
        case 23: return "CAFE\u{0301}/L0/001"
        default: return "IMG-\(n)/L0/001"
        }
    }

    func fingerprint() -> String { fp(Int.random(in: 0..<9, using: &self.random)) }

    /// An asset (or album) from the pools, with keys: a third without fingerprint, most
    /// with a key from a small pool (shared across devices, sometimes twice on one device), and a
    /// creation date written in several time zones (two spellings of one instant).
    func object(_ id: String, album: Bool = false) -> LibraryObject {
        let fingerprint = self.chance(0.35) ? "" : self.fingerprint()
        let key = self.chance(0.7) ? "K\(Int.random(in: 0..<14, using: &self.random)):\(album ? "040" : "001"):h\(Int.random(in: 0..<3, using: &self.random))" : nil
        if album { return .assetCollection("ALBUM-" + id, fingerprint: fingerprint, photoKitCloudIdentifier: key) }
        let date = self.pick([nil, "2024-01-01T10:00:00Z", "2024-01-01T12:00:00.7+02:00", "2024-01-02T00:00:00Z", "2024-01-01T10:00:01-00:00"])
        return .asset(id, fingerprint: fingerprint, creationDate: date, photoKitCloudIdentifier: key)
    }

    /// Runs `operation` on every side and requires the same answer (or the same error) from each.
    @discardableResult
    func same(_ what: String, _ operation: (Side) throws -> String) -> String {
        var answers: [String] = []
        for side in self.sides {
            do {
                answers.append(try operation(side))
            } catch let error as DomainError {
                answers.append("error \(error)")
            } catch {
                answers.append("unexpected \(error)")
            }
        }
        for outcome in ["found(", "identifierNotFound", "multipleIdentifiersFound", "invalidIdentifier", "accessUserDenied", "fingerprintMismatch", "notFound", "linked"] {
            let n = answers[0].components(separatedBy: outcome).count - 1
            if n > 0 { self.outcomes[outcome, default: 0] += n }
        }
        for (side, answer) in zip(self.sides.dropFirst(), answers.dropFirst()) where answer != answers[0] {
            Issue.record("""
                seed \(self.seed) step \(self.step) (\(self.engine)): \(what) differs
                  \(self.sides[0].name): \(answers[0])
                  \(side.name): \(answer)
                """)
        }
        return answers[0]
    }

    func run(steps: Int) throws {
        // Two accounts with two devices each, created identically on every side.
        for a in 0..<2 {
            self.same("create account") { side in
                let account = try side.service.accounts.createAccount(name: "account \(a)")
                side.accounts.append(account.accountID)
                for d in 0..<2 {
                    let device = try side.service.accounts.createDevice(accountID: account.accountID, name: "device \(d)", platform: nil)
                    side.devices.append(DeviceRef(accountID: account.accountID, deviceID: device.deviceID))
                }
                return "\(side.accounts.count) \(side.devices.count)"
            }
        }
        for s in 0..<steps {
            self.step = s
            self.clock.advance(1)
            self.randomOperation()
            if s % 3 == 0 || s == steps - 1 { self.sweep() }
            if s % 37 == 36 { try self.sides[5].restart() }
        }
        // The index sides really answered from memory, applied writes, and the tiny one evicted.
        let full = try #require(self.sides[1].service.mappingIndex?.statistics)
        let tiny = try #require(self.sides[2].service.mappingIndex?.statistics)
        #expect(self.sides[0].service.mappingIndex == nil)
        #expect(full.hits > steps && full.appliedWrites > steps / 4 && full.loads >= 2 && full.evictions == 0, "\(full)")
        let none = try #require(self.sides[3].service.mappingIndex?.statistics)
        #expect(tiny.evictions > 10 && tiny.hits > 0, "\(tiny)")
        #expect(none.tooLarge > 10, "\(none)")
        let guarded = try #require(self.sides[4].service.mappingIndex?.statistics)
        #expect(guarded.refusedAdmissions > 10 && guarded.hits > 0 && guarded.evictions < tiny.evictions, "\(guarded)")
        let restarted = self.sides[5]
        let restartedNow = try #require(restarted.service.mappingIndex?.statistics)
        let snapshotLoads = restarted.snapshotLoads + restartedNow.snapshotLoads
        #expect(restarted.savedSnapshots > restarted.restarts && snapshotLoads * 2 > restarted.restarts,
                "saved \(restarted.savedSnapshots), loaded \(snapshotLoads) over \(restarted.restarts) restarts")
        let background = try #require(self.sides[6].service.mappingIndex?.statistics)
        #expect(background.deferredLoads >= 2 && background.backgroundLoadsFitted >= 2 && background.readsWhileLoading >= 2
                 && background.hits > steps / 2 && background.loads == 0, "\(background)")
        print("differential seed \(self.seed) \(self.engine): background loads \(background)")
        print("differential seed \(self.seed) \(self.engine): restarted \(restarted.restarts) times, \(restarted.savedSnapshots) snapshots saved, \(snapshotLoads) loaded")
        print("differential seed \(self.seed) \(self.engine): index \(full); tiny \(tiny); nothing fits \(none); no thrash \(guarded)")
        for outcome in ["found(", "identifierNotFound", "multipleIdentifiersFound", "invalidIdentifier", "accessUserDenied", "fingerprintMismatch", "linked", "wanted", "adopted",
                        "wanted for its link", "empty spelling by content"] {
            #expect(self.outcomes[outcome, default: 0] > 0, "seed \(self.seed): the run met \(outcome) only \(self.outcomes[outcome, default: 0]) times: \(self.outcomes)")
        }
    }

    /// Both directions, every device, every identifier of the pools.
    func sweep() {
        let locals = (0..<22).map { "IMG-\($0)/L0/001" } + ["CAF\u{00C9}/L0/001", "CAFE\u{0301}/L0/001", "IMG-0/L0/001"]
        for d in 0..<4 {
            // Before local → cloud links everything of the device.
            // Fingerprints on demand: the wanted list (two pages) and the counts.
            let wanted = self.same("sweep wanted, device \(d)") { side in
                let first = try side.service.mapping.wanted(device: side.devices[d], after: nil, limit: 3)
                let second = try first.next.map { try side.service.mapping.wanted(device: side.devices[d], after: $0, limit: 10_000) }
                return "\(first) \(String(describing: second)) \(try side.service.mapping.status(device: side.devices[d]))"
            }
            if wanted.contains("total: ") && !wanted.contains("total: 0") { self.outcomes["wanted", default: 0] += 1 }
            let answer = self.same("sweep local → cloud, device \(d)") { side in
                try side.service.mapping.cloudIdentifiers(forLocalIdentifiers: locals, device: side.devices[d]).map { "\($0.result)" }.joined(separator: "\n")
            }
            self.remember(answer)
            // Every object of the pool above is linked now: what is still wanted among them is
            // wanted for its link (no fingerprint, no key, a record with neither).
            let linkedWanted = self.same("sweep wanted after linking, device \(d)") { side in
                let page = try side.service.mapping.wanted(device: side.devices[d], after: nil, limit: 10_000)
                return "\(page) \(try side.service.mapping.status(device: side.devices[d]))"
            }
            if locals.contains(where: { linkedWanted.contains("\"\($0)\"") }) { self.outcomes["wanted for its link", default: 0] += 1 }
            // Empty spellings of known records (`<GUID>:001:`): without content match first (links
            // and keys only), then with it, where the record's fingerprint stands for the empty part.
            let empty = self.emptySpellings(count: 8)
            let withoutContent = self.same("sweep empty spellings without content match, device \(d)") { side in
                try side.service.mapping.localIdentifierResults(forCloudIdentifiers: IdentifierBatch(empty), device: side.devices[d], contentMatch: false)
                    .map { "\($0)" }.joined(separator: "\n")
            }
            let withContent = self.same("sweep empty spellings, device \(d)") { side in
                try side.service.mapping.localIdentifiers(forCloudIdentifiers: empty, device: side.devices[d]).map { "\($0.result)" }.joined(separator: "\n")
            }
            for (before, now) in zip(withoutContent.split(separator: "\n"), withContent.split(separator: "\n"))
            where before.contains("identifierNotFound") && !now.contains("identifierNotFound") {
                self.outcomes["empty spelling by content", default: 0] += 1
            }
            let clouds = self.cloudQuery(count: 40)
            self.same("sweep cloud → local, device \(d)") { side in
                try side.service.mapping.localIdentifiers(forCloudIdentifiers: clouds, device: side.devices[d]).map { "\($0.result)" }.joined(separator: "\n")
            }
        }
    }

    /// Known cloud identifiers spelled with an empty fingerprint part, and the empty spelling of an
    /// unknown GUID. Chosen by the step, not by the seeded generator: the operations that follow
    /// are the same as without these reads.
    func emptySpellings(count: Int) -> [String] {
        (0..<count).map { i in
            i == 0 || self.seenCloud.isEmpty ? "00000000-0000-4000-8000-00000000EEEE:001:"
                : String(self.seenCloud[(self.step * 7 + i * 13) % self.seenCloud.count].prefix(41))
        }
    }

    /// Keeps the cloud identifiers an answer mentions, for later requests.
    func remember(_ answer: String) {
        for part in answer.split(whereSeparator: { $0 == "\"" || $0 == "\n" || $0 == "(" || $0 == ")" }) where part.count > 40 && part.contains(":") {
            let s = String(part)
            if !self.seenCloud.contains(s) { self.seenCloud.append(s) }
        }
        if self.seenCloud.count > 300 { self.seenCloud.removeFirst(self.seenCloud.count - 300) }
    }

    /// Known cloud identifiers (some with their GUID in lower case), their GUID with another
    /// fingerprint (found by content), another type, unknown GUIDs and malformed strings, with duplicates.
    func cloudQuery(count: Int) -> [String] {
        var out: [String] = []
        for _ in 0..<count {
            switch Int.random(in: 0..<10, using: &self.random) {
            case 0...4 where !self.seenCloud.isEmpty: out.append(self.pick(self.seenCloud))
            case 5 where !self.seenCloud.isEmpty:   // another fingerprint, or (every third item) none: the record's stands for it
                let parts = self.pick(self.seenCloud).split(separator: ":")
                let other = self.fingerprint()
                out.append("\(parts[0]):001:\(out.count % 3 == 0 ? "" : other)")
            case 6 where !self.seenCloud.isEmpty:
                let parts = self.pick(self.seenCloud).split(separator: ":")
                out.append("\(parts[0]):002:\(parts.count > 2 ? String(parts[2]) : "")")
            case 7: out.append("00000000-0000-4000-8000-00000000FFFF:001:\(self.fingerprint())")
            case 8: out.append("not a cloud identifier")
            case 9 where !self.seenCloud.isEmpty:   // a GUID in lower case is the same GUID
                let known = self.pick(self.seenCloud)
                out.append(known.prefix(36).lowercased() + known.dropFirst(36))
            default: out.append(self.seenCloud.isEmpty ? "x" : self.pick(self.seenCloud))
            }
        }
        return out
    }

    func randomOperation() {
        let d = Int.random(in: 0..<4, using: &self.random)
        switch Int.random(in: 0..<100, using: &self.random) {
        case 0..<12:   // a manifest upload, sometimes a reset
            let reset = self.chance(0.15)
            var objects: [String: LibraryObject] = [:]
            for _ in 0..<Int.random(in: 0..<16, using: &self.random) {
                let id = self.localID()
                objects[id] = self.object(id, album: self.chance(0.1))
            }
            let snapshot = LibrarySnapshot(objects: objects.values.sorted { $0.localIdentifier.utf8.lexicographicallyPrecedes($1.localIdentifier.utf8) })
            // Sometimes as an upload in parts: the same change, committed from storage.
            let parts = self.chance(0.4) ? Int.random(in: 1...3, using: &self.random) : 0
            self.same("replaceLibrary reset=\(reset) parts=\(parts)") { side in
                let device = side.devices[d]
                let r: LibraryChangeResult
                if parts == 0 {
                    r = try side.service.library.replaceLibrary(snapshot, reset: reset, device: device)
                } else {
                    let upload = try side.service.uploads.open(device: device).uploadID
                    for p in 0..<parts {
                        let slice = snapshot.objects.enumerated().filter { $0.offset % parts == p }.map(\.element)
                        _ = try side.service.uploads.putPart(p + 1, of: upload, LibrarySnapshot(objects: slice), device: device)
                    }
                    r = try side.service.uploads.commit(upload, reset: reset, device: device)
                }
                return "\(r.inserted) \(r.updated) \(r.deleted) \(r.unchanged)"
            }
        case 12..<30:  // changes: upserts (new fingerprints now and then) and deletes
            var upserts: [String: LibraryObject] = [:]
            for _ in 0..<Int.random(in: 0..<5, using: &self.random) {
                let id = self.localID()
                upserts[id] = self.object(id)
            }
            var deletes = Set<String>()
            for _ in 0..<Int.random(in: 0..<3, using: &self.random) {
                let id = self.localID()
                if upserts[id] == nil { deletes.insert(id) }
            }
            let request = LibraryChangeRequest(assets: LibraryChangePart(upsert: Array(upserts.values), delete: Array(deletes)))
            self.same("applyChanges") { side in
                let r = try side.service.library.applyChanges(request, device: side.devices[d])
                return "\(r.inserted) \(r.updated) \(r.deleted) \(r.unchanged)"
            }
        case 30..<45:  // local → cloud, with duplicates and unknown identifiers
            let ids = (0..<Int.random(in: 1..<12, using: &self.random)).map { _ in self.chance(0.1) ? "UNKNOWN/L0/001" : self.localID() }
            let answer = self.same("cloudIdentifiers \(ids)") { side in
                try side.service.mapping.cloudIdentifiers(forLocalIdentifiers: ids, device: side.devices[d]).map { "\($0.result)" }.joined(separator: "\n")
            }
            self.remember(answer)
        case 45..<60:  // cloud → local, now and then without content match
            let ids = self.cloudQuery(count: Int.random(in: 1..<12, using: &self.random))
            let contentMatch = !self.chance(0.25)
            self.same("localIdentifiers \(ids) contentMatch=\(contentMatch)") { side in
                try side.service.mapping.localIdentifierResults(forCloudIdentifiers: IdentifierBatch(ids), device: side.devices[d], contentMatch: contentMatch)
                    .map { "\($0)" }.joined(separator: "\n")
            }
        case 60..<68:  // the person links a record to an object
            guard !self.seenCloud.isEmpty else { return }
            let cloud = self.pick(self.seenCloud)
            let local = self.localID()
            if self.chance(0.7), let fingerprint = cloud.split(separator: ":").last, cloud.hasSuffix(":" + fingerprint) {
                // Give the object the record's content first, so the link is allowed (and replaces links).
                var object = self.object(local)
                object.fingerprint = String(fingerprint)
                let request = LibraryChangeRequest(assets: LibraryChangePart(upsert: [object]))
                self.same("content for link \(local)") { side in
                    let r = try side.service.library.applyChanges(request, device: side.devices[d])
                    return "\(r.inserted) \(r.updated)"
                }
            }
            self.same("link \(cloud) \(local)") { side in
                try side.service.mapping.link(cloudIdentifier: cloud, localIdentifier: local, device: side.devices[d])
                return "linked"
            }
        case 68..<71:  // authorization changes
            let status = self.pick([AuthorizationStatus.authorized, .authorized, .limited, .denied])
            self.same("setAuthorization \(status)") { side in
                try side.service.library.setAuthorization(status, device: side.devices[d])
                return "ok"
            }
        case 71..<80:  // a journal entry with photos by local and cloud identifier
            if self.journals.isEmpty || self.chance(0.1) {
                let answer = self.same("createJournal") { side in try side.service.journals.createJournal(title: "j", device: side.devices[d]).journalID }
                if !answer.hasPrefix("error") { self.journals.append(answer) }
                return
            }
            let journalID = self.pick(self.journals)
            var photos: [JournalPhotoInput] = []
            for _ in 0..<Int.random(in: 0..<5, using: &self.random) {
                photos.append(self.chance(0.5) || self.seenCloud.isEmpty ? .localIdentifier(self.localID()) : .cloudIdentifier(self.pick(self.seenCloud)))
            }
            let entry = "e\(Int.random(in: 0..<4, using: &self.random))"
            let answer = self.same("putEntry \(photos)") { side in
                let view = try side.service.journals.putEntry(journalID: journalID, entryID: entry, text: "t", photos: photos, ifMatch: nil, device: side.devices[d])
                return "\(view)"
            }
            self.remember(answer)
        case 80..<88:  // journal reads resolve every photo
            guard !self.journals.isEmpty else { return }
            let journalID = self.pick(self.journals)
            self.same("journal") { side in "\(try side.service.journals.journal(journalID, device: side.devices[d]).entries)" }
        case 90..<92:  // a new phone takes over, uploads its library and adopts; the old device stays, read-only
            var objects: [String: LibraryObject] = [:]
            for _ in 0..<Int.random(in: 0..<16, using: &self.random) {
                let id = self.localID()
                objects[id] = self.object(id)
            }
            let snapshot = LibrarySnapshot(objects: objects.values.sorted { $0.localIdentifier.utf8.lexicographicallyPrecedes($1.localIdentifier.utf8) })
            let answer = self.same("successor of device \(d), upload, adopt") { side in
                let old = side.devices[d]
                let new = try side.service.accounts.createSuccessor(accountID: old.accountID, of: old.deviceID, name: "successor", platform: nil)
                side.devices[d] = DeviceRef(accountID: old.accountID, deviceID: new.deviceID)
                try side.service.library.replaceLibrary(snapshot, reset: false, device: side.devices[d])
                let r = try side.service.mapping.adopt(device: side.devices[d])
                return "adopted \(r.adopted) \(r.alreadyLinked) \(r.unmatched) \(r.ambiguous.map { "\($0.cloudIdentifier) \($0.localIdentifiers)" })"
            }
            if answer.hasPrefix("adopted") && !answer.hasPrefix("adopted 0 ") { self.outcomes["adopted", default: 0] += 1 }
        case 92..<94:  // and adopts what its predecessor had, as far as it has uploaded
            let answer = self.same("adopt on device \(d)") { side in
                let r = try side.service.mapping.adopt(device: side.devices[d])
                return "adopted \(r.adopted) \(r.alreadyLinked) \(r.unmatched) \(r.ambiguous.map { "\($0.cloudIdentifier) \($0.localIdentifiers)" })"
            }
            if answer.hasPrefix("adopted") && !answer.hasPrefix("adopted 0 ") { self.outcomes["adopted", default: 0] += 1 }
        case 88..<90:  // a device goes away and a new one comes
            self.same("replace device \(d)") { side in
                let old = side.devices[d]
                try side.service.accounts.deleteDevice(accountID: old.accountID, deviceID: old.deviceID)
                let new = try side.service.accounts.createDevice(accountID: old.accountID, name: "again", platform: nil)
                side.devices[d] = DeviceRef(accountID: old.accountID, deviceID: new.deviceID)
                return "replaced"
            }
        default:       // fingerprint (or key) changes of identifiers that are likely linked: a fingerprint appearing keeps the link
            let id = self.localID()
            let request = LibraryChangeRequest(assets: LibraryChangePart(upsert: [self.object(id)]))
            self.same("fingerprint change \(id)") { side in
                let r = try side.service.library.applyChanges(request, device: side.devices[d])
                return "\(r.inserted) \(r.updated)"
            }
        }
    }
}
