import ConcordJSON
import Testing

/// What the in-place reading of a mapping batch takes, and everything it leaves to the parser.
struct PlainStringArrayScannerTests {
    static let taken: [(body: String, strings: [String])] = [
        (#"{"ids":["a","bc","ABC/L0/001"]}"#, ["a", "bc", "ABC/L0/001"]),
        (#"{"ids":[]}"#, []),
        ("\r\n\t { \"ids\" : [ \"a\" ,\n\"b\" ] } \n", ["a", "b"]),
        (#"{"ids":["",""," ~!#$%&'()*+,-./:;<=>?@[]^_`{|}"]}"#, ["", "", " ~!#$%&'()*+,-./:;<=>?@[]^_`{|}"]),
    ]

    static let leftToTheParser: [String] = [
        #"{"ids":["a\"b"]}"#,             // an escape
        #"{"ids":["a\\b"]}"#,
        #"{"ids":["caf\#u{E9}"]}"#,        // not ASCII
        "{\"ids\":[\"a\u{7F}\"]}",         // DEL
        "{\"ids\":[\"a\tb\"]}",            // a control character (malformed JSON)
        #"{"idz":["a"]}"#,                // another member
        #"{"id":["a"]}"#,
        #"{"ids":["a"],"ids":["b"]}"#,    // two members
        #"{"x":1,"ids":["a"]}"#,
        #"{"ids":["a",1]}"#,              // not all strings
        #"{"ids":[null]}"#,
        #"{"ids":"a"}"#,
        #"{"ids":["a",]}"#,               // malformed
        #"{"ids":["a"]"#,
        #"{"ids":["a"]}x"#,
        #"{"ids":["a" "b"]}"#,
        #"{"ids":["a"#,
        #"["a"]"#,
        "",
        "  ",
    ]

    @Test(arguments: taken.indices) func takesThePlainForm(_ i: Int) throws {
        let (body, strings) = Self.taken[i]
        let bytes = Array(body.utf8)
        let spans = try #require(PlainStringArrayScanner.scan(bytes, member: "ids", maxCount: 10) { ($0, $1) })
        #expect(spans.map { String(decoding: bytes[$0.0..<$0.0 + $0.1], as: UTF8.self) } == strings)
    }

    @Test(arguments: leftToTheParser) func leavesEverythingElseToTheParser(_ body: String) {
        #expect(PlainStringArrayScanner.scan(Array(body.utf8), member: "ids", maxCount: 10) { ($0, $1) } == nil)
    }

    @Test func stopsPastMaxCount() {
        let body = Array(#"{"ids":["a","b","c"]}"#.utf8)
        #expect(PlainStringArrayScanner.scan(body, member: "ids", maxCount: 3) { $1 }?.count == 3)
        #expect(PlainStringArrayScanner.scan(body, member: "ids", maxCount: 2) { $1 } == nil)
    }
}
