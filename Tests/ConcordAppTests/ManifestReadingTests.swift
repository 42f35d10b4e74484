import ConcordDomain
import ConcordJSON
import Foundation
import Testing

@testable import ConcordApp

/// A manifest (`PUT /v1/library`, an upload's part) of the usual shape is read one object at a time
/// (`ObjectArraysScanner`), anything else whole: the answers are the same either way, errors
/// included. The reference is the same body with an unknown member added, which the element-wise
/// reading leaves to the whole-body parser.
@Suite struct ManifestReadingTests {
    static let fp = String(repeating: "B", count: 43)
    static func asset(_ id: String) -> String {
        #"{"localIdentifier":"\#(id)","fingerprint":"\#(fp)","creationDate":"2024-01-02T03:04:05Z","isFavorite":true,"mediaType":"video"}"#
    }

    static let bodies: [String] = [
        // Well formed and valid: every type, members, an escape inside an element, unknown fields.
        #"{"assets":[\#(asset("a1/L0/001")),\#(asset("a2/L0/001"))],"assetCollections":[{"localIdentifier":"c1/L0/040","assets":["a1/L0/001"]}],"collectionLists":[{"localIdentifier":"f1/L0/020","collections":["c1/L0/040"]}]}"#,
        #"{"collectionLists":[],"assets":[{"localIdentifier":"a\u0031/L0/001","extra":[1,{"x":null}]}]}"#,
        #"{}"#,
        // Well formed, refused by the service: the first error by type, then document order.
        #"{"assetCollections":[{"localIdentifier":5}],"assets":[{"localIdentifier":7}]}"#,
        #"{"assetCollections":[{"localIdentifier":"c1/L0/040","assets":["a9/L0/001"]}],"assets":[\#(asset("a1/L0/001"))]}"#,
        #"{"assets":[\#(asset("a1/L0/001")),\#(asset("a1/L0/001"))]}"#,
        #"{"assets":[{"localIdentifier":"a1/L0/001","fingerprint":"short"}]}"#,
        #"{"assets":[{"localIdentifier":"a1/L0/001","mediaType":"hologram"}]}"#,
        #"{"assets":[{}]}"#,
    ]

    /// `{"x":0,` + the rest: the same manifest, which only the whole-body parser reads.
    static func readWhole(_ body: String) -> String {
        body == "{}" ? #"{"x":0}"# : #"{"x":0,"# + body.dropFirst()
    }

    @Test(arguments: bodies.indices) func answersAlikeReadEitherWay(_ i: Int) throws {
        let server = try APIServer()
        let account = try server.account()
        let elementWise = try server.device(account.token, "one"), whole = try server.device(account.token, "two")
        let a = try server.call("PUT", "/v1/library", token: elementWise.token, body: Self.bodies[i])
        let b = try server.call("PUT", "/v1/library", token: whole.token, body: Self.readWhole(Self.bodies[i]))
        #expect(a.status == b.status, "\(a.raw.body) / \(b.raw.body)")
        guard a.status == 200 else {
            #expect(a.raw.body == b.raw.body)
            return
        }
        for field in ["inserted", "updated", "deleted", "unchanged"] { #expect(a[field] == b[field], "\(field)") }
        for type in ["assets", "assetCollections", "collectionLists"] {
            let listA = try server.call("GET", "/v1/library/objects?type=\(type)", token: elementWise.token)
            let listB = try server.call("GET", "/v1/library/objects?type=\(type)", token: whole.token)
            #expect(listA.status == 200 && listA.raw.body == listB.raw.body, "\(type): \(listA.raw.body) / \(listB.raw.body)")
        }
        // An upload's part takes the same reading.
        let upload = try server.call("POST", "/v1/library/uploads", token: elementWise.token, body: "{}")
        let id = try #require(upload["uploadID"]?.stringValue)
        let part = try server.call("PUT", "/v1/library/uploads/\(id)/parts/1", token: elementWise.token, body: Self.bodies[i])
        #expect(part.status == 200, "\(part.raw.body)")
    }

    /// The usual shape is read element-wise (what the comparison above relies on), refusals of the
    /// service included; an element the codec refuses sends the body to the whole-body parser.
    @Test func theUsualShapeIsReadElementWise() throws {
        func elementWise(_ body: String) -> LibrarySnapshot? {
            let bytes = Array(body.utf8)
            return ObjectArraysScanner.scan(bytes, names: ObjectType.allCases.map(\.partName)).flatMap { Codec.snapshot(bytes, parts: $0, maxElements: 1 << 16) }
        }
        for i in [0, 1, 2, 4, 5, 6] { #expect(elementWise(Self.bodies[i]) != nil, "\(Self.bodies[i])") }
        #expect(elementWise(Self.bodies[0])?.objects.map(\.localIdentifier) == ["a1/L0/001", "a2/L0/001", "c1/L0/040", "f1/L0/020"])
        for i in [3, 7, 8] { #expect(elementWise(Self.bodies[i]) == nil, "\(Self.bodies[i])") }
        #expect(elementWise(Self.readWhole(Self.bodies[0])) == nil)
        // Elements counted as the parser counts them: exactly at the bound read, one past not.
        let bytes = Array(Self.bodies[0].utf8)
        let parts = try #require(ObjectArraysScanner.scan(bytes, names: ObjectType.allCases.map(\.partName)))
        let count = try JSONValue.parse(bytes).elementCount
        #expect(Codec.snapshot(bytes, parts: parts, maxElements: count) != nil && Codec.snapshot(bytes, parts: parts, maxElements: count - 1) == nil)
    }

    /// Malformed around or inside the elements: the whole-body parser's words, its byte offset.
    @Test(arguments: [
        #"{"assets":[{"localIdentifier":"a1/L0/001"},]}"#,
        #"{"assets":[{"localIdentifier":"a1/L0/001"}]} x"#,
        #"{"assets":[{"localIdentifier":"a1/L0/001",}]}"#,
        #"{"assets":[{"localIdentifier":"a1/L0/001"}}]}"#,
        "{\"assets\":[{\"localIdentifier\":\"a1\t/L0/001\"}]}",
    ]) func malformedBodiesAreTheParsersErrors(_ body: String) throws {
        let server = try APIServer()
        let device = try server.device(try server.account().token)
        let r = try server.call("PUT", "/v1/library", token: device.token, body: body)
        var offset = -1
        do { _ = try JSONValue.parse(Array(body.utf8)) } catch { offset = error.offset }
        #expect(r.status == 400 && r.raw.body.contains("malformed JSON at byte \(offset)"), "\(r.raw.body)")
    }

    /// Counted as the parser counts: past the body's element bound, `413` as for a body read whole.
    @Test func tooManyElementsInsideTheObjectsIs413() throws {
        let server = try APIServer()
        let device = try server.device(try server.account().token)
        let ones = [String](repeating: "1", count: 70_000).joined(separator: ",")
        let r = try server.call("PUT", "/v1/library", token: device.token, body: #"{"assets":[{"localIdentifier":"a1/L0/001","extra":[\#(ones)]}]}"#)
        #expect(r.status == 413 && r.raw.body.contains("JSON elements"), "\(r.raw.body)")
    }
}
