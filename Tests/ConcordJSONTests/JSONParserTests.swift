import ConcordJSON
import Testing

/// Table-driven checks of the reader beyond JSONTestSuite: exact values, error offsets,
/// limits and the accessors used for request decoding.
@Suite struct JSONParserTests {
    static func parse(_ text: String, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        try JSONValue.parse(Array(text.utf8), maxDepth: maxDepth)
    }

    static let validDocuments: [(String, JSONValue)] = [
        ("null", .null),
        (" true ", .bool(true)),
        ("\tfalse\r\n", .bool(false)),
        ("0", .number(0)),
        ("-0", .number(-0.0)),
        ("123", .number(123)),
        ("-123", .number(-123)),
        ("1.5", .number(1.5)),
        ("0.1", .number(0.1)),
        ("1e3", .number(1000)),
        ("1E+3", .number(1000)),
        ("25e-1", .number(2.5)),
        ("0.000001", .number(0.000001)),
        ("9007199254740993", .number(9007199254740992)),  // rounds to even
        ("123456789012345678901234567890", .number(123456789012345677877719597056)),
        ("2.2250738585072014e-308", .number(2.2250738585072014e-308)),
        ("1.7976931348623157e308", .number(1.7976931348623157e308)),
        ("4.9e-324", .number(Double.leastNonzeroMagnitude)),
        ("1e-400", .number(0)),
        ("0e99999999999", .number(0)),
        ("\"\"", .string("")),
        ("\"plain ascii longer than eight bytes\"", .string("plain ascii longer than eight bytes")),
        ("\"9F983DBA-EC35-42B8-8773-B597CF782EDD/L0/001\"", .string("9F983DBA-EC35-42B8-8773-B597CF782EDD/L0/001")),
        (#""\"\\\/\b\f\n\r\t""#, .string("\"\\/\u{8}\u{c}\n\r\t")),
        (#""\u0041\u00e9\u20AC""#, .string("Aé€")),
        (#""\ud83d\ude00""#, .string("😀")),
        (#""\u0000""#, .string("\u{0}")),
        ("\"é€😀 and ascii after the multibyte part\"", .string("é€😀 and ascii after the multibyte part")),
        ("\"\u{7F}\"", .string("\u{7F}")),
        ("[]", .array([])),
        ("[ ]", .array([])),
        ("[1,[2,[3]],{}]", .array([.number(1), .array([.number(2), .array([.number(3)])]), .object(JSONObject())])),
        (#"{"b":1,"a":[true,null]}"#, .object(JSONObject([(key: "b", value: .number(1)), (key: "a", value: .array([.bool(true), .null]))]))),
        (#" { "k" : "v" , "k2" : { } } "#, .object(JSONObject([(key: "k", value: .string("v")), (key: "k2", value: .object(JSONObject()))]))),
    ]

    @Test(arguments: validDocuments)
    func validDocumentParsesToExactValue(text: String, expected: JSONValue) throws {
        let value = try Self.parse(text)
        #expect(value == expected, "\(text)")
        if case .number(let parsed) = value, case .number(let wanted) = expected {
            #expect(parsed.sign == wanted.sign, "sign of \(text)")
        }
    }

    /// Each case: input, and the byte offset the error must point at.
    static let invalidDocuments: [(String, Int)] = [
        ("", 0),
        ("   ", 3),
        ("nul", 0),
        ("nulL", 3),
        ("truex", 4),
        ("01", 1),
        ("-01", 2),
        ("+1", 0),
        ("1.", 2),
        (".5", 0),
        ("1e", 2),
        ("1e+", 3),
        ("-", 1),
        ("0x10", 1),
        ("1e400", 0),
        ("-1e400", 0),
        ("NaN", 0),
        ("Infinity", 0),
        ("[1,]", 3),
        ("[1 2]", 3),
        ("[", 1),
        ("{\"a\"}", 4),
        ("{\"a\":1,}", 7),
        ("{a:1}", 1),
        ("{\"a\" 1}", 5),
        ("\"abc", 0),
        ("\"a\u{1}b\"", 2),
        ("\"\\x\"", 1),
        ("\"\\u12\"", 3),
        ("\"\\u12G4\"", 5),
        (#""\ud800""#, 1),
        (#""\udc00""#, 1),
        (#""\ud800\u0041""#, 1),
        ("1 2", 2),
        ("{} x", 3),
        ("\u{A0}1", 0),
        ("[1]\u{0C}", 3),
    ]

    @Test(arguments: invalidDocuments)
    func invalidDocumentIsRejectedAtTheRightOffset(text: String, offset: Int) {
        #expect {
            try Self.parse(text)
        } throws: { error in
            guard let error = error as? JSONParseError else { return false }
            return error.offset == offset && !error.message.isEmpty
        }
    }

    static let invalidUTF8: [(name: String, bytes: [UInt8])] = [
        ("lone continuation byte", [0x22, 0x80, 0x22]),
        ("overlong slash C0 AF", [0x22, 0xC0, 0xAF, 0x22]),
        ("overlong C1", [0x22, 0xC1, 0xBF, 0x22]),
        ("overlong three-byte E0 80 80", [0x22, 0xE0, 0x80, 0x80, 0x22]),
        ("overlong four-byte F0 80 80 80", [0x22, 0xF0, 0x80, 0x80, 0x80, 0x22]),
        ("UTF-8 encoded surrogate ED A0 80", [0x22, 0xED, 0xA0, 0x80, 0x22]),
        ("above U+10FFFF F4 90 80 80", [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22]),
        ("F5 lead byte", [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22]),
        ("FF byte", [0x22, 0xFF, 0x22]),
        ("truncated two-byte at end of string", [0x22, 0xC3, 0x22]),
        ("truncated at end of input", [0x22, 0xE2, 0x82]),
        ("invalid byte after eight ASCII bytes", Array("\"abcdefgh".utf8) + [0xC3, 0x28, 0x22]),
        ("invalid byte inside escaped string", Array("\"\\n".utf8) + [0xC3, 0x28, 0x22]),
        ("byte order mark", [0xEF, 0xBB, 0xBF, 0x7B, 0x7D]),
    ]

    @Test(arguments: invalidUTF8)
    func invalidUTF8IsRejected(name: String, bytes: [UInt8]) {
        #expect(throws: JSONParseError.self, "\(name)") {
            try JSONValue.parse(bytes)
        }
    }

    @Test func validMultibyteUTF8AtEveryBoundaryIsAccepted() throws {
        // Smallest and largest scalar of each encoded length, including those next to the
        // surrogate gap, placed at every offset modulo the 8-byte scan width.
        let scalars = ["\u{80}", "\u{7FF}", "\u{800}", "\u{D7FF}", "\u{E000}", "\u{FFFF}", "\u{10000}", "\u{10FFFF}"]
        for scalar in scalars {
            for padding in 0..<9 {
                let content = String(repeating: "x", count: padding) + scalar + "tail-of-string"
                #expect(try Self.parse("\"\(content)\"") == .string(content))
            }
        }
    }

    @Test func specialBytesAreFoundAtEveryOffsetOfTheWordScan() throws {
        for padding in 0..<17 {
            let prefix = String(repeating: "a", count: padding)
            #expect(try Self.parse("\"\(prefix)\"") == .string(prefix))
            #expect(try Self.parse("\"\(prefix)\\n\(prefix)\"") == .string(prefix + "\n" + prefix))
            #expect(throws: JSONParseError.self) { try Self.parse("\"\(prefix)\u{1F}\(prefix)\"") }
            #expect(throws: JSONParseError.self) { try Self.parse("\"\(prefix)") }
        }
    }

    @Test func hundredThousandOpeningBracketsFailWithoutCrashing() {
        let bytes = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        #expect {
            try JSONValue.parse(bytes)
        } throws: { error in
            (error as? JSONParseError)?.offset == 64
        }
        let objects = Array(String(repeating: "{\"a\":", count: 100_000).utf8)
        #expect(throws: JSONParseError.self) { try JSONValue.parse(objects) }
    }

    @Test func depthLimitAllowsExactlyMaxDepthLevels() throws {
        let atLimit = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        let overLimit = "[" + atLimit + "]"
        #expect(throws: Never.self) { try Self.parse(atLimit) }
        #expect(throws: JSONParseError.self) { try Self.parse(overLimit) }
        // A generous limit does not overflow the parser's stack: it is iterative. (The value is
        // unwrapped level by level so that releasing it does not recurse either.)
        let deep = String(repeating: "[", count: 20_000) + String(repeating: "]", count: 20_000)
        var value = try Self.parse(deep, maxDepth: 20_000)
        var levels = 0
        while case .array(let elements) = value, let first = elements.first {
            value = first
            levels += 1
        }
        #expect(levels == 19_999)
    }

    @Test func objectKeepsMemberOrderAndLastDuplicateWinsOnLookup() throws {
        let object = try #require(try Self.parse(#"{"z":1,"a":2,"z":3}"#).objectValue)
        #expect(object.keys == ["z", "a", "z"])
        #expect(object["z"] == .number(3))
        #expect(object["a"] == .number(2))
        #expect(object["missing"] == nil)
    }

    @Test func accessorsReturnValuesOnlyForTheirOwnType() throws {
        let object = try #require(try Self.parse(#"""
            {"s":"x","b":true,"i":42,"neg":-7,"f":1.5,"big":1e300,"a":[1],"o":{},"n":null}
            """#).objectValue)
        #expect(object["s"]?.stringValue == "x")
        #expect(object["b"]?.boolValue == true)
        #expect(object["i"]?.intValue == 42)
        #expect(object["neg"]?.intValue == -7)
        #expect(object["f"]?.intValue == nil)
        #expect(object["f"]?.doubleValue == 1.5)
        #expect(object["big"]?.intValue == nil)
        #expect(object["a"]?.arrayValue == [.number(1)])
        #expect(object["o"]?.objectValue == JSONObject())
        #expect(object["n"]?.isNull == true)
        #expect(object["s"]?.intValue == nil)
        #expect(object["i"]?.stringValue == nil)
        #expect(object["b"]?.objectValue == nil)
        #expect(object["n"]?.boolValue == nil)
        #expect(object["o"]?.arrayValue == nil)
    }

    @Test func requestBodyShapeDecodesEveryIdentifier() throws {
        let identifiers = (0..<1000).map { "9F983DBA-EC35-42B8-8773-B597CF78\(String($0 + 1000, radix: 16).uppercased())/L0/001" }
        let body = "{\"localIdentifiers\":[" + identifiers.map { "\"\($0)\"" }.joined(separator: ",") + "]}"
        let decoded = try Self.parse(body).objectValue?["localIdentifiers"]?.arrayValue?.compactMap(\.stringValue)
        #expect(decoded == identifiers)
    }

    /// Array elements are held in fixed-size segments while parsing: nested arrays that start and
    /// end on either side of a segment boundary must come out whole and in order, and a parse
    /// failing with many elements pending must release them (no crash, no stale values).
    @Test(arguments: [0, 1, 20, 31, 32, 33, 63, 64, 65, 200])
    func nestedArraysAcrossSegmentBoundariesKeepEveryElementInOrder(count: Int) throws {
        func element(_ index: Int) -> (text: String, value: JSONValue) {
            switch index % 4 {
            case 0: return ("\"item \(index)\"", .string("item \(index)"))
            case 1: return ("\(index)", .number(Double(index)))
            case 2:
                let inner = (0..<(index % 70)).map { "\"in\($0)\"" }.joined(separator: ",")
                return ("[\(inner)]", .array((0..<(index % 70)).map { .string("in\($0)") }))
            default:
                return ("{\"k\":[\(index),[]]}", .object(JSONObject([(key: "k", value: .array([.number(Double(index)), .array([])]))])))
            }
        }
        let elements = (0..<count).map(element)
        let text = "[" + elements.map(\.text).joined(separator: ",") + "]"
        #expect(try Self.parse(text) == .array(elements.map(\.value)))
        #expect(try Self.parse("[" + text + ", " + text + "]") == .array([.array(elements.map(\.value)), .array(elements.map(\.value))]))
        // Cut off before the end: every prefix that leaves arrays open must fail cleanly.
        let bytes = Array(text.utf8)
        for cut in stride(from: 1, to: bytes.count, by: max(1, bytes.count / 40)) {
            #expect(throws: JSONParseError.self) { try JSONValue.parse(bytes[0..<cut]) }
        }
    }

    @Test func errorDescriptionNamesMessageAndOffset() {
        let error = JSONParseError(message: "unterminated string", offset: 7)
        #expect(error.description == "unterminated string at byte 7")
    }
}

/// The element cap: array items and object members at any depth are counted while
/// parsing; one more than the cap is `tooManyElements`, exactly the cap parses.
@Suite struct JSONElementCapTests {
    @Test(arguments: [
        ("[1,2,3]", 3, true), ("[1,2,3]", 2, false),
        (#"{"a":1,"b":[1,2]}"#, 4, true), (#"{"a":1,"b":[1,2]}"#, 3, false),
        (#"["a","b","c","d"]"#, 4, true), (#"["a","b","c","d"]"#, 3, false),   // the string fast path counts too
        ("[[[]]]", 2, true), ("[[[]]]", 1, false),
        ("1", 0, true),
    ])
    func elementsAreCountedAtEveryDepth(_ text: String, _ cap: Int, _ parses: Bool) {
        do {
            _ = try JSONValue.parse(Array(text.utf8), maxElements: cap)
            #expect(parses)
        } catch {
            #expect(!parses && error.tooManyElements)
        }
    }
}
