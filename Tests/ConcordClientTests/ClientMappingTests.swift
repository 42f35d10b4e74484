import ConcordClient
import Foundation
import Testing

@Test func mappingBothWaysAcrossDevices() async throws {
    let server = try TestServer()
    let (_, devices) = try await server.account(devices: ["Phone", "Tablet"])
    let phone = devices[0], tablet = devices[1]
    let p = (1...4).map { assetID($0, device: "P") }
    let t = (1...3).map { assetID($0, device: "T") }
    let t2b = assetID(22, device: "T")   // a second copy of content 2 on the tablet

    // The phone uploads changes, the tablet its whole library.
    let uploaded = try await phone.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("P", 1...4))))
    #expect(uploaded.inserted == 4 && uploaded.updated == 0 && uploaded.deleted == 0 && uploaded.unchanged == 0)
    let snapshot = LibrarySnapshot(assets: assets("T", 1...3) + [Asset(localIdentifier: t2b, fingerprint: fingerprint(2))])
    #expect(try await tablet.replaceLibrary(snapshot).inserted == 4)
    #expect(try await tablet.replaceLibrary(snapshot).unchanged == 4)

    // Local → cloud: order kept, duplicates answered each time, unknown per item.
    let ordered = try await phone.orderedCloudIdentifierMappings(forLocalIdentifiers: [p[1], p[0], "nope", p[2], p[3], p[1]])
    #expect(ordered.map(\.localIdentifier) == [p[1], p[0], "nope", p[2], p[3], p[1]])
    #expect(ordered[0].cloudIdentifier != nil && ordered[0].cloudIdentifier == ordered[5].cloudIdentifier && ordered[0].error == nil)
    #expect(ordered[2].cloudIdentifier == nil && ordered[2].error?.code == .identifierNotFound && ordered[2].error?.limitedLibrary == false)
    let c = try [p[0], p[1], p[2], p[3]].map { id in try #require(ordered.first { $0.localIdentifier == id }?.cloudIdentifier) }
    #expect(c[0].objectType == .asset && c[0].fingerprint == fingerprint(1) && c[0].isWellFormed)

    // The dictionary form, as PhotoKit answers.
    let byLocal = try await phone.cloudIdentifierMappings(forLocalIdentifiers: p + ["nope"])
    #expect(Set(byLocal.keys) == Set(p + ["nope"]))
    #expect(p.indices.allSatisfy { byLocal[p[$0]]?.cloudIdentifier == c[$0] })
    #expect(byLocal["nope"]?.error?.code.rawValue == 3201)

    // Cloud → local on the tablet: by content; content 2 is ambiguous there; 4 is absent.
    let garbage = CloudIdentifier(stringValue: "garbage")
    let back = try await tablet.orderedLocalIdentifierMappings(for: c + [garbage])
    #expect(back.map(\.cloudIdentifier) == c + [garbage])
    #expect(back[0].localIdentifier == t[0] && back[2].localIdentifier == t[2])
    let multiple = try #require(back[1].error)
    #expect(back[1].localIdentifier == nil && multiple.code == .multipleIdentifiersFound && multiple.code.rawValue == 3202)
    #expect(multiple.localIdentifiers == [t[1], t2b].sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    #expect(back[3].error?.code == .identifierNotFound)
    #expect(back[4].error?.name == "invalidIdentifier" && back[4].error?.code == .invalid)

    // The person picks the second copy; from then on it is the answer, both ways.
    try await tablet.link(cloudIdentifier: c[1], toLocalIdentifier: t2b)
    let byCloud = try await tablet.localIdentifierMappings(for: [c[1], c[0]])
    #expect(byCloud[c[1]]?.localIdentifier == t2b && byCloud[c[0]]?.localIdentifier == t[0])
    #expect(try await tablet.cloudIdentifierMappings(forLocalIdentifiers: [t2b])[t2b]?.cloudIdentifier == c[1])
    // And on the phone every cloud identifier still maps home.
    #expect(try await phone.orderedLocalIdentifierMappings(for: c).map(\.localIdentifier) == p)

    // Linking to an object the device lacks is a ConcordError.
    let notFound = await thrown(ConcordError.self) { try await tablet.link(cloudIdentifier: c[0], toLocalIdentifier: "absent") }
    #expect(notFound?.status == 404 && notFound?.name == "notFound")
    let mismatch = await thrown(ConcordError.self) { try await tablet.link(cloudIdentifier: c[0], toLocalIdentifier: t[2]) }
    #expect(mismatch?.status == 409 && mismatch?.name == "fingerprintMismatch")

    // Empty requests answer empty without asking the server.
    #expect(try await phone.cloudIdentifierMappings(forLocalIdentifiers: []).isEmpty)
    #expect(try await phone.orderedLocalIdentifierMappings(for: []).isEmpty)
}

@Test func authorizationStatusShapesMappingErrors() async throws {
    let server = try TestServer()
    let phone = try await server.account(devices: ["Phone"]).devices[0]
    try await phone.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: assets("P", 1...1))))

    try await phone.setAuthorizationStatus(.limited)
    let limited = try await phone.cloudIdentifierMappings(forLocalIdentifiers: ["unpicked"])
    #expect(limited["unpicked"]?.error?.code == .identifierNotFound && limited["unpicked"]?.error?.limitedLibrary == true)

    // Denied: the whole request is PhotoKit's accessUserDenied, thrown as ConcordPhotosError.
    try await phone.setAuthorizationStatus(.denied)
    let denied = await thrown(ConcordPhotosError.self) { _ = try await phone.cloudIdentifierMappings(forLocalIdentifiers: [assetID(1, device: "P")]) }
    #expect(denied?.code == .accessUserDenied && denied?.code.rawValue == 3311 && denied?.status == 403)
    let deniedBack = await thrown(ConcordPhotosError.self) { _ = try await phone.localIdentifierMappings(for: [CloudIdentifier(stringValue: "x")]) }
    #expect(deniedBack?.code == .accessUserDenied)

    try await phone.setAuthorizationStatus(.authorized)
    #expect(try await phone.cloudIdentifierMappings(forLocalIdentifiers: [assetID(1, device: "P")]).values.first?.cloudIdentifier != nil)
}

@Test func largeBatchesAreSplitToTheServersMaxBatch() async throws {
    // The server takes 5 items per request; the client starts at its default 10 000, learns
    // 5 from the 413 and splits, twice concurrently.
    let server = try TestServer { $0.server.limits.maxBatch = 5 }
    let phone = try await server.account(devices: ["Phone"]).devices[0]
    #expect(phone.effectiveMaxBatch == 10_000)
    // The whole-library PUT is bounded by the body limit only, not by maxBatch.
    try await phone.replaceLibrary(LibrarySnapshot(assets: assets("P", 1...10)))
    // 12 ids: 10 known, 2 unknown, interleaved, so misplaced answers would show.
    var ids = (1...10).map { assetID($0, device: "P") }
    ids.insert("unknown-a", at: 3)
    ids.insert("unknown-b", at: 9)

    let mapped = try await phone.orderedCloudIdentifierMappings(forLocalIdentifiers: ids)
    #expect(phone.effectiveMaxBatch == 5)
    #expect(mapped.map(\.localIdentifier) == ids)
    #expect(mapped.enumerated().allSatisfy { i, m in (i == 3 || i == 9) ? m.error?.code == .identifierNotFound : m.cloudIdentifier != nil })
    #expect(mapped.compactMap { $0.cloudIdentifier?.fingerprint } == (1...10).map(fingerprint))

    // A client configured with the right size, one chunk at a time, gets the same answers.
    let sequential = ConcordClient(
        baseURL: server.baseURL, token: phone.token, configuration: ConcordClient.Configuration(maxBatch: 5, batchConcurrency: 1))
    #expect(try await sequential.orderedCloudIdentifierMappings(forLocalIdentifiers: ids) == mapped)
    // Chunks in flight together (a sliding window), one of them too large for the server:
    // 8 + 4, the 8 refused and split 5 + 3, the order kept.
    for (maxBatch, concurrency) in [(5, 3), (8, 2), (1, 4)] {
        let parallel = ConcordClient(
            baseURL: server.baseURL, token: phone.token, configuration: ConcordClient.Configuration(maxBatch: maxBatch, batchConcurrency: concurrency))
        #expect(try await parallel.orderedCloudIdentifierMappings(forLocalIdentifiers: ids) == mapped)
        #expect(parallel.effectiveMaxBatch == min(maxBatch, 5))
    }

    // Back again, split the same way.
    let clouds = mapped.compactMap(\.cloudIdentifier)
    let back = try await phone.orderedLocalIdentifierMappings(for: clouds + clouds.prefix(2))
    #expect(back.map(\.localIdentifier) == (1...10).map { assetID($0, device: "P") } + [assetID(1, device: "P"), assetID(2, device: "P")])
}
