import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

/// The API with keys: PhotoKit's identifiers match first, content only
/// where keys cannot decide, and the wanted list names what is worth hashing. Every case on both
/// engines.
@Suite struct KeyMappingTests {
    /// `A:001:H` for key `a`.
    static func pk(_ a: String, _ code: String = "001", hash: String = "h") -> String { "\(a):\(code):\(hash)" }

    static func asset(_ id: String, fingerprint: String = "", key: String? = nil, date: String? = nil) -> LibraryObject {
        .asset(id, fingerprint: fingerprint, creationDate: date, photoKitCloudIdentifier: key.map { Self.pk($0) })
    }

    static func upsert(_ env: TestEnv, _ device: DeviceRef, _ objects: [LibraryObject]) throws {
        try env.service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: objects)), device: device)
    }

    @Test(arguments: TestEngine.available) func twoDevicesOnOneICloudLibraryMatchByKeyWithNoFingerprint(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let phone = try env.device("phone"), mac = try env.device("mac")
        try Self.upsert(env, phone, [Self.asset("P1", key: "BEACH"), Self.asset("P2", key: "DOG")])
        try Self.upsert(env, mac, [Self.asset("M2", key: "DOG"), Self.asset("M1", key: "BEACH")])
        let beach = try env.cloudID(phone, "P1")
        #expect(beach.hasSuffix(":001:"), "a record made without a fingerprint is spelled with an empty one")
        // Cloud → local by key (step 3), then local → cloud answers the same record (step 2).
        #expect(try env.local(mac, [beach]) == [.found("M1")])
        #expect(try env.cloudID(mac, "M1") == beach)
        // The other direction first: the mac asks before the phone ever did.
        let dog = try env.cloudID(mac, "M2")
        #expect(try env.cloudID(phone, "P2") == dog)
        // contentMatch false still resolves by key; a third device without the key does not find it.
        #expect(try env.service.mapping.localIdentifierResults(forCloudIdentifiers: IdentifierBatch([dog]), device: phone, contentMatch: false) == [.found("P2")])
        let pc = try env.device("pc")
        try Self.upsert(env, pc, [Self.asset("W1")])
        #expect(try env.local(pc, [dog]) == [.error(.identifierNotFound(limitedLibrary: false))])
    }

    @Test(arguments: TestEngine.available) func aRecordMadeWithoutAFingerprintTakesTheFirstOnceAndBothSpellingsResolve(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let phone = try env.device("phone"), pc = try env.device("pc")
        try Self.upsert(env, phone, [Self.asset("P1", key: "BEACH")])
        let bare = try env.cloudID(phone, "P1")
        // The phone hashes it later: the link stays and the record takes the fingerprint.
        try Self.upsert(env, phone, [Self.asset("P1", fingerprint: fp(1))])
        let spelled = try env.cloudID(phone, "P1")
        #expect(spelled == bare + fp(1))
        // Sent again without a fingerprint or key: kept, unchanged, not an update.
        let unchanged = try env.service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: [.asset("P1", fingerprint: "")])), device: phone)
        #expect(unchanged.unchanged == 1 && unchanged.updated == 0)
        let stored = try env.service.library.object(localIdentifier: "P1", device: phone)
        #expect(stored.fingerprint == fp(1) && stored.photoKitCloudIdentifier == Self.pk("BEACH"))
        // Once: a second fingerprint drops the link (new content), but the key finds the record
        // again (step 3a, whatever its fingerprint), still spelled with the first one.
        try Self.upsert(env, phone, [Self.asset("P1", fingerprint: fp(2))])
        #expect(try env.cloudID(phone, "P1") == spelled)
        // Both spellings name the record; a device without the key finds it by content.
        try Self.upsert(env, pc, [Self.asset("W1", fingerprint: fp(1))])
        #expect(try env.local(pc, [spelled]) == [.found("W1")])
        #expect(try env.cloudID(pc, "W1") == spelled)
        #expect(try env.local(pc, [bare]) == [.found("W1")], "the record is linked now: step 2 whatever the spelling")
    }

    @Test(arguments: TestEngine.available) func recordsKeepTheirKeysAfterTheirDeviceIsDeleted(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let old = try env.device("old phone")
        try Self.upsert(env, old, [Self.asset("O1", key: "BEACH")])
        let beach = try env.cloudID(old, "O1")
        try env.service.accounts.deleteDevice(accountID: old.accountID, deviceID: old.deviceID)
        let new = try env.device("new phone")
        try Self.upsert(env, new, [Self.asset("N1", key: "BEACH")])
        #expect(try env.cloudID(new, "N1") == beach)
    }

    @Test(arguments: TestEngine.available) func keyFirstThenContentThenNew(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let a = try env.device("A"), b = try env.device("B")
        // A holds a duplicate photo in one iCloud library: same content, two keys, two records.
        try Self.upsert(env, a, [Self.asset("A1", fingerprint: fp(1), key: "K1"), Self.asset("A2", fingerprint: fp(1), key: "K2")])
        let r1 = try env.cloudID(a, "A1"), r2 = try env.cloudID(a, "A2")
        #expect(r1 != r2)
        // B on the same library: each copy finds its own record by key, whichever order it asks.
        try Self.upsert(env, b, [Self.asset("B2", fingerprint: fp(1), key: "K2"), Self.asset("B1", fingerprint: fp(1), key: "K1")])
        #expect(try env.cloud(b, ["B2", "B1"]) == [.found(r2), .found(r1)])
        // A third device signed in elsewhere (no keys) matches by content: the oldest record first.
        let c = try env.device("C")
        try Self.upsert(env, c, [Self.asset("C1", fingerprint: fp(1))])
        #expect(try env.cloudID(c, "C1") == r1)
        // Step 3b skips a record carrying a key this device carries: D holds K1's photo under another
        // identifier not yet linked, so its keyless copy does not take K1's record.
        let d = try env.device("D")
        try Self.upsert(env, d, [Self.asset("D-K1", key: "K1"), Self.asset("D-copy", fingerprint: fp(1))])
        #expect(try env.cloudID(d, "D-copy") == r2)
        #expect(try env.cloudID(d, "D-K1") == r1)
    }

    @Test(arguments: TestEngine.available) func cloudToLocalByKeyAmbiguityAndLinksThatStay(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let a = try env.device("A"), b = try env.device("B")
        try Self.upsert(env, a, [Self.asset("A1", key: "K1")])
        let r = try env.cloudID(a, "A1")
        // Two objects of B carry the key: ambiguous, sorted, nothing linked.
        try Self.upsert(env, b, [Self.asset("B-z", key: "K1"), Self.asset("B-a", key: "K1")])
        #expect(try env.local(b, [r]) == [.error(.multipleIdentifiersFound(localIdentifiers: ["B-a", "B-z"]))])
        // The person chooses; the link answers from then on.
        try env.service.mapping.link(cloudIdentifier: r, localIdentifier: "B-z", device: b)
        #expect(try env.local(b, [r]) == [.found("B-z")])
        #expect(try env.cloudID(b, "B-z") == r)
    }

    @Test(arguments: TestEngine.available) func wantedNamesWhatContentCouldStillMatchToTheSecond(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let phone = try env.device("phone"), pc = try env.device("pc")
        // The PC (no iCloud) has hashed everything; its links make records with fingerprints.
        try Self.upsert(env, pc, [Self.asset("W1", fingerprint: fp(1), date: "2024-05-01T08:00:00Z"),
                                  Self.asset("W2", fingerprint: fp(2), date: "2024-05-01T09:00:00Z")])
        _ = try env.cloud(pc, ["W1", "W2"])
        // The phone has no fingerprints: only objects with a matching instant (any zone, fraction cut), or no date, are wanted.
        try Self.upsert(env, phone, [Self.asset("P-same", key: "K1", date: "2024-05-01T10:00:00.9+02:00"),
                                     Self.asset("P-other", key: "K2", date: "2024-05-01T10:00:01+02:00"),
                                     Self.asset("P-undated", key: "K3"),
                                     Self.asset("P-hashed", fingerprint: fp(9), key: "K4")])
        let page = try env.service.mapping.wanted(device: phone, after: nil, limit: 1)
        #expect(page.objects == [WantedObject(localIdentifier: "P-same", type: .asset)] && page.next == "P-same" && page.total == 2)
        let rest = try env.service.mapping.wanted(device: phone, after: "P-same", limit: 10)
        #expect(rest.objects.map(\.localIdentifier) == ["P-undated"] && rest.next == nil && rest.total == 2)
        var status = try env.service.mapping.status(device: phone)
        #expect(status == LibraryStatus(objects: 4, withFingerprint: 1, withKey: 4, linked: 0, wanted: 2))
        // Hashed and sent: it matches by content, is linked, and is no longer wanted.
        try Self.upsert(env, phone, [Self.asset("P-same", fingerprint: fp(1))])
        #expect(try env.cloudID(phone, "P-same") == (try env.cloudID(pc, "W1")))
        status = try env.service.mapping.status(device: phone)
        #expect(status.linked == 1 && status.withFingerprint == 2 && status.wanted == 1)
        expectErrorNamed("badRequest") { try env.service.mapping.wanted(device: phone, after: nil, limit: 0) }
        expectErrorNamed("badRequest") { try env.service.mapping.wanted(device: phone, after: nil, limit: 10_001) }
    }

    @Test(arguments: TestEngine.available) func malformedPhotoKitIdentifiersAreRefusedAndStoreNothing(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        let long = String(repeating: "x", count: 129)
        for bad in ["A:001", "A:001:h:x", ":001:h", "A B:001:h", "\(long):001:h", "A:001:\(long)", "A:040:h", "A:1:h"] {
            expectErrorNamed("badRequest") {
                try env.service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(upsert: [Self.asset("ok", key: nil), .asset("x", fingerprint: "", photoKitCloudIdentifier: bad)])), device: d)
            }
        }
        #expect(try env.service.mapping.status(device: d).objects == 0)
        // An album's key carries its own code, and H may be empty.
        try env.service.library.applyChanges(LibraryChangeRequest(assetCollections: LibraryChangePart(upsert: [.assetCollection("c", fingerprint: "", photoKitCloudIdentifier: "ALB:040:")])), device: d)
        #expect(try env.service.mapping.status(device: d).withKey == 1)
    }

    @Test(arguments: TestEngine.available) func aJournalEntryWrittenOnOneIPhoneOpensOnAnotherByKey(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let phone = try env.device("phone"), ipad = try env.device("ipad")
        try Self.upsert(env, phone, [Self.asset("P-BEACH", key: "BEACH"), Self.asset("P-DOG", key: "DOG")])
        try Self.upsert(env, ipad, [Self.asset("I-DOG", key: "DOG"), Self.asset("I-BEACH", key: "BEACH")])
        let journal = try env.service.journals.createJournal(title: "Trip", device: phone)
        let written = try env.service.journals.putEntry(journalID: journal.journalID, entryID: "e1", text: "sea",
                                                        photos: [.localIdentifier("P-BEACH"), .localIdentifier("P-DOG")], ifMatch: nil, device: phone)
        // No fingerprint anywhere: the iPad resolves both photos by key, in order.
        let read = try env.service.journals.journal(journal.journalID, device: ipad)
        #expect(read.entries.first?.photos.map(\.result) == [.found("I-BEACH"), .found("I-DOG")])
        #expect(read.entries.first?.photos.map(\.cloudIdentifier) == written.photos.map(\.cloudIdentifier))
        // The picker on the iPad: the person keeps the dog and adds nothing; the dog keeps its cloud
        // identifier, the beach (preselected, not picked) is dropped.
        let picked = try env.service.journals.applySelection(journalID: journal.journalID, entryID: "e1", cancelled: false,
                                                             localIdentifiers: ["I-DOG"], ifMatch: nil, device: ipad)
        #expect(picked.photos.map(\.cloudIdentifier) == [written.photos[1].cloudIdentifier])
    }

    /// The invariant under races: two devices whose objects carry one key get one record, whichever
    /// asks first, through one service and through two instances sharing the database.
    @Test(arguments: TestEngine.available) func devicesRacingWithOneKeyGetOneRecord(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let services = [env.service, try env.anotherInstance()]
        let devices = [try env.device("A"), try env.device("B")]
        let ids = (0..<40).map { "IMG-\($0)" }
        for (i, d) in devices.enumerated() {
            try Self.upsert(env, d, ids.map { Self.asset("\(i)-\($0)", key: $0) })
        }
        let answers = Mutex2<[Int: [String]]>([:])
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            let result = try? services[i].mapping.cloudIdentifiers(forLocalIdentifiers: ids.map { "\(i)-\($0)" }, device: devices[i])
            answers.set(i, result?.map { if case .found(let c) = $0.result { return c } else { return "" } } ?? [])
        }
        let a = answers.get(0), b = answers.get(1)
        #expect(a.count == 40 && a == b, "one record per key: \(a.prefix(3)) vs \(b.prefix(3))")
        #expect(Set(a).count == 40)
    }
}

/// A tiny lock-guarded dictionary for the race test's answers.
final class Mutex2<Value: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only touched while holding `lock`.
    private let lock = NSLock()
    private var value: [Int: [String]] = [:]
    init(_ value: [Int: [String]]) { self.value = value }
    func set(_ i: Int, _ v: [String]) { self.lock.withLock { self.value[i] = v } }
    func get(_ i: Int) -> [String] { self.lock.withLock { self.value[i] ?? [] } }
}
