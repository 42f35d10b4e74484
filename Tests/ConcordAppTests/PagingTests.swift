import ConcordTestSupport
import Foundation
import Testing

@testable import ConcordApp
@testable import ConcordDomain

/// `PageRequest` alone: pages in order, `hasMore`, and its errors.
@Suite struct PageRequestTests {
    @Test(arguments: [
        (PageRequest(limit: 2), ["a", "b"], true),
        (PageRequest(limit: 2, after: "b"), ["c", "d"], true),
        (PageRequest(limit: 2, after: "d"), ["e"], false),
        (PageRequest(limit: 10), ["a", "b", "c", "d", "e"], false),
        (PageRequest(after: "e"), [], false),
        (PageRequest(after: "a"), ["b", "c", "d", "e"], false),
    ])
    func pagesFollowEachOther(_ page: PageRequest, _ items: [String], _ hasMore: Bool) throws {
        let result = try page.apply(["a", "b", "c", "d", "e"], id: { $0 })
        #expect(result.items == items)
        #expect(result.hasMore == hasMore)
    }

    @Test(arguments: [(PageRequest(limit: 0), "limit"), (PageRequest(limit: 1001), "limit"), (PageRequest(after: "zz"), "after")])
    func badPagesNameTheirParameter(_ page: PageRequest, _ field: String) {
        var named: String?
        do {
            _ = try page.apply(["a"], id: { $0 })
        } catch {
            if case .badRequest(_, let f) = error { named = f }
        }
        #expect(named == field)
    }
}

/// Paging over a real socket on both engines: devices, journals and a journal's
/// entries page with `limit`/`after` and say `hasMore`; without them the answers are the API's,
/// unchanged; one entry can be read alone.
@Suite struct PagingTests {
    @Test(arguments: TestEngine.available)
    func listsPageAndUnpagedAnswersStayAsTheContractSays(_ engine: TestEngine) throws {
        let server = try APIServer(engine: engine)
        let account = try server.account()
        var deviceIDs: [String] = []
        var phoneToken = ""
        for i in 0..<5 {
            let d = try server.device(account.token, "device \(i)")
            deviceIDs.append(d.id)
            if i == 0 { phoneToken = d.token }
        }
        let all = try server.call("GET", "/v1/devices", token: account.token)
        #expect(!all.raw.body.contains("hasMore"))
        let ordered = try #require(all["devices"]?.arrayValue).compactMap { $0["deviceID"]?.stringValue }
        #expect(ordered.count == 5)
        var collected: [String] = []
        var after: String?
        var pages = 0
        repeat {
            let r = try server.call("GET", "/v1/devices?limit=2" + (after.map { "&after=\($0)" } ?? ""), token: account.token)
            #expect(r.status == 200)
            let ids = try #require(r["devices"]?.arrayValue).compactMap { $0["deviceID"]?.stringValue }
            collected += ids
            after = ids.last
            pages += 1
            if r["hasMore"]?.boolValue != true { break }
        } while pages < 10
        #expect(collected == ordered)
        #expect(pages == 3)
        #expect(try server.call("GET", "/v1/devices?limit=0", token: account.token).status == 400)
        #expect(try server.call("GET", "/v1/devices?after=nope", token: account.token).raw.body.contains(#""field":"after""#))

        for title in ["A", "B", "C"] {
            #expect(try server.call("POST", "/v1/journals", token: phoneToken, body: #"{"title":"\#(title)"}"#).status == 201)
        }
        let journals = try server.call("GET", "/v1/journals?limit=2", token: phoneToken)
        #expect(journals["journals"]?.arrayValue?.count == 2 && journals["hasMore"]?.boolValue == true)
        let first = try #require(journals["journals"]?.arrayValue?.first?["journalID"]?.stringValue)
        #expect(!(try server.call("GET", "/v1/journals", token: phoneToken).raw.body.contains("hasMore")))

        for entry in ["e1", "e2", "e3"] {
            #expect(try server.call("PUT", "/v1/journals/\(first)/entries/\(entry)", token: phoneToken, body: #"{"text":"\#(entry)","photos":[]}"#).status == 200)
        }
        let page = try server.call("GET", "/v1/journals/\(first)?limit=2&after=e1", token: phoneToken)
        #expect(page["entries"]?.arrayValue?.compactMap { $0["entryID"]?.stringValue } == ["e2", "e3"])
        #expect(page["hasMore"]?.boolValue == false)
        #expect(page["entryCount"]?.intValue == 3)
        let whole = try server.call("GET", "/v1/journals/\(first)", token: phoneToken)
        #expect(whole["entries"]?.arrayValue?.count == 3 && !whole.raw.body.contains("hasMore"))

        let one = try server.call("GET", "/v1/journals/\(first)/entries/e2", token: phoneToken)
        #expect(one.status == 200)
        #expect(one["entryID"]?.stringValue == "e2" && one["text"]?.stringValue == "e2")
        #expect(one.raw.header("ETag") == "\"\(one["version"]?.stringValue ?? "")\"")
        #expect(try server.call("GET", "/v1/journals/\(first)/entries/e9", token: phoneToken).status == 404)
        #expect(try server.call("GET", "/v1/journals/\(UUID().uuidString)/entries/e2", token: phoneToken).status == 404)
    }
}
