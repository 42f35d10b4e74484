import ConcordDomain
import ConcordTestSupport
import Foundation
import Testing

@Suite struct LocalToCloudTests {
    @Test(arguments: TestEngine.available) func step1UnknownObjectIsIdentifierNotFound(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        #expect(try env.cloud(d, ["nope"]) == [.error(.identifierNotFound(limitedLibrary: false))])
        expectErrorNamed("badRequest") { try env.cloud(d, [""]) }
    }

    @Test(arguments: TestEngine.available) func step2LinkedObjectAnswersItsRecordEveryTime(_ engine: TestEngine) throws {
        let (env, d, c1) = try TestEnv.oneMappedAsset(engine)
        let parsed = try #require(CloudIdentifier(parsing: c1))
        #expect(parsed.type == .asset)
        #expect(parsed.fingerprint == fp(1))
        #expect(parsed.guid == parsed.guid.uppercased())
        for _ in 0..<3 { #expect(try env.cloudID(d, "a1") == c1) }
        // Unrelated updates that keep the fingerprint keep the link.
        try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(upsert: [.asset("a1", fingerprint: fp(1), isFavorite: true)])), device: d)
        #expect(try env.cloudID(d, "a1") == c1)
    }

    @Test(arguments: TestEngine.available) func step3ReusesTheOldestUnlinkedRecordOfTheSameContent(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        try env.put(a, assets: [("a1", fp(1)), ("a2", fp(1))])   // duplicates on A: two records
        let r1 = try env.cloudID(a, "a1")
        let r2 = try env.cloudID(a, "a2")
        #expect(r1 != r2)
        try env.put(b, assets: [("b1", fp(1)), ("b2", fp(1)), ("b3", fp(1))])
        // B's copies take the records oldest first, then a new one.
        #expect(try env.cloudID(b, "b1") == r1)
        #expect(try env.cloudID(b, "b2") == r2)
        let r3 = try env.cloudID(b, "b3")
        #expect(r3 != r1 && r3 != r2)
    }

    @Test(arguments: TestEngine.available) func step3CreatesARecordWithoutAnyOtherDevice(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        try env.put(d, assets: [("a1", fp(1))])
        try env.service.library.applyChanges(LibraryChangeRequest(assetCollections: .init(upsert: [.assetCollection("c1", fingerprint: fp(2))]),
                                                          collectionLists: .init(upsert: [.collectionList("l1", fingerprint: fp(3))])), device: d)
        let answers = try env.cloud(d, ["a1", "c1", "l1"])
        let types = answers.compactMap { r -> String? in if case .found(let c) = r { return CloudIdentifier(parsing: c)?.type.code } else { return nil } }
        #expect(types == ["001", "040", "020"])
    }

    @Test(arguments: TestEngine.available) func answersKeepRequestOrderAndDuplicates(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        try env.put(d, assets: [("a1", fp(1)), ("a2", fp(2))])
        let m = try env.service.mapping.cloudIdentifiers(forLocalIdentifiers: ["a2", "x", "a1", "a2"], device: d)
        #expect(m.map(\.identifier) == ["a2", "x", "a1", "a2"])
        #expect(m[0].result == m[3].result)
        #expect(m[1].result == .error(.identifierNotFound(limitedLibrary: false)))
        if case .found = m[2].result {} else { Issue.record("a1 not found") }
    }

    @Test(arguments: TestEngine.available) func sameContentOnTwoDevicesGetsOneIdentifierWhicheverAsksFirst(_ engine: TestEngine) throws {
        for aFirst in [true, false] {
            let (env, a, b) = try TestEnv.twoDevices(engine)
            try env.put(a, assets: [("a1", fp(1))])
            try env.put(b, assets: [("b1", fp(1))])
            let (x, y) = aFirst ? (try env.cloudID(a, "a1"), try env.cloudID(b, "b1")) : (try env.cloudID(b, "b1"), try env.cloudID(a, "a1"))
            #expect(x == y)
        }
    }

    @Test(arguments: TestEngine.available) func batchOfManyIdentifiersMixesAllSteps(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        try env.put(d, assets: (0..<500).map { ("a\($0)", fp($0)) })
        _ = try env.cloud(d, (0..<250).map { "a\($0)" })                   // half linked
        let ids = (0..<520).map { "a\($0)" }                               // 20 unknown
        let m = try env.cloud(d, ids)
        #expect(m.filter { if case .found = $0 { return true } else { return false } }.count == 500)
        #expect(try env.cloud(d, ids) == m)
    }

    @Test(arguments: TestEngine.available) func batchTooLarge(_ engine: TestEngine) throws {
        var config = DomainConfiguration()
        config.maxBatch = 3
        let env = try TestEnv(engine, configuration: config)
        let d = try env.device()
        expectError(.batchTooLarge(maxBatch: 3)) { try env.cloud(d, ["a", "b", "c", "d"]) }
        expectError(.batchTooLarge(maxBatch: 3)) { try env.local(d, ["a", "b", "c", "d"]) }
        #expect(try env.cloud(d, ["a", "b", "c"]).count == 3)
    }
}

@Suite struct CloudToLocalTests {
    @Test(arguments: TestEngine.available) func step1MalformedIsInvalidIdentifierPerItem(_ engine: TestEngine) throws {
        let (env, d, c) = try TestEnv.oneMappedAsset(engine)
        #expect(try env.local(d, ["garbage", c, ""]) == [.error(.invalidIdentifier), .found("a1"), .error(.invalidIdentifier)])
    }

    @Test(arguments: TestEngine.available) func step2LinkedRecordAnswersTheObjectEvenWithDuplicates(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        try env.put(d, assets: [("a1", fp(1)), ("a2", fp(1))])
        let c1 = try env.cloudID(d, "a1")
        let c2 = try env.cloudID(d, "a2")
        // Round trip on the producing device despite duplicates.
        #expect(try env.local(d, [c1, c2]) == [.found("a1"), .found("a2")])
        // Lower-case GUID reads the same.
        #expect(try env.local(d, [c1.lowercased().replacingOccurrences(of: fp(1).lowercased(), with: fp(1))]) == [.found("a1")])
    }

    @Test(arguments: TestEngine.available) func step3ResolvesByContentAndStoresTheLink(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        try env.put(a, assets: [("a1", fp(1))])
        try env.put(b, assets: [("b1", fp(1))])
        let c = try env.cloudID(a, "a1")
        #expect(try env.local(b, [c]) == [.found("b1")])
        // The link was stored: B's local → cloud answers the same record without creating another.
        #expect(try env.cloudID(b, "b1") == c)
        // Even after B's object changes another field, step 2 answers.
        #expect(try env.local(b, [c]) == [.found("b1")])
    }

    @Test(arguments: TestEngine.available) func step4EmptyFingerprintPartStandsForTheRecordsOwn(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        try env.service.library.applyChanges(LibraryChangeRequest(assetCollections: .init(upsert: [.assetCollection("ca", fingerprint: fp(7))])), device: a)
        try env.service.library.applyChanges(LibraryChangeRequest(assetCollections: .init(upsert: [.assetCollection("cb", fingerprint: fp(7))])), device: b)
        let full = try #require(CloudIdentifier(parsing: try env.cloudID(a, "ca")))
        let bare = full.guid + ":040:"
        #expect(try env.local(a, [bare]) == [.found("ca")])                             // linked on A
        #expect(try env.service.mapping.localIdentifierResults(forCloudIdentifiers: IdentifierBatch([bare]), device: b, contentMatch: false)
                == [.error(.identifierNotFound(limitedLibrary: false))])                  // no content match asked
        #expect(try env.local(b, [bare]) == [.found("cb")])                               // by the record's fingerprint, and linked
        #expect(try env.cloudID(b, "cb") == full.stringValue)
        #expect(try env.local(b, [full.stringValue, bare]) == [.found("cb"), .found("cb")])
    }

    @Test(arguments: TestEngine.available) func step3NoMatchIsIdentifierNotFoundAndTypeMatters(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        try env.put(d, assets: [("a1", fp(1))])
        let unknown = UUID().uuidString + ":001:" + fp(2)
        let wrongType = UUID().uuidString + ":040:" + fp(1)
        #expect(try env.local(d, [unknown, wrongType]) == [.error(.identifierNotFound(limitedLibrary: false)), .error(.identifierNotFound(limitedLibrary: false))])
        // A record's GUID with another type code is not that record.
        let c = try #require(CloudIdentifier(parsing: try env.cloudID(d, "a1")))
        #expect(try env.local(d, [c.guid + ":040:" + fp(1)]) == [.error(.identifierNotFound(limitedLibrary: false))])
    }

    @Test(arguments: TestEngine.available) func step3DuplicatesAreMultipleIdentifiersFoundSortedAndNotLinked(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        try env.put(a, assets: [("a1", fp(1))])
        try env.put(b, assets: [("é", fp(1)), ("b", fp(1)), ("Z", fp(1))])
        let c = try env.cloudID(a, "a1")
        let expected = MappingResult.error(.multipleIdentifiersFound(localIdentifiers: ["Z", "b", "é"]))
        #expect(try env.local(b, [c]) == [expected])
        #expect(try env.local(b, [c]) == [expected])   // nothing was linked
        // Unknown record with the same content: same answer.
        #expect(try env.local(b, [UUID().uuidString + ":001:" + fp(1)]) == [expected])
    }

    @Test(arguments: TestEngine.available) func step3AnswersAnObjectLinkedElsewhereWithoutRelinking(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        try env.put(a, assets: [("a1", fp(1)), ("a2", fp(1))])
        let c1 = try env.cloudID(a, "a1")
        let c2 = try env.cloudID(a, "a2")
        try env.put(b, assets: [("b1", fp(1))])
        #expect(try env.local(b, [c1]) == [.found("b1")])   // links b1 → c1
        #expect(try env.local(b, [c2]) == [.found("b1")])   // answered by content, b1 keeps c1
        #expect(try env.cloudID(b, "b1") == c1)
    }

    @Test(arguments: TestEngine.available) func step3DoesNotLinkWhenTheFingerprintPartIsNotTheRecords(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        try env.put(a, assets: [("a1", fp(1))])
        try env.put(b, assets: [("b1", fp(2))])
        let c = try #require(CloudIdentifier(parsing: try env.cloudID(a, "a1")))
        let other = c.guid + ":001:" + fp(2)          // record of fp(1), fingerprint part fp(2)
        #expect(try env.local(b, [other]) == [.found("b1")])
        // Not linked: b1 gets its own record, not a1's.
        #expect(try env.cloudID(b, "b1") != c.stringValue)
    }

    @Test(arguments: TestEngine.available) func step4AnotherAccountsGuidIsTreatedAsUnknown(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let mine = try env.device("mine")
        let other = try env.service.accounts.createAccount(name: "Other")
        let theirs = try env.device("theirs", accountID: other.accountID)
        try env.put(theirs, assets: [("t1", fp(1))])
        let c = try env.cloudID(theirs, "t1")
        let bare = try #require(CloudIdentifier(parsing: c)).guid + ":001:"
        #expect(try env.local(mine, [c, bare]) == [.error(.identifierNotFound(limitedLibrary: false)), .error(.identifierNotFound(limitedLibrary: false))])
        try env.put(mine, assets: [("m1", fp(1))])
        #expect(try env.local(mine, [c]) == [.found("m1")])     // by content on my own library
        // No link to the foreign record: my own local → cloud makes my own record.
        #expect(try env.cloudID(mine, "m1") != c)
        #expect(try env.local(theirs, [try env.cloudID(mine, "m1")]) == [.found("t1")])   // and vice versa by content only
    }
}

@Suite struct LinkTests {
    @Test(arguments: TestEngine.available) func linkByPersonReplacesEarlierLinks(_ engine: TestEngine) throws {
        let (env, a, b) = try TestEnv.twoDevices(engine)
        try env.put(a, assets: [("a1", fp(1))])
        try env.put(b, assets: [("b1", fp(1)), ("b2", fp(1))])
        let c = try env.cloudID(a, "a1")
        #expect(try env.local(b, [c]) == [.error(.multipleIdentifiersFound(localIdentifiers: ["b1", "b2"]))])
        try env.service.mapping.link(cloudIdentifier: c, localIdentifier: "b2", device: b)
        #expect(try env.local(b, [c]) == [.found("b2")])
        #expect(try env.cloudID(b, "b2") == c)
        // Relink to b1: the record's earlier link on B (b2) goes.
        try env.service.mapping.link(cloudIdentifier: c, localIdentifier: "b1", device: b)
        #expect(try env.local(b, [c]) == [.found("b1")])
        #expect(try env.cloudID(b, "b2") != c)
        // Linking b1 to another record of the same content replaces b1's earlier link.
        let c2 = try env.cloudID(b, "b2")
        try env.service.mapping.link(cloudIdentifier: c2, localIdentifier: "b1", device: b)
        #expect(try env.cloudID(b, "b1") == c2)
        #expect(try env.local(b, [c]) == [.error(.multipleIdentifiersFound(localIdentifiers: ["b1", "b2"]))])
        // Idempotent.
        try env.service.mapping.link(cloudIdentifier: c2, localIdentifier: "b1", device: b)
        #expect(try env.cloudID(b, "b1") == c2)
    }

    @Test(arguments: TestEngine.available) func linkErrors(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let a = try env.device("A")
        try env.put(a, assets: [("a1", fp(1)), ("a2", fp(2))])
        try env.service.library.applyChanges(LibraryChangeRequest(assetCollections: .init(upsert: [.assetCollection("c1", fingerprint: fp(1))])), device: a)
        let c = try env.cloudID(a, "a1")
        expectErrorNamed("notFound") { try env.service.mapping.link(cloudIdentifier: UUID().uuidString + ":001:" + fp(1), localIdentifier: "a1", device: a) }
        expectErrorNamed("notFound") { try env.service.mapping.link(cloudIdentifier: c, localIdentifier: "nope", device: a) }
        expectErrorNamed("fingerprintMismatch") { try env.service.mapping.link(cloudIdentifier: c, localIdentifier: "a2", device: a) }
        expectErrorNamed("fingerprintMismatch") { try env.service.mapping.link(cloudIdentifier: c, localIdentifier: "c1", device: a) }   // type differs
        expectErrorNamed("badRequest") { try env.service.mapping.link(cloudIdentifier: "junk", localIdentifier: "a1", device: a) }
        // Another account's record is notFound.
        let other = try env.service.accounts.createAccount(name: "Other")
        let o = try env.device("o", accountID: other.accountID)
        try env.put(o, assets: [("o1", fp(1))])
        expectErrorNamed("notFound") { try env.service.mapping.link(cloudIdentifier: c, localIdentifier: "o1", device: o) }
    }
}

@Suite struct LinkDroppingTests {
    @Test(arguments: TestEngine.available) func deleteDropsTheLink(_ engine: TestEngine) throws {
        let (env, d, c) = try TestEnv.oneMappedAsset(engine)
        try env.service.library.applyChanges(LibraryChangeRequest(assets: .init(delete: ["a1"])), device: d)
        #expect(try env.local(d, [c]) == [.error(.identifierNotFound(limitedLibrary: false))])
        // Re-added with the same content: it takes the (now unlinked) oldest record again.
        try env.put(d, assets: [("a1", fp(1))])
        #expect(try env.cloudID(d, "a1") == c)
    }

    @Test(arguments: TestEngine.available) func fingerprintChangeDropsTheLink(_ engine: TestEngine) throws {
        let (env, d, c) = try TestEnv.oneMappedAsset(engine)
        try env.put(d, assets: [("a1", fp(2))])
        let c2 = try env.cloudID(d, "a1")
        #expect(c2 != c)
        #expect(CloudIdentifier(parsing: c2)?.fingerprint == fp(2))
        #expect(try env.local(d, [c]) == [.error(.identifierNotFound(limitedLibrary: false))])
        #expect(try env.local(d, [c2]) == [.found("a1")])
    }

    @Test(arguments: TestEngine.available) func resetDropsEveryLinkAndIsOneUnavailableChange(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        try env.put(d, assets: [("a1", fp(1)), ("a2", fp(2))])
        let c1 = try env.cloudID(d, "a1")
        let bare = try #require(CloudIdentifier(parsing: c1)).guid + ":001:"
        let t0 = try env.service.history.currentChangeToken(device: d)
        let r = try env.service.library.replaceLibrary(LibrarySnapshot(objects: [.asset("a1", fingerprint: fp(1)), .asset("a3", fingerprint: fp(3))]), reset: true, device: d)
        #expect((r.inserted, r.updated, r.deleted, r.unchanged) == (1, 0, 1, 1))
        // Link gone: without content match (the empty part would stand for the record's fingerprint) nothing resolves it.
        #expect(try env.service.mapping.localIdentifierResults(forCloudIdentifiers: IdentifierBatch([bare]), device: d, contentMatch: false)
                == [.error(.identifierNotFound(limitedLibrary: false))])
        let page = try env.service.history.changes(since: t0, limit: nil, device: d)
        #expect(page.changes.count == 1)
        #expect(page.changes[0].details == nil)
        #expect(page.changeToken == r.changeToken)
        // Content still resolves, and local → cloud picks up the old record again.
        #expect(try env.local(d, [c1]) == [.found("a1")])
        #expect(try env.cloudID(d, "a1") == c1)
        // A reset of an identical library still records its change.
        let r2 = try env.service.library.replaceLibrary(LibrarySnapshot(objects: [.asset("a1", fingerprint: fp(1)), .asset("a3", fingerprint: fp(3))]), reset: true, device: d)
        #expect(r2.changeToken != r.changeToken)
        // Reset may change an identifier's type.
        try env.service.library.replaceLibrary(LibrarySnapshot(objects: [.assetCollection("a1", fingerprint: fp(1))]), reset: true, device: d)
        #expect(try env.service.library.object(localIdentifier: "a1", device: d).type == .assetCollection)
    }
}

@Suite struct AuthorizationTests {
    @Test(arguments: TestEngine.available) func deniedRefusesMappingAndLimitedMarksNotFound(_ engine: TestEngine) throws {
        let (env, d, c) = try TestEnv.oneMappedAsset(engine)
        try env.service.library.setAuthorization(.denied, device: d)
        expectError(.accessUserDenied) { try env.cloud(d, ["a1"]) }
        expectError(.accessUserDenied) { try env.local(d, [c]) }
        expectError(.accessUserDenied) { try env.service.mapping.link(cloudIdentifier: c, localIdentifier: "a1", device: d) }
        try env.service.library.setAuthorization(.limited, device: d)
        #expect(try env.cloud(d, ["a1", "x"]) == [.found(c), .error(.identifierNotFound(limitedLibrary: true))])
        #expect(try env.local(d, [UUID().uuidString + ":001:" + fp(5)]) == [.error(.identifierNotFound(limitedLibrary: true))])
        try env.service.library.setAuthorization(.authorized, device: d)
        #expect(try env.cloud(d, ["x"]) == [.error(.identifierNotFound(limitedLibrary: false))])
    }
}

/// Identifiers are byte strings: an NFC and an NFD spelling of "CAFÉ" are two objects,
/// in one request as in two, whatever Swift's `String ==` (canonical equivalence) would say.
@Suite struct CanonicallyEquivalentIdentifiersTests {
    static let nfc = "CAF\u{00C9}/L0/001"
    static let nfd = "CAFE\u{0301}/L0/001"

    @Test(arguments: TestEngine.available) func nfcAndNFDAreTwoObjectsEverywhere(_ engine: TestEngine) throws {
        let env = try TestEnv(engine)
        let d = try env.device()
        #expect(Self.nfc == Self.nfd)   // what Swift says; storage and the API say otherwise
        // One request with both: no "listed twice".
        let put = try env.put(d, assets: [(Self.nfc, fp(1)), (Self.nfd, fp(2))])
        #expect(put.inserted == 2)
        // Both new in one batch: each gets a record of its own content.
        let clouds = try env.cloud(d, [Self.nfc, Self.nfd])
        guard case .found(let c1) = clouds[0], case .found(let c2) = clouds[1] else {
            Issue.record("expected two cloud identifiers, got \(clouds)")
            return
        }
        #expect(c1.hasSuffix(":" + fp(1)) && c2.hasSuffix(":" + fp(2)) && c1 != c2)
        // And back: each cloud identifier resolves to its own spelling.
        let back = try env.service.mapping.localIdentifiers(forCloudIdentifiers: [c1, c2], device: d).map(\.result)
        guard case .found(let l1) = back[0], case .found(let l2) = back[1] else {
            Issue.record("expected two local identifiers, got \(back)")
            return
        }
        #expect(Array(l1.utf8) == Array(Self.nfc.utf8) && Array(l2.utf8) == Array(Self.nfd.utf8))
        // Deleting one leaves the other.
        _ = try env.service.library.applyChanges(LibraryChangeRequest(assets: LibraryChangePart(delete: [Self.nfd])), device: d)
        let after = try env.cloud(d, [Self.nfc, Self.nfd])
        #expect(after[0] == .found(c1))
        #expect(after[1] == .error(.identifierNotFound(limitedLibrary: false)))
    }
}
