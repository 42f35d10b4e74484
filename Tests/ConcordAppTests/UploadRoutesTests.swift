import ConcordDomain
import ConcordJSON
import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordApp

/// The API, "Uploads in parts", over a real socket on both engines.

/// A library body (`PUT /v1/library`'s shape) of the assets numbered `ns`, plus `extra` members.
private func slice(_ ns: [Int], extra: String = "") -> String {
    #"{"assets":["# + ns.map { #"{"localIdentifier":"\#(assetID($0))","fingerprint":"\#(fingerprint($0))"}"# }.joined(separator: ",") + "]"
        + extra + "}"
}

extension APIServer {
    /// Opens an upload for the device and answers its ID (201 checked).
    func openUpload(_ deviceToken: String) throws -> String {
        let r = try self.call("POST", "/v1/library/uploads", token: deviceToken, body: "{}")
        try #require(r.status == 201, "\(r.raw.body)")
        let expires = try #require(r["expiresAt"]?.stringValue)
        #expect(RFC3339.isValid(expires))
        return try #require(r["uploadID"]?.stringValue)
    }

    /// The whole library of the device, as `GET /v1/library/objects` lists it.
    func objects(_ deviceToken: String) throws -> [JSONValue] {
        let r = try self.call("GET", "/v1/library/objects?limit=10000", token: deviceToken)
        try #require(r.status == 200, "\(r.raw.body)")
        return r["objects"]?.arrayValue ?? []
    }
}

@Test(arguments: TestEngine.available) func anUploadInPartsAnswersWhatOnePutWould(_ engine: TestEngine) throws {
    let server = try APIServer(engine: engine)
    let account = try server.account()
    let viaPut = try server.device(account.token, "put"), viaUpload = try server.device(account.token, "upload")
    for d in [viaPut, viaUpload] {
        #expect(try server.call("PUT", "/v1/library", token: d.token, body: slice([1, 2, 3])).status == 200)
    }
    let album = #","assetCollections":[{"localIdentifier":"album","fingerprint":"\#(fingerprint(99))","assets":["\#(assetID(4))","\#(assetID(2))"]}]"#
    let put = try server.call("PUT", "/v1/library", token: viaPut.token, body: slice([2, 4, 5], extra: album))
    #expect(put.status == 200, "\(put.raw.body)")

    let id = try server.openUpload(viaUpload.token)
    let p1 = try server.call("PUT", "/v1/library/uploads/\(id)/parts/2", token: viaUpload.token, body: slice([4], extra: album))
    #expect(p1.status == 200 && p1["parts"]?.intValue == 1 && p1["objects"]?.intValue == 2, "\(p1.raw.body)")
    let p2 = try server.call("PUT", "/v1/library/uploads/\(id)/parts/1", token: viaUpload.token, body: slice([2, 5]))
    #expect(p2.status == 200 && p2["parts"]?.intValue == 2 && p2["objects"]?.intValue == 4, "\(p2.raw.body)")
    // Nothing of the library changes before the commit.
    #expect(try server.objects(viaUpload.token).count == 3)

    let commit = try server.call("POST", "/v1/library/uploads/\(id)/commit", token: viaUpload.token)
    #expect(commit.status == 200, "\(commit.raw.body)")
    for name in ["inserted", "updated", "deleted", "unchanged"] {
        #expect(commit[name]?.intValue == put[name]?.intValue, "\(name): \(commit.raw.body) vs \(put.raw.body)")
    }
    #expect(commit["changeToken"]?.stringValue == (try server.libraryToken(viaUpload.token)))
    #expect(try server.objects(viaUpload.token) == (try server.objects(viaPut.token)))
    // The upload is gone.
    #expect(try server.call("POST", "/v1/library/uploads/\(id)/commit", token: viaUpload.token).status == 404)
    #expect(try server.call("DELETE", "/v1/library/uploads/\(id)", token: viaUpload.token).status == 404)
}

@Test(arguments: TestEngine.available) func aRefusedCommitLeavesTheLibraryAndTheUploadAsTheyWere(_ engine: TestEngine) throws {
    let server = try APIServer(engine: engine)
    let account = try server.account()
    let device = try server.device(account.token)
    #expect(try server.call("PUT", "/v1/library", token: device.token, body: slice([1])).status == 200)
    let token = try server.libraryToken(device.token)
    let id = try server.openUpload(device.token)
    #expect(try server.call("PUT", "/v1/library/uploads/\(id)/parts/1", token: device.token, body: slice([1, 2])).status == 200)

    // An identifier in two parts: 400 naming it.
    #expect(try server.call("PUT", "/v1/library/uploads/\(id)/parts/2", token: device.token, body: slice([2])).status == 200)
    let twice = try server.call("POST", "/v1/library/uploads/\(id)/commit", token: device.token)
    #expect(twice.status == 400 && twice.errorName == "badRequest", "\(twice.raw.body)")
    #expect(twice.raw.body.contains(assetID(2)))
    // An album listing an asset no part holds: 422 naming it.
    let album = #"{"assetCollections":[{"localIdentifier":"album","assets":["\#(assetID(7))"]}]}"#
    #expect(try server.call("PUT", "/v1/library/uploads/\(id)/parts/2", token: device.token, body: album).status == 200)
    let missing = try server.call("POST", "/v1/library/uploads/\(id)/commit", token: device.token)
    #expect(missing.status == 422 && missing["error"]?["missing"]?[0]?.stringValue == assetID(7), "\(missing.raw.body)")
    // A stale If-Match: 412 with the current token; a malformed one: 400 naming If-Match.
    #expect(try server.call("PUT", "/v1/library/uploads/\(id)/parts/2", token: device.token, body: "{}").status == 200)
    let stale = try server.call("POST", "/v1/library/uploads/\(id)/commit", token: device.token, headers: [#"If-Match: "AAAA""#])
    #expect(stale.status == 412 && stale["error"]?["changeToken"]?.stringValue == token, "\(stale.raw.body)")
    let malformed = try server.call("POST", "/v1/library/uploads/\(id)/commit", token: device.token, headers: ["If-Match: nope"])
    #expect(malformed.status == 400 && malformed["error"]?["field"]?.stringValue == "If-Match", "\(malformed.raw.body)")
    #expect(try server.libraryToken(device.token) == token)
    #expect(try server.objects(device.token).count == 1)

    let commit = try server.call("POST", "/v1/library/uploads/\(id)/commit", token: device.token, headers: ["If-Match: \"\(token)\""])
    #expect(commit.status == 200 && commit["inserted"]?.intValue == 1 && commit["unchanged"]?.intValue == 1, "\(commit.raw.body)")
}

@Test(arguments: TestEngine.available) func uploadsAreCheckedOnArrivalOwnedAndBounded(_ engine: TestEngine) throws {
    let server = try APIServer(engine: engine)
    let account = try server.account()
    let device = try server.device(account.token), other = try server.device(account.token, "other")
    let id = try server.openUpload(device.token)

    let cases: [(target: String, body: String, field: String)] = [
        ("/v1/library/uploads/\(id)/parts/0", "{}", "n"),
        ("/v1/library/uploads/\(id)/parts/10001", "{}", "n"),
        ("/v1/library/uploads/\(id)/parts/x", "{}", "n"),
        ("/v1/library/uploads/\(id)/parts/1", #"{"assets":[{"localIdentifier":"a","fingerprint":"short"}]}"#, "assets.fingerprint"),
        ("/v1/library/uploads/\(id)/parts/1", #"{"assets":{"upsert":[]}}"#, "assets"),
        ("/v1/library/uploads/\(id)/parts/1", slice([1, 1]), "localIdentifier"),
    ]
    for c in cases {
        let r = try server.call("PUT", c.target, token: device.token, body: c.body)
        #expect(r.status == 400 && r["error"]?["field"]?.stringValue == c.field, "\(c.target) \(c.body): \(r.raw.body)")
    }
    // Another device's upload, and an unknown one, are alike unknown.
    for (method, target) in [("PUT", "/v1/library/uploads/\(id)/parts/1"), ("POST", "/v1/library/uploads/\(id)/commit"),
                             ("DELETE", "/v1/library/uploads/\(id)"), ("DELETE", "/v1/library/uploads/unknown")] {
        let r = try server.call(method, target, token: other.token, body: method == "PUT" ? "{}" : nil)
        #expect(r.status == 404 && r.errorName == "notFound", "\(method) \(target): \(r.raw.body)")
    }
    // The account's token may not use a device's route.
    #expect(try server.call("POST", "/v1/library/uploads", token: account.token, body: "{}").status == 403)
    #expect(try server.call("POST", "/v1/library/uploads", token: nil, body: "{}").status == 401)
    #expect(try server.call("POST", "/v1/library/uploads", token: device.token, body: "[]").status == 400)

    // Two open uploads per device; a deleted one frees its place.
    let second = try server.openUpload(device.token)
    let third = try server.call("POST", "/v1/library/uploads", token: device.token)
    #expect(third.status == 409 && third.errorName == "tooManyUploads" && third["error"]?["maxOpenUploads"]?.intValue == 2, "\(third.raw.body)")
    #expect(try server.call("DELETE", "/v1/library/uploads/\(second)", token: device.token).status == 204)
    _ = try server.openUpload(device.token)
}

/// A manifest over `server.limits.libraryItems` is `413` naming the setting and the uploads route.
@Test func aManifestOverTheItemLimitNamesTheSettingAndUploads() throws {
    let server = try APIServer { $0.server.limits.libraryItems = 2 }
    let account = try server.account()
    let device = try server.device(account.token)
    for target in ["/v1/library", "/v1/library/uploads/\(try server.openUpload(device.token))/parts/1"] {
        let r = try server.call("PUT", target, token: device.token, body: slice([1, 2, 3]))
        #expect(r.status == 413 && r.errorName == "payloadTooLarge", "\(r.raw.body)")
        #expect(r.raw.body.contains("server.limits.libraryItems") && r.raw.body.contains("/v1/library/uploads"), "\(r.raw.body)")
    }
}

/// A body over its route's byte limit is `413` naming the setting: the server's own
/// limit (manifests) says to raise it or send the library in parts; a small route names its own.
@Test func aBodyOverItsLimitNamesTheSettingToRaise() throws {
    let server = try APIServer {
        $0.server.limits.bodyBytes = 4096
        $0.server.limits.smallBodyBytes = 1024
    }
    let account = try server.account()
    let device = try server.device(account.token)
    let manifest = try server.call("PUT", "/v1/library", token: device.token, body: slice(Array(1...40)))
    #expect(manifest.status == 413 && manifest.errorName == "payloadTooLarge", "\(manifest.raw.body)")
    #expect(manifest.raw.body.contains("server.limits.bodyBytes") && manifest.raw.body.contains("POST /v1/library/uploads"), "\(manifest.raw.body)")
    let title = String(repeating: "t", count: 2000)
    let small = try server.call("POST", "/v1/journals", token: device.token, body: #"{"title":"\#(title)"}"#)
    #expect(small.status == 413 && small.raw.body.contains("server.limits.smallBodyBytes"), "\(small.raw.body)")
}
