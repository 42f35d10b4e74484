import ConcordDomain
import ConcordJSON
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordApp

@Test func twoDevicesMapOneWayAndBack() throws {
    let server = try APIServer()
    let account = try server.account()
    let phone = try server.device(account.token, "Phone")
    let tablet = try server.device(account.token, "Tablet")
    // The same three photos under each device's own identifiers; a fourth only on the phone.
    try server.upsert(phone.token, assets: [("p1", fingerprint(1)), ("p2", fingerprint(2)), ("p3", fingerprint(3)), ("p4", fingerprint(4))])
    try server.upsert(tablet.token, assets: [("t1", fingerprint(1)), ("t2", fingerprint(2)), ("t3", fingerprint(3))])

    // Order kept, duplicates answered each time, unknown ones per item.
    let phoneMap = try server.cloudIDs(phone.token, ["p2", "p1", "nope", "p2", "p3", "p4"])
    #expect(phoneMap.map { $0["localIdentifier"]?.stringValue } == ["p2", "p1", "nope", "p2", "p3", "p4"])
    let clouds = phoneMap.map { $0["cloudIdentifier"]?.stringValue }
    #expect(clouds[0] != nil && clouds[0] == clouds[3] && clouds[1] != nil && clouds[1] != clouds[0])
    let missing = try #require(phoneMap[2]["error"])
    #expect(missing == (try JSONValue.parse(Array("""
        {"name":"identifierNotFound","message":"No object with this identifier in the library.","domain":"PHPhotosErrorDomain","code":3201}
        """.utf8))))
    #expect(phoneMap[2]["cloudIdentifier"] == nil)
    // The identifier's layout: upper-case GUID, type code, the content's fingerprint.
    let c1 = try #require(clouds[1])
    #expect(c1.hasSuffix(":001:" + fingerprint(1)) && c1.prefix(36) == c1.prefix(36).uppercased())

    // Cloud → local on the tablet: by content, then linked; the tablet's own local → cloud agrees.
    let p = [clouds[1]!, clouds[0]!, clouds[4]!, clouds[5]!]
    let lowerGUID = c1.prefix(36).lowercased() + c1.dropFirst(36)
    let back = try server.localIDs(tablet.token, p + ["garbage", lowerGUID])
    #expect(back.map { $0["cloudIdentifier"]?.stringValue } == p + ["garbage", lowerGUID])
    #expect(back.prefix(3).map { $0["localIdentifier"]?.stringValue } == ["t1", "t2", "t3"])
    #expect(back[3]["error"]?["name"]?.stringValue == "identifierNotFound")
    #expect(back[4]["error"] == (try JSONValue.parse(Array(#"{"name":"invalidIdentifier","message":"Not a well-formed identifier."}"#.utf8))))
    #expect(back[5]["localIdentifier"]?.stringValue == "t1")   // either case reads
    let tabletMap = try server.cloudIDs(tablet.token, ["t1", "t2", "t3"])
    #expect(tabletMap.map { $0["cloudIdentifier"]?.stringValue } == [clouds[1], clouds[0], clouds[4]])

    // Back on the phone: every cloud identifier maps to the phone's object.
    #expect(try server.localIDs(phone.token, p).map { $0["localIdentifier"]?.stringValue } == ["p1", "p2", "p3", "p4"])

    // Another account's identifiers say nothing: a foreign GUID resolves by content on
    // the caller's own library only.
    let other = try server.account("Other")
    let stranger = try server.device(other.token)
    try server.upsert(stranger.token, assets: [("s1", fingerprint(1))])
    #expect(try server.localIDs(stranger.token, [c1])[0]["localIdentifier"]?.stringValue == "s1")
    #expect(try server.cloudIDs(stranger.token, ["s1"])[0]["cloudIdentifier"]?.stringValue != c1)
    #expect(try server.localIDs(stranger.token, [clouds[0]!])[0]["error"]?["name"]?.stringValue == "identifierNotFound")

    // An album: type 040 with its own fingerprint.
    _ = try server.call("POST", "/v1/library/changes", token: phone.token,
                        body: #"{"assetCollections":{"upsert":[{"localIdentifier":"alb","fingerprint":"\#(fingerprint(50))","assets":["p1"]}]}}"#)
    let albumCloud = try #require(try server.cloudIDs(phone.token, ["alb"])[0]["cloudIdentifier"]?.stringValue)
    #expect(albumCloud.contains(":040:"))
    // Same GUID and type, empty fingerprint part: the record's (its link here, its fingerprint
    // elsewhere; the tablet has no album with that content).
    let guid = String(albumCloud.prefix(36))
    #expect(try server.localIDs(phone.token, [guid + ":040:"])[0]["localIdentifier"]?.stringValue == "alb")
    #expect(try server.localIDs(tablet.token, [guid + ":040:"])[0]["error"]?["name"]?.stringValue == "identifierNotFound")
}

/// A photo with neither key nor fingerprint gets `<GUID>:001:`, and is wanted on its device: only
/// its content can match that record anywhere else. Once its device sends the fingerprint, the
/// record takes it, the photo is no longer wanted, and another device holding the same content
/// resolves `<GUID>:001:` to its own photo (the record's fingerprint stands for the empty part).
@Test(arguments: TestEngine.available) func anUnhashedKeylessPhotoIsWantedAndItsEmptySpellingResolvesOnceHashed(_ engine: TestEngine) throws {
    let server = try APIServer(engine: engine)
    let (_, a, b) = try server.phoneAndTablet()
    let sent = try server.call("POST", "/v1/library/changes", token: a.token, body: #"{"assets":{"upsert":[{"localIdentifier":"A-1"}]}}"#)
    try #require(sent.status == 200, "\(sent.raw.body)")
    let bare = try #require(try server.cloudIDs(a.token, ["A-1"])[0]["cloudIdentifier"]?.stringValue)
    #expect(bare.hasSuffix(":001:"))

    // Wanted on A, for its link.
    let wanted = try server.call("GET", "/v1/library/wanted", token: a.token)
    #expect(wanted.status == 200)
    #expect(wanted.json == (try JSONValue.parse(Array(#"{"objects":[{"localIdentifier":"A-1","type":"assets"}],"next":null,"total":1}"#.utf8))))
    let status = try server.call("GET", "/v1/library/status", token: a.token)
    #expect(status["linked"]?.intValue == 1 && status["wanted"]?.intValue == 1, "\(status.raw.body)")

    // B holds the same photo, hashed: before A hashes, the empty spelling has no content to match.
    try server.upsert(b.token, assets: [("B-1", fingerprint(7)), ("B-2", fingerprint(8))])
    #expect(try server.localIDs(b.token, [bare])[0]["error"]?["name"]?.stringValue == "identifierNotFound")

    // A sends its fingerprint: the record takes it, and A's photo is no longer wanted.
    try server.upsert(a.token, assets: [("A-1", fingerprint(7))])
    let after = try server.call("GET", "/v1/library/wanted", token: a.token)
    #expect(after["total"]?.intValue == 0 && after["objects"]?.arrayValue?.isEmpty == true)
    #expect(try server.call("GET", "/v1/library/status", token: a.token)["wanted"]?.intValue == 0)
    #expect(try server.cloudIDs(a.token, ["A-1"])[0]["cloudIdentifier"]?.stringValue == bare + fingerprint(7))

    // B asked `<GUID>:001:` finds its photo by the record's fingerprint, and the link is stored.
    let found = try server.localIDs(b.token, [bare])
    #expect(found[0]["cloudIdentifier"]?.stringValue == bare && found[0]["localIdentifier"]?.stringValue == "B-1")
    #expect(try server.cloudIDs(b.token, ["B-1"])[0]["cloudIdentifier"]?.stringValue == bare + fingerprint(7))
    #expect(try server.localIDs(b.token, [bare, bare + fingerprint(7)]).map { $0["localIdentifier"]?.stringValue } == ["B-1", "B-1"])
}

@Test func duplicatesAreMultipleIdentifiersFoundUntilThePersonLinksOne() throws {
    let server = try APIServer()
    let account = try server.account()
    let phone = try server.device(account.token, "Phone")
    let mac = try server.device(account.token, "Mac")
    try server.upsert(phone.token, assets: [("photo", fingerprint(1)), ("other", fingerprint(2))])
    // The Mac holds the same photo twice (an import and its copy) and a different one.
    try server.upsert(mac.token, assets: [("z-copy", fingerprint(1)), ("a-import", fingerprint(1)), ("Ä-third", fingerprint(1)), ("m", fingerprint(3))])
    let cloud = try #require(try server.cloudIDs(phone.token, ["photo"])[0]["cloudIdentifier"]?.stringValue)

    let ambiguous = try #require(try server.localIDs(mac.token, [cloud])[0]["error"])
    #expect(ambiguous["name"]?.stringValue == "multipleIdentifiersFound")
    #expect(ambiguous["domain"]?.stringValue == "PHPhotosErrorDomain" && ambiguous["code"]?.intValue == 3202)
    // Sorted by byte order: "a-import" < "z-copy" < "Ä-third" (0xC3 > 'z').
    #expect(ambiguous["localIdentifiers"]?.arrayValue == [.string("a-import"), .string("z-copy"), .string("Ä-third")])
    // Nothing was linked: asking again is still ambiguous.
    #expect(try server.localIDs(mac.token, [cloud])[0]["error"]?["name"]?.stringValue == "multipleIdentifiersFound")

    // Link errors.
    let unknownRecord = "11111111-2222-3333-4444-555555555555:001:\(fingerprint(1))"
    let linkCases: [(body: String, status: Int, name: String, field: String?)] = [
        (#"{"cloudIdentifier":"\#(unknownRecord)","localIdentifier":"z-copy"}"#, 404, "notFound", nil),
        (#"{"cloudIdentifier":"\#(cloud)","localIdentifier":"ghost"}"#, 404, "notFound", nil),
        (#"{"cloudIdentifier":"\#(cloud)","localIdentifier":"m"}"#, 409, "fingerprintMismatch", nil),
        (#"{"cloudIdentifier":"not-an-id","localIdentifier":"m"}"#, 400, "badRequest", "cloudIdentifier"),
        (#"{"localIdentifier":"m"}"#, 400, "badRequest", "cloudIdentifier"),
        (#"{"cloudIdentifier":"\#(cloud)"}"#, 400, "badRequest", "localIdentifier"),
        (#"{"cloudIdentifier":"\#(cloud)","localIdentifier":3}"#, 400, "badRequest", "localIdentifier"),
    ]
    for c in linkCases {
        let r = try server.call("POST", "/v1/library/links", token: mac.token, body: c.body)
        #expect(r.status == c.status && r.errorName == c.name && r.errorField == c.field, "\(c.body): \(r.raw.body)")
    }
    // A record of another account is not found, like one that does not exist.
    let other = try server.account("Other")
    let stranger = try server.device(other.token)
    try server.upsert(stranger.token, assets: [("s", fingerprint(1))])
    #expect(try server.call("POST", "/v1/library/links", token: stranger.token,
                            body: #"{"cloudIdentifier":"\#(cloud)","localIdentifier":"s"}"#).status == 404)

    // The person chooses z-copy.
    let linked = try server.call("POST", "/v1/library/links", token: mac.token, body: #"{"cloudIdentifier":"\#(cloud)","localIdentifier":"z-copy"}"#)
    #expect(linked.status == 200 && linked["localIdentifier"]?.stringValue == "z-copy")
    #expect(try server.localIDs(mac.token, [cloud])[0]["localIdentifier"]?.stringValue == "z-copy")
    #expect(try server.cloudIDs(mac.token, ["z-copy"])[0]["cloudIdentifier"]?.stringValue == cloud)
    // The other copies get records of their own, never this one.
    let rest = try server.cloudIDs(mac.token, ["a-import", "Ä-third"]).map { $0["cloudIdentifier"]?.stringValue }
    #expect(rest[0] != cloud && rest[1] != cloud && rest[0] != rest[1])
    // Relinking to a-import replaces the earlier link.
    #expect(try server.call("POST", "/v1/library/links", token: mac.token, body: #"{"cloudIdentifier":"\#(cloud)","localIdentifier":"a-import"}"#).status == 200)
    #expect(try server.localIDs(mac.token, [cloud])[0]["localIdentifier"]?.stringValue == "a-import")
}

@Test func mappingRequestsAreBoundedAndValidated() throws {
    let server = try APIServer { $0.server.limits.maxBatch = 3 }
    let account = try server.account()
    let device = try server.device(account.token)
    try server.upsert(device.token, assets: [("a", fingerprint(1))])

    for (path, key) in [("/v1/library/cloud-identifiers", "localIdentifiers"), ("/v1/library/local-identifiers", "cloudIdentifiers")] {
        let big = try server.call("POST", path, token: device.token, body: #"{"\#(key)":["a","b","c","d"]}"#)
        #expect(big.status == 413 && big.errorName == "batchTooLarge" && big.json?["error"]?["maxBatch"]?.intValue == 3, "\(big.raw.body)")
        #expect(try server.call("POST", path, token: device.token, body: #"{"\#(key)":["a","b","c"]}"#).status == 200)
        // The bound comes first, even when items are malformed.
        #expect(try server.call("POST", path, token: device.token, body: #"{"\#(key)":[1,2,3,4]}"#).errorName == "batchTooLarge")
        for body in [#"{}"#, #"{"\#(key)":"a"}"#, #"{"\#(key)":["a",1]}"#] {
            let r = try server.call("POST", path, token: device.token, body: body)
            #expect(r.status == 400 && r.errorField == key, "\(body): \(r.raw.body)")
        }
        let empty = try server.call("POST", path, token: device.token, body: #"{"\#(key)":[]}"#)
        #expect(empty.status == 200 && empty["mappings"]?.arrayValue == [])
        #expect(try server.call("POST", path, token: account.token, body: #"{"\#(key)":[]}"#).status == 403)
        #expect(try server.call("POST", path, token: "forged", body: #"{"\#(key)":[]}"#).status == 401)
    }
    // A local identifier out of its bounds is a bad request, not an item error.
    let long = String(repeating: "x", count: 256)
    #expect(try server.call("POST", "/v1/library/cloud-identifiers", token: device.token,
                            body: #"{"localIdentifiers":["\#(long)"]}"#).errorField == "localIdentifiers")
}

@Test func mappingOutcomesAndStorageLatencyAreMetrics() throws {
    let server = try APIServer()
    let account = try server.account()
    let phone = try server.device(account.token)
    let mac = try server.device(account.token)
    try server.upsert(phone.token, assets: [("a", fingerprint(1))])
    try server.upsert(mac.token, assets: [("x", fingerprint(1)), ("y", fingerprint(1))])
    let cloud = try #require(try server.cloudIDs(phone.token, ["a", "a", "missing"])[0]["cloudIdentifier"]?.stringValue)
    _ = try server.localIDs(mac.token, [cloud, "bad"])
    _ = try server.localIDs(phone.token, [cloud])

    let metrics = try rawRequest(port: server.port, "GET", "/metrics").body
    for line in [
        #"concord_mappings_total{direction="localToCloud",outcome="found"} 2"#,
        #"concord_mappings_total{direction="localToCloud",outcome="notFound"} 1"#,
        #"concord_mappings_total{direction="localToCloud",outcome="multiple"} 0"#,
        #"concord_mappings_total{direction="cloudToLocal",outcome="found"} 1"#,
        #"concord_mappings_total{direction="cloudToLocal",outcome="multiple"} 1"#,
        #"concord_mappings_total{direction="cloudToLocal",outcome="invalid"} 1"#,
        #"concord_storage_duration_seconds_count{operation="cloudIdentifiers"} 1"#,
        #"concord_storage_duration_seconds_count{operation="localIdentifiers"} 2"#,
        #"concord_storage_duration_seconds_count{operation="applyChanges"} 2"#,
        #"concord_http_requests_total{route="/v1/library/cloud-identifiers",status="200"} 1"#,
    ] {
        #expect(metrics.contains(line + "\n"), "missing: \(line)")
    }
}

/// A device's usual batch is read in place (`PlainStringArrayScanner`); every other spelling of the
/// same batch goes through the JSON parser. Both must give the same answers, byte for byte.
@Test func aBatchAnswersTheSameHoweverItsJSONIsSpelt() throws {
    let server = try APIServer()
    let account = try server.account()
    let device = try server.device(account.token)
    try server.upsert(device.token, assets: [("ABC/L0/001", fingerprint(1)), ("caf\u{E9}", fingerprint(2)), ("x\"y", fingerprint(3))])
    let plain = try server.call("POST", "/v1/library/cloud-identifiers", token: device.token,
                                body: #"{"localIdentifiers":["ABC/L0/001","nope","ABC/L0/001"]}"#)
    #expect(plain.status == 200)
    for body in [
        "\n{ \"localIdentifiers\" :\t[ \"ABC/L0/001\" , \"nope\",\r\n\"ABC/L0/001\" ] }\n",   // whitespace: still the in-place path
        #"{"localIdentifiers":["\u0041BC\/L0\/001","nope","ABC/L0/001"]}"#,                  // escapes
        #"{"localIdentifiers":["ABC/L0/001","nope","ABC/L0/001"],"extra":true}"#,             // another member
        #"{"extra":null,"localIdentifiers":["ABC/L0/001","nope","ABC/L0/001"]}"#,
    ] {
        let r = try server.call("POST", "/v1/library/cloud-identifiers", token: device.token, body: body)
        #expect(r.status == 200 && r.raw.body == plain.raw.body, "\(body): \(r.raw.body)")
    }
    // Identifiers that need escaping (or are not ASCII) are answered escaped, as JSON requires.
    let escaped = try server.call("POST", "/v1/library/cloud-identifiers", token: device.token, body: #"{"localIdentifiers":["x\"y","caf\u00e9"]}"#)
    let mappings = try #require(escaped["mappings"]?.arrayValue)
    #expect(mappings.map { $0["localIdentifier"]?.stringValue } == ["x\"y", "caf\u{E9}"])
    #expect(mappings.allSatisfy { $0["cloudIdentifier"]?.stringValue != nil })
    // Cloud → local, the same: the cloud identifier echoed as asked, whichever way it was spelt.
    let cloud = try #require(mappings[0]["cloudIdentifier"]?.stringValue)
    let plainBack = try server.call("POST", "/v1/library/local-identifiers", token: device.token, body: #"{"cloudIdentifiers":["\#(cloud)","junk"]}"#)
    #expect(plainBack.status == 200 && plainBack["mappings"]?[0]?["localIdentifier"]?.stringValue == "x\"y")
    let escapedCloud = cloud.replacingOccurrences(of: ":", with: "\\u003a")
    for body in [" {\"cloudIdentifiers\": [\"\(cloud)\", \"junk\"]} ", #"{"cloudIdentifiers":["\#(escapedCloud)","junk"]}"#] {
        let r = try server.call("POST", "/v1/library/local-identifiers", token: device.token, body: body)
        #expect(r.status == 200 && r.raw.body == plainBack.raw.body, "\(body): \(r.raw.body)")
    }
    // Malformed in ways the scanner stops at: the parser's error, as for any body.
    for body in [#"{"localIdentifiers":["a",]}"#, #"{"localIdentifiers":["a"]"#, #"{"localIdentifiers":["a"]} x"#] {
        let r = try server.call("POST", "/v1/library/cloud-identifiers", token: device.token, body: body)
        #expect(r.status == 400 && r.errorName == "badRequest", "\(body): \(r.raw.body)")
    }
}

/// The index keeps a PhotoKit-shaped identifier as its UUID's bits and the rest as bytes, and tells
/// the route whether the bytes it copied into a cloud → local answer need escaping. A byte to escape
/// after the UUID, near or far from it, or in an identifier kept as it is, is answered escaped.
@Test func localIdentifiersWithBytesToEscapeAfterTheirUUIDAreAnsweredEscaped() throws {
    let server = try APIServer()
    let account = try server.account()
    let phone = try server.device(account.token, "Phone")
    let tablet = try server.device(account.token, "Tablet")
    let uuid = "9F983DBA-EC35-42B8-8773-B597CF782EDD"
    let tabletIDs = [uuid + "/L0/001", uuid + "\"", uuid + "/L0/001\"", uuid + "/L0/001/caf\u{E9}", "x\"y", uuid + "/L0/001/" + String(repeating: "z", count: 20) + "\\"]
    try server.upsert(phone.token, assets: tabletIDs.indices.map { ("p\($0)", fingerprint(70 + $0)) })
    try server.upsert(tablet.token, assets: tabletIDs.enumerated().map { ($1, fingerprint(70 + $0)) })
    let clouds = try server.cloudIDs(phone.token, tabletIDs.indices.map { "p\($0)" }).map { try #require($0["cloudIdentifier"]?.stringValue) }
    // The first answer links by content; the next ones come from the links, through the index.
    for round in 0..<3 {
        let back = try server.localIDs(tablet.token, clouds)
        #expect(back.map { $0["localIdentifier"]?.stringValue } == tabletIDs, "round \(round)")
    }
    // Each alone, beside a plain one: whichever answer needs escaping is escaped.
    for (i, cloud) in clouds.enumerated() {
        let back = try server.localIDs(tablet.token, [clouds[0], cloud])
        #expect(back.map { $0["localIdentifier"]?.stringValue } == [tabletIDs[0], tabletIDs[i]])
    }
}

/// The one-pass answer of a plain batch is the `JSONWriter` answer, byte for byte.
/// Each batch mixes the three outcomes and identifier lengths by its index (no randomness needed).
@Test(arguments: [0, 1, 2, 7, 300]) func thePlainLocalToCloudAnswerIsTheWrittenOne(_ count: Int) throws {
    var ids: [String] = []
    var answers = LinkLookups()
    for i in 0..<count {
        ids.append("ID-\(i)/L0/" + String(repeating: "x", count: i * 7 % 41))
        switch i * 5 % 3 {
        case 0: answers.append(.missing)
        case 1: answers.append(.unlinked)   // not yet assigned: written as not found, like missing
        default: answers.append(bytes: "\(UUID().uuidString):001:fp\(i)".utf8)
        }
    }
    let batch = IdentifierBatch(ids)
    #expect(batch.isPlainASCII)
    for notFound in [ItemError.identifierNotFound(limitedLibrary: false), .identifierNotFound(limitedLibrary: true)] {
        let result = CloudIdentifierAnswers(answers: answers, notFound: notFound)
        let plain = LocalToCloudBody.plain(batch, result)
        #expect(plain == LocalToCloudBody.written(batch, result))
        #expect((try? JSONValue.parse(plain)) != nil)
    }
}

/// The same for cloud → local: found local identifiers, not found (both authorizations), invalid
/// and several candidates, mixed by the item's index; the one-pass answer is the written one.
@Test(arguments: [0, 1, 2, 7, 300]) func thePlainCloudToLocalAnswerIsTheWrittenOne(_ count: Int) throws {
    var ids: [String] = []
    var answers = LocalIdentifierAnswers()
    for i in 0..<count {
        ids.append("\(UUID().uuidString):001:" + String(repeating: "f", count: i % 2 == 0 ? 0 : 22 + i % 60))
        switch i * 7 % 5 {
        case 0: answers.append(.identifierNotFound(limitedLibrary: i % 3 == 0))
        case 1: answers.append(.invalidIdentifier)
        case 2: answers.append(.multipleIdentifiersFound(localIdentifiers: ["A\(i)/L0/001", "B\(i)/L0/001"]))
        default: answers.append(bytes: "ID-\(i)/L0/\(String(repeating: "x", count: i * 7 % 41))".utf8)
        }
    }
    let batch = IdentifierBatch(ids)
    #expect(batch.isPlainASCII)
    let result = answers
    let plain = CloudToLocalBody.plain(batch, result)
    #expect(plain == CloudToLocalBody.written(batch, result))
    let parsed = try JSONValue.parse(plain)
    #expect(parsed["mappings"]?.arrayValue?.count == count)
}

/// Runs of every length around a word's size (the copy's three ways: byte by byte, two
/// overlapping half-words, words with an overlapping last one): identifiers and answers of 0 to
/// 40 bytes, each mixed with errors, give the written answer byte for byte, both directions.
@Test(arguments: [0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 40]) func shortAndOddRunsGiveTheWrittenAnswer(_ length: Int) throws {
    var ids: [String] = []
    var back = LocalIdentifierAnswers()
    var there = LinkLookups()
    for i in 0..<12 {
        let n = max(0, length - i % 3)
        ids.append(String((0..<n).map { Character(UnicodeScalar(UInt8(0x41 + ($0 + i) % 26))) }))
        let answer = String(repeating: "z", count: (length + i) % 41)
        if i % 4 == 3 { back.append(.identifierNotFound(limitedLibrary: false)); there.append(.missing) }
        else { back.append(bytes: answer.utf8); there.append(bytes: answer.utf8) }
    }
    let batch = IdentifierBatch(ids)
    #expect(batch.isPlainASCII)
    #expect(CloudToLocalBody.plain(batch, back) == CloudToLocalBody.written(batch, back))
    let result = CloudIdentifierAnswers(answers: there, notFound: .identifierNotFound(limitedLibrary: true))
    #expect(LocalToCloudBody.plain(batch, result) == LocalToCloudBody.written(batch, result))
}

/// `ByteRuns.copy` copies exactly the run, whatever its length and alignment, and nothing beside it.
@Test func byteRunsCopyExactlyTheRun() {
    let source = (0..<64).map { UInt8($0 + 1) }
    for offset in 0..<8 {
        for count in 0...40 {
            var out = [UInt8](repeating: 0xEE, count: 64)
            let moved = source.withUnsafeBufferPointer { s in
                out.withUnsafeMutableBufferPointer { o -> Int in
                    var at = o.baseAddress! + 3
                    ByteRuns.copy(s.baseAddress! + offset, count, to: &at)
                    return at - (o.baseAddress! + 3)
                }
            }
            #expect(moved == count)
            #expect(Array(out[3..<3 + count]) == Array(source[offset..<offset + count]), "offset \(offset), count \(count)")
            #expect(out[0..<3].allSatisfy { $0 == 0xEE } && out[(3 + count)...].allSatisfy { $0 == 0xEE }, "offset \(offset), count \(count)")
        }
    }
}

/// A multipleIdentifiersFound error is written from a head rendered once: the same bytes as its
/// name, message, domain, code and details written one by one, escapes included.
@Test(arguments: [[], ["A/L0/001"], ["A/L0/001", "b\"c\\d/é"]]) func severalCandidatesAreWrittenAsTheirDetailsSay(_ candidates: [String]) {
    let error = ItemError.multipleIdentifiersFound(localIdentifiers: candidates)
    var fast = JSONWriter()
    Codec.write(error, into: &fast)
    var generic = JSONWriter()
    generic.beginObject()
    generic.key("name"); generic.string(error.name)
    generic.key("message"); generic.string(error.message)
    generic.key("domain"); generic.string(DomainError.photosErrorDomain)
    generic.key("code"); generic.int(error.photosErrorCode ?? 0)
    for detail in error.details { generic.key(detail.key); Codec.write(detail.value, into: &generic) }
    generic.endObject()
    #expect(fast.bytes == generic.bytes)
}
