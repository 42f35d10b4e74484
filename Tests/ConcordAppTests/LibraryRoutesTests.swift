import ConcordJSON
import Foundation
import Testing

@testable import ConcordApp

/// A body for `POST /v1/library/changes` with one asset, album and folder.
private func fullChange(album: String = "A/L0/040", folder: String = "F/L0/020") -> String {
    """
    {"assets":{"upsert":[
        {"localIdentifier":"\(assetID(1))","fingerprint":"\(fingerprint(1))","mediaType":"video","creationDate":"2024-05-01T10:00:00Z","isFavorite":true},
        {"localIdentifier":"\(assetID(2))","fingerprint":"\(fingerprint(2))"}]},
     "assetCollections":{"upsert":[{"localIdentifier":"\(album)","fingerprint":"\(fingerprint(100))","title":"Trip","assets":["\(assetID(2))","\(assetID(1))"],"appCreated":true}]},
     "collectionLists":{"upsert":[{"localIdentifier":"\(folder)","fingerprint":"\(fingerprint(200))","title":"Years","collections":["\(album)"]}]}}
    """
}

@Test func libraryChangesCountAndStoreObjects() throws {
    let server = try APIServer()
    let account = try server.account()
    let device = try server.device(account.token)

    let first = try server.call("POST", "/v1/library/changes", token: device.token, body: fullChange())
    #expect(first.status == 200 && first.raw.header("Content-Type") == "application/json")
    #expect(first["inserted"]?.intValue == 4 && first["updated"]?.intValue == 0 && first["deleted"]?.intValue == 0 && first["unchanged"]?.intValue == 0)
    let token1 = try #require(first["changeToken"]?.stringValue)

    // The same again changes nothing and makes no history entry: the token stays.
    let again = try server.call("POST", "/v1/library/changes", token: device.token, body: fullChange())
    #expect(again["unchanged"]?.intValue == 4 && again["inserted"]?.intValue == 0)
    #expect(again["changeToken"]?.stringValue == token1)

    // Updated = any stored field differs; a delete of an unknown identifier is ignored.
    let update = try server.call("POST", "/v1/library/changes", token: device.token, body: """
        {"assets":{"upsert":[{"localIdentifier":"\(assetID(2))","fingerprint":"\(fingerprint(2))","hasAdjustments":true}],
                   "delete":["\(assetID(1))","never/L0/001"]},
         "assetCollections":{"upsert":[{"localIdentifier":"A/L0/040","fingerprint":"\(fingerprint(100))","title":"Trip","assets":["\(assetID(2))"],"appCreated":true}]}}
        """)
    #expect(update.status == 200, "\(update.raw.body)")
    #expect(update["updated"]?.intValue == 2 && update["deleted"]?.intValue == 1 && update["inserted"]?.intValue == 0)
    #expect(update["changeToken"]?.stringValue != token1)

    // Objects by local identifier: raw slashes and %2F alike.
    let raw = try server.call("GET", "/v1/library/objects/\(assetID(2))", token: device.token)
    let encoded = try server.call("GET", "/v1/library/objects/\(percentEncoded(assetID(2)))", token: device.token)
    #expect(raw.status == 200 && encoded.status == 200 && raw.raw.body == encoded.raw.body)
    #expect(raw.json == (try JSONValue.parse(Array("""
        {"localIdentifier":"\(assetID(2))","type":"assets","fingerprint":"\(fingerprint(2))","photoKitCloudIdentifier":null,
         "mediaType":"image","creationDate":null,"modificationDate":null,"hasAdjustments":true,"isFavorite":false}
        """.utf8))))
    let album = try server.call("GET", "/v1/library/objects/A/L0/040", token: device.token)
    #expect(album["type"]?.stringValue == "assetCollections" && album["title"]?.stringValue == "Trip")
    #expect(album["assets"]?.arrayValue == [.string(assetID(2))] && album["appCreated"]?.boolValue == true)
    let folder = try server.call("GET", "/v1/library/objects/F%2FL0%2F020", token: device.token)
    #expect(folder["type"]?.stringValue == "collectionLists" && folder["collections"]?.arrayValue == [.string("A/L0/040")])
    #expect(try server.call("HEAD", "/v1/library/objects/F/L0/020", token: device.token).raw.body.isEmpty)

    // Deleted, nonexistent, and another device's object: all 404.
    #expect(try server.call("GET", "/v1/library/objects/\(assetID(1))", token: device.token).status == 404)
    let other = try server.device(account.token, "Other")
    let foreign = try server.call("GET", "/v1/library/objects/\(assetID(2))", token: other.token)
    #expect(foreign.status == 404 && foreign.errorName == "notFound")
}

@Test func libraryListingPagesInByteOrder() throws {
    let server = try APIServer()
    let account = try server.account()
    let device = try server.device(account.token)
    // Byte order: "B" < "a" < "b/x" < "é".
    let ids = ["b/x", "a", "é", "B"]
    try server.upsert(device.token, assets: ids.enumerated().map { ($0.element, fingerprint($0.offset)) })
    _ = try server.call("POST", "/v1/library/changes", token: device.token,
                        body: #"{"assetCollections":{"upsert":[{"localIdentifier":"Album","fingerprint":"\#(fingerprint(9))","assets":["a"]}]}}"#)

    var seen: [String] = []
    var after: String?
    var pages = 0
    repeat {
        let query = "type=assets&limit=3" + (after.map { "&after=" + percentEncoded($0) } ?? "")
        let page = try server.call("GET", "/v1/library/objects?" + query, token: device.token)
        #expect(page.status == 200, "\(page.raw.body)")
        let objects = try #require(page["objects"]?.arrayValue)
        #expect(objects.count <= 3)
        seen += objects.compactMap { $0["localIdentifier"]?.stringValue }
        #expect(objects.allSatisfy { $0["type"]?.stringValue == "assets" })
        after = page["next"]?.stringValue
        #expect(after != nil || page["next"] == .null)
        pages += 1
    } while after != nil && pages < 10
    #expect(seen == ["B", "a", "b/x", "é"] && pages == 2)

    // Without a type: every type, merged in byte order.
    let all = try server.call("GET", "/v1/library/objects?limit=10", token: device.token)
    #expect(all["objects"]?.arrayValue?.compactMap { $0["localIdentifier"]?.stringValue } == ["Album", "B", "a", "b/x", "é"])
    #expect(all["next"] == .null)
    let firstTwo = try server.call("GET", "/v1/library/objects?limit=2", token: device.token)
    #expect(firstTwo["next"]?.stringValue == "B")
    let albums = try server.call("GET", "/v1/library/objects?type=assetCollections", token: device.token)
    #expect(albums["objects"]?.arrayValue?.count == 1 && albums["next"] == .null)

    for bad in ["type=photos", "limit=0", "limit=10001", "limit=abc", "limit=-1", "after="] {
        let r = try server.call("GET", "/v1/library/objects?" + bad, token: device.token)
        let field = String(bad.prefix { $0 != "=" })
        #expect(r.status == 400 && r.errorField == field, "\(bad): \(r.raw.body)")
    }
}

@Test func libraryRequestsAreValidatedNamingTheField() throws {
    let server = try APIServer()
    let account = try server.account()
    let device = try server.device(account.token)
    try server.upsert(device.token, assets: [(assetID(1), fingerprint(1))])
    let fp = fingerprint(5)
    let cases: [(body: String, field: String)] = [
        (#"{"assets":{"upsert":[{"fingerprint":"\#(fp)"}]}}"#, "assets.upsert.localIdentifier"),
        // A fingerprint is optional, but an empty one is not a fingerprint.
        (#"{"assets":{"upsert":[{"localIdentifier":"x","fingerprint":""}]}}"#, "assets.upsert.fingerprint"),
        (#"{"assets":{"upsert":[{"localIdentifier":"x","photoKitCloudIdentifier":"A:040:h"}]}}"#, "assets.upsert.photoKitCloudIdentifier"),
        (#"{"assets":{"upsert":[{"localIdentifier":"x","photoKitCloudIdentifier":7}]}}"#, "assets.upsert.photoKitCloudIdentifier"),
        (#"{"assets":{"upsert":[{"localIdentifier":"x","fingerprint":12}]}}"#, "assets.upsert.fingerprint"),
        (#"{"assets":{"upsert":[{"localIdentifier":"x","fingerprint":"short"}]}}"#, "assets.upsert.fingerprint"),
        (#"{"assets":{"upsert":[{"localIdentifier":"","fingerprint":"\#(fp)"}]}}"#, "assets.upsert.localIdentifier"),
        (#"{"assets":{"upsert":[{"localIdentifier":"x","fingerprint":"\#(fp)","mediaType":"gif"}]}}"#, "assets.upsert.mediaType"),
        (#"{"assets":{"upsert":[{"localIdentifier":"x","fingerprint":"\#(fp)","isFavorite":"yes"}]}}"#, "assets.upsert.isFavorite"),
        (#"{"assets":{"upsert":[{"localIdentifier":"x","fingerprint":"\#(fp)","creationDate":"yesterday"}]}}"#, "assets.upsert.creationDate"),
        (#"{"assets":{"upsert":"x"}}"#, "assets.upsert"),
        (#"{"assets":{"upsert":[7]}}"#, "assets.upsert"),
        (#"{"assets":{"delete":[7]}}"#, "assets.delete"),
        (#"{"assets":[]}"#, "assets"),
        (#"{"assetCollections":{"upsert":[{"localIdentifier":"A","fingerprint":"\#(fp)","assets":"x"}]}}"#, "assetCollections.upsert.assets"),
        (#"{"collectionLists":{"upsert":[{"localIdentifier":"F","fingerprint":"\#(fp)","title":1}]}}"#, "collectionLists.upsert.title"),
        // An identifier twice in one request.
        (#"{"assets":{"upsert":[{"localIdentifier":"x","fingerprint":"\#(fp)"}],"delete":["x"]}}"#, "localIdentifier"),
        // An identifier keeps its type.
        (#"{"assetCollections":{"upsert":[{"localIdentifier":"\#(assetID(1))","fingerprint":"\#(fp)"}]}}"#, "assetCollections"),
    ]
    for c in cases {
        let r = try server.call("POST", "/v1/library/changes", token: device.token, body: c.body)
        #expect(r.status == 400 && r.errorName == "badRequest", "\(c.body): \(r.raw.body)")
        #expect(r.errorField == c.field, "\(c.body): \(r.raw.body)")
    }
    // Nothing of the failed requests was applied.
    let listing = try server.call("GET", "/v1/library/objects", token: device.token)
    #expect(listing["objects"]?.arrayValue?.count == 1)

    // An album listing an asset the library lacks: 422 naming it, nothing applied.
    let missing = try server.call("POST", "/v1/library/changes", token: device.token, body: """
        {"assets":{"upsert":[{"localIdentifier":"new","fingerprint":"\(fp)"}]},
         "assetCollections":{"upsert":[{"localIdentifier":"A","fingerprint":"\(fp)","assets":["new","ghost/L0/001"]}]}}
        """)
    #expect(missing.status == 422 && missing.errorName == "unprocessable")
    #expect(missing.json?["error"]?["message"]?.stringValue?.contains("ghost/L0/001") == true)
    #expect(missing.json?["error"]?["missing"]?.arrayValue == [.string("ghost/L0/001")])
    #expect(try server.call("GET", "/v1/library/objects/new", token: device.token).status == 404)

    // Unknown fields are ignored; a device token is required.
    let extra = try server.call("POST", "/v1/library/changes", token: device.token,
                                body: #"{"assets":{"upsert":[{"localIdentifier":"y","fingerprint":"\#(fp)","color":"red"}],"more":1},"other":{}}"#)
    #expect(extra.status == 200 && extra["inserted"]?.intValue == 1)
    #expect(try server.call("POST", "/v1/library/changes", token: nil, body: "{}").status == 401)
    #expect(try server.call("POST", "/v1/library/changes", token: account.token, body: "{}").status == 403)
    #expect(try server.call("POST", "/v1/library/changes", token: testAdminToken, body: "{}").status == 403)
    #expect(try server.call("GET", "/v1/library/objects", token: account.token).status == 403)
    #expect(try server.call("POST", "/v1/library/changes", token: device.token, body: "{").errorName == "badRequest")
}

@Test func wholeLibraryUploadDiffsAndResetDropsDetailsAndLinks() throws {
    let server = try APIServer()
    let account = try server.account()
    let device = try server.device(account.token)
    let start = try #require(try server.call("GET", "/v1/library/token", token: device.token)["changeToken"]?.stringValue)

    let put1 = try server.call("PUT", "/v1/library", token: device.token, body: """
        {"assets":[{"localIdentifier":"a","fingerprint":"\(fingerprint(1))"},{"localIdentifier":"b","fingerprint":"\(fingerprint(2))"}],
         "assetCollections":[{"localIdentifier":"A","fingerprint":"\(fingerprint(3))","assets":["b"]}]}
        """)
    #expect(put1.status == 200 && put1["inserted"]?.intValue == 3, "\(put1.raw.body)")
    let cloudA = try #require(try server.cloudIDs(device.token, ["a"])[0]["cloudIdentifier"]?.stringValue)

    // b's fingerprint changes, A goes, c arrives, a stays.
    let put2 = try server.call("PUT", "/v1/library", token: device.token, body: """
        {"assets":[{"localIdentifier":"a","fingerprint":"\(fingerprint(1))"},{"localIdentifier":"b","fingerprint":"\(fingerprint(22))"},
                   {"localIdentifier":"c","fingerprint":"\(fingerprint(4))"}]}
        """)
    #expect(put2["inserted"]?.intValue == 1 && put2["updated"]?.intValue == 1 && put2["deleted"]?.intValue == 1 && put2["unchanged"]?.intValue == 1)
    #expect(try server.cloudIDs(device.token, ["a"])[0]["cloudIdentifier"]?.stringValue == cloudA)

    #expect(try server.call("PUT", "/v1/library?reset=maybe", token: device.token, body: "{}").errorField == "reset")
    #expect(try server.call("PUT", "/v1/library", token: device.token, body: #"{"assets":[{"localIdentifier":"a","fingerprint":""}]}"#).errorField == "assets.fingerprint")
    #expect(try server.call("PUT", "/v1/library", token: device.token, body: #"{"assets":[{"localIdentifier":"a","photoKitCloudIdentifier":"a:b"}]}"#).errorField == "assets.photoKitCloudIdentifier")

    // A reset: one change whose details are unavailable; a's link is dropped, so a
    // asking again links to the oldest unlinked record of its content: the same one.
    let reset = try server.call("PUT", "/v1/library?reset=true", token: device.token, body: """
        {"assets":[{"localIdentifier":"a","fingerprint":"\(fingerprint(1))"}]}
        """)
    #expect(reset.status == 200 && reset["deleted"]?.intValue == 2)
    let history = try server.call("GET", "/v1/library/changes?since=\(percentEncoded(start))", token: device.token)
    let changes = try #require(history["changes"]?.arrayValue)
    #expect(changes.count == 3)
    #expect(changes[1]["assets"]?["inserted"]?.arrayValue == [.string("c")])
    #expect(changes[1]["assets"]?["updated"]?.arrayValue == [.string("b")])
    #expect(changes[1]["assetCollections"]?["deleted"]?.arrayValue == [.string("A")])
    #expect(changes[1]["collectionLists"]?["inserted"]?.arrayValue == [])
    let error = try #require(changes[2]["error"])
    #expect(error["name"]?.stringValue == "persistentChangeDetailsUnavailable")
    #expect(error["domain"]?.stringValue == "PHPhotosErrorDomain" && error["code"]?.intValue == 3210)
    #expect(changes[2]["assets"] == nil && changes[2]["changeToken"]?.stringValue == reset["changeToken"]?.stringValue)
    // The record survived the reset, unlinked: asking again answers it.
    #expect(try server.cloudIDs(device.token, ["a"])[0]["cloudIdentifier"]?.stringValue == cloudA)
}

@Test func authorizationDeniedAndLimitedShapeMappingAnswers() throws {
    let server = try APIServer()
    let account = try server.account()
    let device = try server.device(account.token)
    try server.upsert(device.token, assets: [("a", fingerprint(1))])

    for body in [#"{}"#, #"{"status":"maybe"}"#, #"{"status":true}"#] {
        let r = try server.call("PUT", "/v1/library/authorization", token: device.token, body: body)
        #expect(r.status == 400 && r.errorField == "status", "\(body)")
    }
    let notFound = try server.cloudIDs(device.token, ["zzz"])[0]["error"]
    #expect(notFound?["name"]?.stringValue == "identifierNotFound" && notFound?["limitedLibrary"] == nil)
    #expect(notFound?["code"]?.intValue == 3201 && notFound?["domain"]?.stringValue == "PHPhotosErrorDomain")

    let limited = try server.call("PUT", "/v1/library/authorization", token: device.token, body: #"{"status":"limited"}"#)
    #expect(limited.status == 200 && limited["status"]?.stringValue == "limited")
    let limitedAnswer = try server.cloudIDs(device.token, ["zzz", "a"])
    #expect(limitedAnswer[0]["error"]?["limitedLibrary"]?.boolValue == true && limitedAnswer[0]["error"]?["code"]?.intValue == 3201)
    #expect(limitedAnswer[1]["cloudIdentifier"]?.stringValue != nil)
    let cloud = try #require(limitedAnswer[1]["cloudIdentifier"]?.stringValue)
    let unknownCloud = "11111111-2222-3333-4444-555555555555:001:\(fingerprint(77))"
    #expect(try server.localIDs(device.token, [unknownCloud])[0]["error"]?["limitedLibrary"]?.boolValue == true)

    #expect(try server.call("PUT", "/v1/library/authorization", token: device.token, body: #"{"status":"denied"}"#).status == 200)
    let requests: [(String, String)] = [
        ("/v1/library/cloud-identifiers", #"{"localIdentifiers":["a"]}"#),
        ("/v1/library/local-identifiers", #"{"cloudIdentifiers":["\#(cloud)"]}"#),
    ]
    for (path, body) in requests {
        let r = try server.call("POST", path, token: device.token, body: body)
        #expect(r.status == 403 && r.errorName == "accessUserDenied", "\(path): \(r.raw.body)")
        #expect(r.json?["error"]?["code"]?.intValue == 3311 && r.json?["error"]?["domain"]?.stringValue == "PHPhotosErrorDomain")
    }
    // The library itself is still the device's to keep current.
    #expect(try server.call("GET", "/v1/library/objects/a", token: device.token).status == 200)
    #expect(try server.call("PUT", "/v1/library/authorization", token: device.token, body: #"{"status":"authorized"}"#).status == 200)
    #expect(try server.cloudIDs(device.token, ["a"])[0]["cloudIdentifier"]?.stringValue == cloud)
}

@Test func deletingAnAssetOrAlbumRemovesItFromAlbumsAndFolders() throws {
    let server = try APIServer()
    let account = try server.account()
    let device = try server.device(account.token)
    #expect(try server.call("POST", "/v1/library/changes", token: device.token, body: fullChange()).status == 200)
    let start = try #require(try server.call("GET", "/v1/library/token", token: device.token)["changeToken"]?.stringValue)

    // The album listed the asset: it leaves the album in the same change, counted as updated.
    let deleteAsset = try server.call("POST", "/v1/library/changes", token: device.token,
                                      body: #"{"assets":{"delete":["\#(assetID(1))"]}}"#)
    #expect(deleteAsset.status == 200, "\(deleteAsset.raw.body)")
    #expect(deleteAsset["inserted"]?.intValue == 0 && deleteAsset["updated"]?.intValue == 1
        && deleteAsset["deleted"]?.intValue == 1 && deleteAsset["unchanged"]?.intValue == 0)
    let album = try server.call("GET", "/v1/library/objects/A/L0/040", token: device.token)
    #expect(album["assets"]?.arrayValue == [.string(assetID(2))] && album["title"]?.stringValue == "Trip")

    // An album sent with the delete keeps its own list, so listing the deleted asset is 422.
    let conflicting = try server.call("POST", "/v1/library/changes", token: device.token, body: """
        {"assets":{"delete":["\(assetID(2))"]},
         "assetCollections":{"upsert":[{"localIdentifier":"A/L0/040","fingerprint":"\(fingerprint(100))","assets":["\(assetID(2))"]}]}}
        """)
    #expect(conflicting.status == 422 && conflicting.errorName == "unprocessable")
    #expect(conflicting.json?["error"]?["missing"]?.arrayValue == [.string(assetID(2))])

    // A deleted album leaves its folder.
    let deleteAlbum = try server.call("POST", "/v1/library/changes", token: device.token,
                                      body: #"{"assetCollections":{"delete":["A/L0/040"]}}"#)
    #expect(deleteAlbum["updated"]?.intValue == 1 && deleteAlbum["deleted"]?.intValue == 1)
    #expect(try server.call("GET", "/v1/library/objects/F/L0/020", token: device.token)["collections"]?.arrayValue == [])

    // History names the containers as updated in the deleting change.
    let history = try server.call("GET", "/v1/library/changes?since=\(percentEncoded(start))", token: device.token)
    let t1 = try #require(deleteAsset["changeToken"]?.stringValue)
    let t2 = try #require(deleteAlbum["changeToken"]?.stringValue)
    #expect(history.json == (try JSONValue.parse(Array("""
        {"changes":[
          {"changeToken":"\(t1)","assets":{"inserted":[],"updated":[],"deleted":["\(assetID(1))"]},
           "assetCollections":{"inserted":[],"updated":["A/L0/040"],"deleted":[]},"collectionLists":{"inserted":[],"updated":[],"deleted":[]}},
          {"changeToken":"\(t2)","assets":{"inserted":[],"updated":[],"deleted":[]},
           "assetCollections":{"inserted":[],"updated":[],"deleted":["A/L0/040"]},"collectionLists":{"inserted":[],"updated":["F/L0/020"],"deleted":[]}}],
         "changeToken":"\(t2)","hasMore":false}
        """.utf8))))
}
