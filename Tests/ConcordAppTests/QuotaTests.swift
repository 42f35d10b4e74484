import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordApp

/// Per-account quotas, over a real socket on both engines: one more device, journal,
/// entry or object than the quota is `403 quotaExceeded` naming it, and nothing is stored.
@Suite struct QuotaTests {
    @Test(arguments: TestEngine.available)
    func eachQuotaIsEnforcedAndNamed(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine) { c in
            c.quotas.devicesPerAccount = 2
            c.quotas.journalsPerAccount = 1
            c.quotas.entriesPerJournal = 2
            c.quotas.objectsPerDevice = 3
        }
        func expectQuota(_ r: APIResponse, _ quota: String, _ limit: Int, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(r.status == 403, sourceLocation: sourceLocation)
            #expect(r.raw.body.contains(#""name":"quotaExceeded""#), sourceLocation: sourceLocation)
            #expect(r.raw.body.contains(#""quota":"\#(quota)""#) && r.raw.body.contains(#""limit":\#(limit)"#), "\(r.raw.body)", sourceLocation: sourceLocation)
        }
        let account = try server.account()
        let phone = try server.device(account.token, "phone")
        _ = try server.device(account.token, "tablet")
        expectQuota(try server.call("POST", "/v1/devices", token: account.token, body: #"{"name":"third"}"#), "devicesPerAccount", 2)
        #expect(try server.call("GET", "/v1/devices", token: account.token)["devices"]?.arrayValue?.count == 2)

        let fingerprint = String(repeating: "Z", count: 43)
        try server.upsert(phone.token, assets: [("a/L0/001", fingerprint), ("b/L0/001", fingerprint), ("c/L0/001", fingerprint)])
        let fourth = try server.call("POST", "/v1/library/changes", token: phone.token,
                                     body: #"{"assets":{"upsert":[{"localIdentifier":"d/L0/001","fingerprint":"\#(fingerprint)"}]}}"#)
        expectQuota(fourth, "objectsPerDevice", 3)
        #expect(try server.call("GET", "/v1/library/objects/d%2FL0%2F001", token: phone.token).status == 404)
        let manifest = (0..<4).map { #"{"localIdentifier":"m\#($0)/L0/001","fingerprint":"\#(fingerprint)"}"# }.joined(separator: ",")
        expectQuota(try server.call("PUT", "/v1/library", token: phone.token, body: #"{"assets":[\#(manifest)]}"#), "objectsPerDevice", 3)
        // Replacing within the quota is fine (the objects are counted after the change).
        let swap = try server.call("POST", "/v1/library/changes", token: phone.token,
                                   body: #"{"assets":{"upsert":[{"localIdentifier":"d/L0/001","fingerprint":"\#(fingerprint)"}],"delete":["a/L0/001"]}}"#)
        #expect(swap.status == 200, "\(swap.raw.body)")

        let journal = try server.call("POST", "/v1/journals", token: phone.token, body: #"{"title":"One"}"#)
        let journalID = try #require(journal["journalID"]?.stringValue)
        expectQuota(try server.call("POST", "/v1/journals", token: phone.token, body: #"{"title":"Two"}"#), "journalsPerAccount", 1)
        for entry in ["e1", "e2"] {
            #expect(try server.call("PUT", "/v1/journals/\(journalID)/entries/\(entry)", token: phone.token, body: #"{"text":"x","photos":[]}"#).status == 200)
        }
        expectQuota(try server.call("PUT", "/v1/journals/\(journalID)/entries/e3", token: phone.token, body: #"{"text":"x","photos":[]}"#),
                    "entriesPerJournal", 2)
        // An existing entry can still be changed.
        #expect(try server.call("PUT", "/v1/journals/\(journalID)/entries/e2", token: phone.token, body: #"{"text":"y","photos":[]}"#).status == 200)
        #expect(try server.call("GET", "/v1/journals/\(journalID)", token: phone.token)["entries"]?.arrayValue?.count == 2)
    }

    /// Cloud records stay while the account exists, so new content keeps making them: beyond
    /// `quotas.recordsPerAccount` the local → cloud request that would create more is `403`, stores
    /// nothing, and lookups of existing records keep working (defect 7).
    @Test(arguments: TestEngine.available)
    func cloudRecordsAreBoundedPerAccount(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine) { $0.quotas.recordsPerAccount = 3 }
        let account = try server.account()
        let phone = try server.device(account.token, "phone")
        try server.upsert(phone.token, assets: (1...5).map { (assetID($0), fingerprint($0)) })
        func map(_ ns: [Int]) throws -> APIResponse {
            try server.call("POST", "/v1/library/cloud-identifiers", token: phone.token,
                            body: #"{"localIdentifiers":["# + ns.map { #""\#(assetID($0))""# }.joined(separator: ",") + "]}")
        }
        #expect(try map([1, 2]).status == 200)
        let over = try map([3, 4])
        #expect(over.status == 403 && over.raw.body.contains(#""quota":"recordsPerAccount""#) && over.raw.body.contains(#""limit":3"#), "\(over.raw.body)")
        // Nothing of the refused request was stored: one more record still fits, and the first two resolve.
        let third = try map([3])
        #expect(third.status == 200 && third["mappings"]?[0]?["cloudIdentifier"]?.stringValue != nil, "\(third.raw.body)")
        #expect(try map([5]).status == 403)
        let again = try map([1, 2, 3])
        #expect(again.status == 200 && again["mappings"]?.arrayValue?.compactMap { $0["cloudIdentifier"]?.stringValue }.count == 3, "\(again.raw.body)")
    }
}
