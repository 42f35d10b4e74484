import ConcordClient
import ConcordHTTP
import Foundation
import Testing

// Keys through the client: PhotoKit's keys, optional fingerprints, contentMatch, the wanted
// list and the library's status, against the real server (and the wire, where the shape matters).

/// A PhotoKit-like cloud identifier string `A:C:H` for photo number `n` of one iCloud library.
private func photoKitID(_ n: Int, _ type: CloudObjectType = .asset) -> String {
    "ICLOUD-RECORD-\(n):\(type.rawValue):AbPhotoKitHash\(n)"
}

/// A status's counts in their order: objects, withFingerprint, withKey, linked, wanted.
private func counts(_ s: LibraryStatus) -> [Int] { [s.objects, s.withFingerprint, s.withKey, s.linked, s.wanted] }

/// An asset with a key and no fingerprint, as an iPhone with Optimize Storage sends it.
private func keyedAsset(_ device: String, _ n: Int, created: Date? = nil) -> Asset {
    Asset(localIdentifier: assetID(n, device: device), photoKitCloudIdentifier: photoKitID(n), creationDate: created)
}

@Test func twoDevicesOnOneICloudLibraryMatchByKeyWithNoFingerprintAtAll() async throws {
    let server = try TestServer()
    let (_, devices) = try await server.account(devices: ["iPhone", "iPad"])
    let phone = devices[0], pad = devices[1]
    // Same iCloud library: the same keys under each device's own local identifiers.
    let album = AssetCollection(
        localIdentifier: "P-album/L0/040", photoKitCloudIdentifier: "ICLOUD-ALBUM-1:040:", title: "Trip",
        assets: [assetID(1, device: "P"), assetID(2, device: "P")])
    try await phone.replaceLibrary(LibrarySnapshot(assets: (1...3).map { keyedAsset("P", $0) }, assetCollections: [album]))
    try await pad.replaceLibrary(LibrarySnapshot(
        assets: (1...3).map { keyedAsset("T", $0) },
        assetCollections: [AssetCollection(localIdentifier: "T-album/L0/040", photoKitCloudIdentifier: "ICLOUD-ALBUM-1:040:", title: "Trip")]))

    // Stored without a fingerprint: read back as nil, the key as sent.
    guard case .asset(let stored) = try await phone.object(withLocalIdentifier: assetID(1, device: "P")) else {
        Issue.record("not an asset"); return
    }
    #expect(stored.fingerprint == nil && stored.photoKitCloudIdentifier == photoKitID(1))
    let storedAlbum = try await pad.object(withLocalIdentifier: "T-album/L0/040")
    #expect(storedAlbum.fingerprint == nil && storedAlbum.photoKitCloudIdentifier == "ICLOUD-ALBUM-1:040:")

    // The phone's identifiers: records made without a fingerprint (`<GUID>:001:`).
    let phoneIDs = (1...3).map { assetID($0, device: "P") } + ["P-album/L0/040"]
    let clouds = try await phone.orderedCloudIdentifierMappings(forLocalIdentifiers: phoneIDs).map { try #require($0.cloudIdentifier) }
    #expect(clouds.allSatisfy { $0.isWellFormed && $0.fingerprint == "" })
    #expect(clouds.map(\.objectType) == [.asset, .asset, .asset, .assetCollection])

    // The iPad finds each by key, with content matching off (nothing could match by content).
    let padIDs = (1...3).map { assetID($0, device: "T") } + ["T-album/L0/040"]
    let back = try await pad.orderedLocalIdentifierMappings(for: clouds, contentMatch: false)
    #expect(back.map(\.localIdentifier) == padIDs && back.allSatisfy { $0.error == nil })
    // ... and the other way it answers the same records: one identifier per photo for both.
    #expect(try await pad.orderedCloudIdentifierMappings(forLocalIdentifiers: padIDs).map(\.cloudIdentifier) == clouds)

    // Sending an object again without its key or fingerprint keeps what is stored: unchanged.
    let again = try await phone.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: [Asset(localIdentifier: assetID(1, device: "P"))])))
    #expect(again.unchanged == 1 && again.updated == 0)
    #expect(try await phone.object(withLocalIdentifier: assetID(1, device: "P")).photoKitCloudIdentifier == photoKitID(1))

    // A record made without a fingerprint takes the first one linked to it, once: same record,
    // now spelled with it.
    try await phone.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: [
        Asset(localIdentifier: assetID(1, device: "P"), fingerprint: fingerprint(1)),
    ])))
    let spelled = try #require(try await phone.orderedCloudIdentifierMappings(forLocalIdentifiers: [assetID(1, device: "P")])[0].cloudIdentifier)
    #expect(spelled.fingerprint == fingerprint(1) && spelled.isSameRecord(as: clouds[0]))
    #expect(try await pad.orderedLocalIdentifierMappings(for: [spelled]).map(\.localIdentifier) == [assetID(1, device: "T")])

    let status = try await pad.status()
    #expect(counts(status) == [4, 0, 4, 4, 0])
}

@Test func severalObjectsWithOneKeyAreAmbiguousUnderPhotoKitsUserInfoKey() async throws {
    let server = try TestServer()
    let (_, devices) = try await server.account(devices: ["iPhone", "iPad"])
    let phone = devices[0], pad = devices[1]
    try await phone.replaceLibrary(LibrarySnapshot(assets: [keyedAsset("P", 1)]))
    // Several objects of one device may carry the same key.
    let twins = [keyedAsset("T", 1), Asset(localIdentifier: assetID(11, device: "T"), photoKitCloudIdentifier: photoKitID(1))]
    try await pad.replaceLibrary(LibrarySnapshot(assets: twins))
    let cloud = try #require(try await phone.orderedCloudIdentifierMappings(forLocalIdentifiers: [assetID(1, device: "P")])[0].cloudIdentifier)

    let answer = try await pad.orderedLocalIdentifierMappings(for: [cloud], contentMatch: false)[0]
    let error = try #require(answer.error)
    let candidates = twins.map(\.localIdentifier).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    #expect(error.code == .multipleIdentifiersFound && error.localIdentifiers == candidates)
    let bridged = error as NSError
    #expect(bridged.domain == "PHPhotosErrorDomain" && bridged.code == 3202)
    #expect(ConcordPhotosError.localIdentifiersErrorKey == "PHLocalIdentifiersErrorKey")
    #expect(bridged.userInfo["PHLocalIdentifiersErrorKey"] as? [String] == candidates)
    // The key the client used before is still set for code that reads it.
    #expect(bridged.userInfo["localIdentifiers"] as? [String] == candidates)

    // The person chooses; the link answers from then on.
    try await pad.link(cloudIdentifier: cloud, toLocalIdentifier: candidates[1])
    #expect(try await pad.orderedLocalIdentifierMappings(for: [cloud]).map(\.localIdentifier) == [candidates[1]])

    // An error with no candidates sets neither key.
    let plain = ConcordPhotosError(code: .identifierNotFound, name: "identifierNotFound") as NSError
    #expect(plain.userInfo["PHLocalIdentifiersErrorKey"] == nil && plain.userInfo["localIdentifiers"] == nil)
}

@Test func contentMatchFalseSkipsContentOnly() async throws {
    let server = try TestServer()
    let (_, devices) = try await server.account(devices: ["Mac", "Phone"])
    let mac = devices[0], phone = devices[1]
    // Another Apple ID: no shared keys, the same content.
    try await mac.replaceLibrary(LibrarySnapshot(assets: assets("M", 1...2)))
    try await phone.replaceLibrary(LibrarySnapshot(assets: assets("P", 1...2)))
    let clouds = try await mac.orderedCloudIdentifierMappings(forLocalIdentifiers: (1...2).map { assetID($0, device: "M") }).map { try #require($0.cloudIdentifier) }

    let skipped = try await phone.localIdentifierMappings(for: clouds, contentMatch: false)
    #expect(clouds.allSatisfy { skipped[$0]?.localIdentifier == nil && skipped[$0]?.error?.code == .identifierNotFound })
    // By default content decides, and the link is stored ...
    #expect(try await phone.orderedLocalIdentifierMappings(for: [clouds[0]]).map(\.localIdentifier) == [assetID(1, device: "P")])
    // ... so without content the link answers now; the other still is not found.
    let linked = try await phone.orderedLocalIdentifierMappings(for: clouds, contentMatch: false)
    #expect(linked[0].localIdentifier == assetID(1, device: "P") && linked[1].error?.code == .identifierNotFound)
}

@Test func contentMatchIsSentOnlyWhenFalse() async throws {
    let answer = #"{"mappings":[{"cloudIdentifier":"x","error":{"name":"invalidIdentifier","message":"m"}}]}"#
    let server = try ScriptedServer([reply(200, answer)])
    let client = server.client()
    let x = CloudIdentifier(stringValue: "x")
    _ = try await client.orderedLocalIdentifierMappings(for: [x])
    _ = try await client.localIdentifierMappings(for: [x], contentMatch: true)
    _ = try await client.localIdentifierMappings(for: [x], contentMatch: false)
    let bodies = try server.responder.requests.map { try #require(try JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any]) }
    try #require(bodies.count == 3)
    #expect(bodies.map { $0.keys.sorted() } == [["cloudIdentifiers"], ["cloudIdentifiers"], ["cloudIdentifiers", "contentMatch"]])
    #expect(bodies[2]["contentMatch"] as? Bool == false)
}

@Test func fingerprintAndKeyAreOmittedWhenNilAndReadBackFromNull() throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    let bare = String(decoding: try encoder.encode(Asset(localIdentifier: "a")), as: UTF8.self)
    #expect(bare == #"{"localIdentifier":"a"}"#)
    let full = String(decoding: try encoder.encode(CollectionList(localIdentifier: "f", fingerprint: "fp", photoKitCloudIdentifier: "R:020:")), as: UTF8.self)
    #expect(full == #"{"fingerprint":"fp","localIdentifier":"f","photoKitCloudIdentifier":"R:020:"}"#)
    // The initialisers of before still read the same.
    #expect(Asset(localIdentifier: "a", fingerprint: "fp", mediaType: .video).fingerprint == "fp")
    #expect(AssetCollection(localIdentifier: "b", fingerprint: "fp", title: "t").photoKitCloudIdentifier == nil)

    let stored = #"{"type":"assetCollections","localIdentifier":"b","fingerprint":null,"photoKitCloudIdentifier":null,"title":null,"assets":[],"appCreated":false}"#
    let object = try JSONDecoder().decode(LibraryObject.self, from: Data(stored.utf8))
    #expect(object == .assetCollection(AssetCollection(localIdentifier: "b", assets: [], appCreated: false)))
    #expect(object.fingerprint == nil && object.photoKitCloudIdentifier == nil)
}

@Test func wantedPagesAndStatusTellWhatToHash() async throws {
    let server = try TestServer()
    let (_, devices) = try await server.account(devices: ["Mac", "Phone"])
    let mac = devices[0], phone = devices[1]
    let day = 1_700_000_000.0
    // The Mac has the originals: fingerprints, creation dates, records linked to it.
    let macAssets = (1...6).map { n in
        Asset(localIdentifier: assetID(n, device: "M"), fingerprint: fingerprint(n), creationDate: Date(timeIntervalSince1970: day + Double(n) * 60 + 0.25))
    }
    try await mac.replaceLibrary(LibrarySnapshot(assets: macAssets))
    let clouds = try await mac.orderedCloudIdentifierMappings(forLocalIdentifiers: macAssets.map(\.localIdentifier)).map { try #require($0.cloudIdentifier) }

    // The phone (another Apple ID, Optimize Storage): no fingerprints; 1...5 taken the same
    // second as the Mac's (fractions cut), 7 at a time no record has: not worth hashing;
    // 8 hashed already.
    var phoneAssets = (1...5).map { n in
        Asset(localIdentifier: assetID(n, device: "P"), creationDate: Date(timeIntervalSince1970: day + Double(n) * 60 + 0.9))
    }
    phoneAssets.append(Asset(localIdentifier: assetID(7, device: "P"), creationDate: Date(timeIntervalSince1970: day + 7 * 60)))
    phoneAssets.append(Asset(localIdentifier: assetID(8, device: "P"), fingerprint: fingerprint(8)))
    try await phone.replaceLibrary(LibrarySnapshot(assets: phoneAssets))
    let wantedIDs = (1...5).map { assetID($0, device: "P") }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }

    #expect(counts(try await phone.status()) == [7, 1, 0, 0, 5])

    // Pages of 2: three of them, `total` on each, following `next` to the end; again from the start.
    for _ in 1...2 {
        var pages: [WantedPage] = []
        for try await page in phone.wanted(limit: 2) { pages.append(page) }
        #expect(pages.map(\.objects.count) == [2, 2, 1] && pages.allSatisfy { $0.total == 5 })
        #expect(pages.flatMap(\.objects).map(\.localIdentifier) == wantedIDs && pages.flatMap(\.objects).allSatisfy { $0.type == .asset })
        #expect(pages.map(\.next) == [wantedIDs[1], wantedIDs[3], nil])
    }
    let rest = try await phone.wantedPage(after: wantedIDs[2], limit: 10_000)
    #expect(rest.objects.map(\.localIdentifier) == Array(wantedIDs[3...]) && rest.next == nil && rest.total == 5)

    // A limit out of 1...10 000 is the server's 400 naming it.
    for limit in [0, 10_001] {
        let refused = await thrown(ConcordError.self) { for try await _ in phone.wanted(limit: limit) {} }
        #expect(refused?.status == 400 && refused?.field == "limit")
    }

    // Hash only those, page by page, and send their fingerprints as each page is done.
    var hashed: [String] = []
    for try await page in phone.wanted(limit: 2) {
        let upserts = page.objects.map { wanted in
            let n = Int(wanted.localIdentifier.dropFirst(2).prefix { $0.isNumber })!
            var asset = phoneAssets.first { $0.localIdentifier == wanted.localIdentifier }!
            asset.fingerprint = fingerprint(n)
            return asset
        }
        try await phone.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: upserts)))
        hashed += page.objects.map(\.localIdentifier)
    }
    #expect(hashed == wantedIDs)
    #expect(try await phone.wantedPage().total == 0)

    // Now the Mac's identifiers find the phone's copies by content.
    let found = try await phone.orderedLocalIdentifierMappings(for: Array(clouds[0..<5]))
    #expect(found.map(\.localIdentifier) == (1...5).map { assetID($0, device: "P") })
    #expect(counts(try await phone.status()) == [7, 6, 0, 5, 0])
}

private let longPart = String(repeating: "a", count: 128)

@Test(arguments: [
    // (string, type, expected error or nil when accepted)
    ("ICLOUD-RECORD-1:001:AbHash", CloudObjectType.asset, nil),
    ("R:001:", .asset, nil),                                       // H may be empty
    ("\(longPart):001:\(longPart)", .asset, nil),                  // both at 128 bytes
    ("!~#%/=.:040:", .assetCollection, nil),                      // any printable ASCII but ':'
    ("R:020:h", .collectionList, nil),
    ("R:001", .asset, .partCount(2)),                              // two parts
    ("R", .asset, .partCount(1)),
    ("R:001:h:x", .asset, .partCount(4)),                          // four parts
    (":001:h", .asset, .emptyRecordName),                          // empty A
    ("R 1:001:h", .asset, .invalidCharacter(.recordName, offset: 1)),   // a space
    ("R:001:h h", .asset, .invalidCharacter(.contentHash, offset: 1)),
    ("R\t:001:", .asset, .invalidCharacter(.recordName, offset: 1)),
    ("Ré:001:", .asset, .invalidCharacter(.recordName, offset: 1)),      // beyond ASCII
    ("\(longPart)a:001:h", .asset, .tooLong(.recordName, bytes: 129)),    // a part over 128 bytes
    ("R:001:\(longPart)a", .asset, .tooLong(.contentHash, bytes: 129)),
    ("R:040:h", .asset, .typeCode("040", expected: .asset)),        // the wrong type code
    ("R:001:", .assetCollection, .typeCode("001", expected: .assetCollection)),
    ("R:020:", .assetCollection, .typeCode("020", expected: .assetCollection)),
    ("R:002:h", .asset, .typeCode("002", expected: .asset)),
    ("R::h", .collectionList, .typeCode("", expected: .collectionList)),
] as [(String, CloudObjectType, PhotoKitCloudIdentifier.ValidationError?)])
func photoKitCloudIdentifierIsCheckedByTheContractsRule(_ text: String, _ type: CloudObjectType, _ expected: PhotoKitCloudIdentifier.ValidationError?) throws {
    if let expected {
        #expect(throws: expected) { try PhotoKitCloudIdentifier(text, objectType: type) }
        #expect(throws: expected) { try PhotoKitCloudIdentifier.key(text, objectType: type) }
    } else {
        let id = try PhotoKitCloudIdentifier(text, objectType: type)
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        #expect(id.stringValue == text && id.contentHash == parts[2])
        #expect(id.key.recordName == parts[0] && id.key.objectType == type && id.key.description == "\(parts[0]):\(parts[1])")
        #expect(try PhotoKitCloudIdentifier.key(text, objectType: type) == id.key)
    }
}

@Test func theHelperAndTheServerAgreeOnEveryIdentifier() async throws {
    // Each string alone as an asset's (or album's) identifier: the helper's verdict is the
    // server's (400 naming the field, nothing stored).
    let server = try TestServer()
    let phone = try await server.account(devices: ["iPhone"]).devices[0]
    let cases: [(String, CloudObjectType)] = [
        ("R:001:h", .asset), ("R:001:", .asset), ("\(longPart):001:\(longPart)", .asset), ("R:040:", .assetCollection),
        ("R:001", .asset), ("R:001:h:x", .asset), (":001:h", .asset), ("R 1:001:h", .asset), ("R:001:h h", .asset),
        ("\(longPart)a:001:h", .asset), ("R:001:\(longPart)a", .asset), ("R:040:h", .asset), ("R:001:", .assetCollection),
        ("Ré:001:", .asset),
    ]
    for (i, (text, type)) in cases.enumerated() {
        let id = "obj-\(i)"
        let changes = type == .asset
            ? LibraryChanges(assets: ObjectChanges(upsert: [Asset(localIdentifier: id, photoKitCloudIdentifier: text)]))
            : LibraryChanges(assetCollections: ObjectChanges(upsert: [AssetCollection(localIdentifier: id, photoKitCloudIdentifier: text)]))
        let helperAccepts = (try? PhotoKitCloudIdentifier(text, objectType: type)) != nil
        let refused = await thrown(ConcordError.self) { try await phone.applyChanges(changes) }
        #expect((refused == nil) == helperAccepts, "\(text) as \(type)")
        if let refused {
            #expect(refused.status == 400 && refused.field?.hasSuffix("photoKitCloudIdentifier") == true, "\(text): \(refused)")
            let absent = await thrown(ConcordError.self) { _ = try await phone.object(withLocalIdentifier: id) }
            #expect(absent?.status == 404)
        }
    }
}

@Test func keyedTurnsPhotoKitsAnswersIntoUploads() async throws {
    let phoneAssets = (1...4).map { Asset(localIdentifier: assetID($0, device: "P"), creationDate: Date(timeIntervalSince1970: Double($0))) }
    // What the app read from PhotoKit: 1 and 2 fine, 3 odd, 4 without an answer.
    let strings = [
        assetID(1, device: "P"): photoKitID(1), assetID(2, device: "P"): photoKitID(2),
        assetID(3, device: "P"): "odd identifier:001:", "elsewhere": photoKitID(9),
    ]
    let (keyed, rejected) = PhotoKitCloudIdentifier.keyed(phoneAssets, stringValues: strings)
    #expect(keyed.map(\.localIdentifier) == phoneAssets.map(\.localIdentifier))
    #expect(keyed.map(\.photoKitCloudIdentifier) == [photoKitID(1), photoKitID(2), nil, nil])
    #expect(keyed.map(\.creationDate) == phoneAssets.map(\.creationDate))
    #expect(rejected == [assetID(3, device: "P"): .invalidCharacter(.recordName, offset: 3)])

    // The album's own type code is checked.
    var album = AssetCollection(localIdentifier: "album")
    #expect(throws: PhotoKitCloudIdentifier.ValidationError.typeCode("001", expected: .assetCollection)) {
        try album.setPhotoKitCloudIdentifier(photoKitID(1))
    }
    #expect(album.photoKitCloudIdentifier == nil)
    #expect(try album.setPhotoKitCloudIdentifier(photoKitID(1, .assetCollection)).description == "ICLOUD-RECORD-1:040")

    // And the whole upload goes through.
    let server = try TestServer()
    let phone = try await server.account(devices: ["iPhone"]).devices[0]
    #expect(try await phone.replaceLibrary(LibrarySnapshot(assets: keyed, assetCollections: [album])).inserted == 5)
    #expect(counts(try await phone.status()) == [5, 0, 3, 0, 0])
}
