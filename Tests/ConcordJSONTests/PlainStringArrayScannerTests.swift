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

    /// The word-at-a-time loops: strings of every length up to 40 (the closing quote in each
    /// lane of a 16- or 8-byte step), and one byte that is not plain at each position of them.
    @Test func findsTheFirstStopInEveryLane() {
        let alphabet = Array("ABCDEF0123456789-/:_L".utf8)
        for length in 0...40 {
            let string = (0..<length).map { alphabet[$0 % alphabet.count] }
            let body = Array(#"{"ids":[""#.utf8) + string + Array(#"","tail-string-of-some-length"]}"#.utf8)
            let spans = PlainStringArrayScanner.scan(body, member: "ids", maxCount: 10) { ($0, $1) }
            #expect(spans?.map { Array(body[$0.0..<$0.0 + $0.1]) } == [string, Array("tail-string-of-some-length".utf8)], "length \(length)")
            for at in 0..<length {
                for stop: [UInt8] in [[0x5C, 0x22], [0x5C, 0x5C], [0x01], [0x1F], [0x7F], [0xC3, 0xA9]] {
                    var bad = string
                    bad.replaceSubrange(at..<at + 1, with: stop)
                    let badBody = Array(#"{"ids":[""#.utf8) + bad + Array(#""]}"#.utf8)
                    #expect(PlainStringArrayScanner.scan(badBody, member: "ids", maxCount: 10) { ($0, $1) } == nil, "length \(length), at \(at), \(stop)")
                }
            }
        }
    }

    @Test func stopsPastMaxCount() {
        let body = Array(#"{"ids":["a","b","c"]}"#.utf8)
        #expect(PlainStringArrayScanner.scan(body, member: "ids", maxCount: 3) { $1 }?.count == 3)
        #expect(PlainStringArrayScanner.scan(body, member: "ids", maxCount: 2) { $1 } == nil)
    }
}
