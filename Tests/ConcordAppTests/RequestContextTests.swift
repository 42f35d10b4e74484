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

@Test func codecFieldReadersNameTheField() throws {
    let object = try context(body: #"{"name":"n","count":3,"flag":true,"list":["a",1],"names":["a","b"],"none":null,"obj":{}}"#).jsonBody()
    #expect(try Codec.requiredString(object, "name", path: "name") == "n")
    #expect(try Codec.bool(object, "flag", path: "flag") == true)
    #expect(try Codec.string(object, "none", path: "none") == nil)
    #expect(try Codec.bool(object, "absent", path: "absent") == nil)
    #expect(try Codec.object(object, "obj", path: "obj") == JSONObject())
    #expect(try Codec.array(object, "list", path: "list")?.count == 2)
    #expect(try Codec.requiredStringArray(object, "names", path: "names") == ["a", "b"])

    let failures: [(String, (JSONObject) throws(APIError) -> Void)] = [
        ("missing", { o throws(APIError) in _ = try Codec.requiredString(o, "missing", path: "missing") }),
        ("count", { o throws(APIError) in _ = try Codec.requiredString(o, "count", path: "count") }),
        ("name", { o throws(APIError) in _ = try Codec.bool(o, "name", path: "name") }),
        ("list", { o throws(APIError) in _ = try Codec.requiredStringArray(o, "list", path: "list") }),
        ("none", { o throws(APIError) in _ = try Codec.requiredStringArray(o, "none", path: "none") }),
        ("flag", { o throws(APIError) in _ = try Codec.object(o, "flag", path: "flag") }),
    ]
    for (field, call) in failures {
        do {
            try call(object)
            Issue.record("\(field) did not fail")
        } catch {
            #expect(error.status == 400)
            #expect(error.message.contains("\(field)"), "\(error.message)")
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
