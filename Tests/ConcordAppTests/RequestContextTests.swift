import ConcordHTTP
import ConcordJSON
import ConcordObservability
import Testing

@testable import ConcordApp

private let quietLogger = Logger(level: .error, sink: LogSink(flushInterval: 0, output: { _ in }))

private func context(headers: [(String, String)] = [], body: String = "", target: String = "/") -> RequestContext {
    RequestContext(
        request: HTTPRequest(method: "POST", target: target, headers: HTTPHeaders(headers.map { (name: $0.0, value: $0.1) }), body: Array(body.utf8)),
        logger: quietLogger)
}

private let bearerCases: [(header: String?, token: String?)] = [
    (nil, nil),
    ("Bearer abc123", "abc123"),
    ("bearer abc123", "abc123"),
    ("BEARER   abc123  ", "abc123"),
    ("Basic dXNlcjpwYXNz", nil),
    ("Bearer", nil),
    ("Bearer ", nil),
    ("Bearerabc", nil),
    ("Token abc", nil),
]

@Test(arguments: bearerCases.indices)
func bearerTokenParsesAuthorizationHeader(_ index: Int) {
    let c = bearerCases[index]
    let ctx = context(headers: c.header.map { [("authorization", $0)] } ?? [])
    #expect(ctx.bearerToken == c.token, "\(String(describing: c.header))")
}

private let bodyCases: [(body: String, error: String?)] = [
    (#"{"name":"x"}"#, nil),
    ("{}", nil),
    ("[1,2]", "The body must be a JSON object."),
    ("\"text\"", "The body must be a JSON object."),
    (#"{"name":}"#, "malformed JSON at byte 8"),
    ("", "malformed JSON at byte 0"),
]

@Test(arguments: bodyCases.indices)
func jsonBodyRejectsMalformedAndNonObjects(_ index: Int) {
    let c = bodyCases[index]
    do {
        _ = try context(body: c.body).jsonBody()
        #expect(c.error == nil, "\(c.body) parsed")
    } catch {
        #expect(error.status == 400 && error.name == "badRequest")
        if let expected = c.error { #expect(error.message.contains(expected), "\(error.message)") } else { Issue.record("\(c.body): \(error.message)") }
    }
}

@Test func fieldHelpersNameTheField() throws {
    let object = try context(body: #"{"name":"n","count":3,"ratio":1.5,"flag":true,"list":["a",1],"none":null,"obj":{}}"#).jsonBody()
    #expect(try object.requiredString("name") == "n")
    #expect(try object.requiredInt("count") == 3)
    #expect(try object.optionalBool("flag") == true)
    #expect(try object.optionalString("none") == nil)
    #expect(try object.optionalBool("absent") == nil)
    #expect(try object.requiredObject("obj") == JSONObject())
    #expect(try object.requiredArray("list").count == 2)

    let failures: [(String, (JSONObject) throws(APIError) -> Void)] = [
        ("missing", { o throws(APIError) in _ = try o.requiredString("missing") }),
        ("count", { o throws(APIError) in _ = try o.requiredString("count") }),
        ("ratio", { o throws(APIError) in _ = try o.requiredInt("ratio") }),
        ("name", { o throws(APIError) in _ = try o.optionalBool("name") }),
        ("list", { o throws(APIError) in _ = try o.requiredStringArray("list") }),
        ("none", { o throws(APIError) in _ = try o.requiredArray("none") }),
        ("flag", { o throws(APIError) in _ = try o.requiredObject("flag") }),
    ]
    for (field, call) in failures {
        do {
            try call(object)
            Issue.record("\(field) did not fail")
        } catch {
            #expect(error.status == 400)
            #expect(error.message.contains("\"\(field)\""), "\(error.message)")
            #expect(error.details.contains { $0.key == "field" && $0.jsonValue == "\"\(field)\"" })
        }
    }
}

@Test func apiErrorRendersContractShape() {
    let response = APIError.methodNotAllowed(allow: ["GET", "HEAD"]).response
    #expect(response.status == 405)
    #expect(response.headers[first: "Allow"] == "GET, HEAD")
    #expect(response.headers[first: "Content-Type"] == "application/json")
    #expect(String(decoding: response.body, as: UTF8.self) == #"{"error":{"name":"methodNotAllowed","message":"Method not allowed."}}"#)

    let batch = APIError(status: 413, name: "batchTooLarge", message: "Too \"many\"\n").with("maxBatch", .number(10000))
    #expect(String(decoding: batch.response.body, as: UTF8.self) == #"{"error":{"name":"batchTooLarge","message":"Too \"many\"\n","maxBatch":10000}}"#)
}

private struct StorageFailure: Error {}

@Test func mapErrorsTurnsUnknownErrorsInto500() throws {
    let ctx = context()
    #expect(try ctx.mapErrors { 42 } == 42)
    do {
        _ = try ctx.mapErrors { () throws -> Int in throw StorageFailure() }
        Issue.record("did not throw")
    } catch {
        #expect(error.status == 500 && error.name == "internalError")
    }
    do {
        _ = try ctx.mapErrors { () throws -> Int in throw APIError.notFound }
        Issue.record("did not throw")
    } catch {
        #expect(error.status == 404)
    }
}
