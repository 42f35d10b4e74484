import ConcordJSON
import Testing

/// What the element-at-a-time reading of a library manifest takes, and everything it leaves to
/// the parser (which then reads the body whole).
struct ObjectArraysScannerTests {
    static let names = ["assets", "albums"]

    /// Bodies taken, and the elements found for each name (nil: absent).
    static let taken: [(body: String, elements: [[String]?])] = [
        (#"{"assets":[{"a":1},{"b":"x"}]}"#, [[#"{"a":1}"#, #"{"b":"x"}"#], nil]),
        (#"{}"#, [nil, nil]),
        (#"{"assets":[],"albums":[]}"#, [[], []]),
        (#"{"albums":[{"m":["a","b"]}],"assets":[{}]}"#, [["{}"], [#"{"m":["a","b"]}"#]]),
        ("\r\n {\t\"assets\" : [ {\"a\":\"}]{[\\\"\"} ,\n{ } ] } \n", [["{\"a\":\"}]{[\\\"\"}", "{ }"], nil]),
        (#"{"assets":[{"a":{"b":{"c":[1]}}}]}"#, [[#"{"a":{"b":{"c":[1]}}}"#], nil]),
        // Extents only: a malformed element is found as it stands, for its parse to refuse.
        (#"{"assets":[{"a":[1}}]}"#, [[#"{"a":[1}}"#], nil]),
    ]

    static let leftToTheParser: [String] = [
        #"{"other":[{}]}"#,                     // another member
        #"{"assets":[{}],"x":1}"#,
        #"{"assets":[{}],"assets":[{}]}"#,      // a name twice
        #"{"ass\u0065ts":[{}]}"#,               // an escape in a name
        #"{"assets":null}"#,                    // not an array
        #"{"assets":{}}"#,
        #"{"assets":[1]}"#,                     // an element that is not an object
        #"{"assets":[{},[]]}"#,
        #"{"assets":[{"a":[[[[1]]]]}]}"#,      // deeper than 4
        #"{"assets":[{}],}"#,                   // malformed around the elements
        #"{"assets":[{},]}"#,
        #"{"assets":[{}]"#,
        #"{"assets":[{}]}x"#,
        #"{"assets":[{} {}]}"#,
        #"{"assets":[{"a":"}]}"#,              // a string without its end
        #"{"assets":[{"a":[1}]}"#,              // brackets that do not match, and no end
        #"[{}]"#,
        "",
        " ",
    ]

    @Test(arguments: taken.indices) func findsTheElements(_ i: Int) throws {
        let (body, expected) = Self.taken[i]
        let bytes = Array(body.utf8)
        let found = try #require(ObjectArraysScanner.scan(bytes, names: Self.names))
        #expect(found.map { $0?.map { String(decoding: bytes[$0], as: UTF8.self) } } == expected)
    }

    @Test(arguments: leftToTheParser) func leavesEverythingElseToTheParser(_ body: String) {
        #expect(ObjectArraysScanner.scan(Array(body.utf8), names: Self.names) == nil)
    }

    /// What the parser counts against `maxElements`, which the element-at-a-time reading adds up.
    @Test func elementCountIsTheParsersCount() throws {
        for (text, count) in [("1", 0), ("[]", 0), ("[1,2]", 2), (#"{"a":1,"b":[1,{"c":null}]}"#, 5), (#"[[],{}]"#, 2)] {
            #expect(try JSONValue.parse(Array(text.utf8)).elementCount == count, "\(text)")
            // The parser refuses one element fewer than the count.
            if count > 0 { #expect(throws: JSONParseError.self) { try JSONValue.parse(Array(text.utf8), maxElements: count - 1) } }
            _ = try JSONValue.parse(Array(text.utf8), maxElements: count)
        }
    }
}
