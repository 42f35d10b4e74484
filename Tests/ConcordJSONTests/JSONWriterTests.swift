import ConcordJSON
import ConcordTestSupport
import Foundation
import Testing

/// Table-driven checks of the writer's exact output, and round-trips through the reader.
@Suite struct JSONWriterTests {
    static func written(_ build: (inout JSONWriter) -> Void) -> String {
        var writer = JSONWriter()
        build(&writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    static let stringEscapes: [(String, String)] = [
        ("", #""""#),
        ("plain", #""plain""#),
        ("quote\"inside", #""quote\"inside""#),
        ("back\\slash", #""back\\slash""#),
        ("slash/stays", #""slash/stays""#),
        ("\u{8}\u{C}\n\r\t", #""\b\f\n\r\t""#),
        ("\u{0}", #""\u0000""#),
        ("\u{1}\u{1F}", #""\u0001\u001f""#),
        ("\u{7F}", "\"\u{7F}\""),
        ("é€😀", "\"é€😀\""),
        ("\u{2028}", "\"\u{2028}\""),
        ("mixed \"é\"\n\u{1B}[0m end", #""mixed \"é\"\n\u001b[0m end""#),
    ]

    @Test(arguments: stringEscapes)
    func stringIsEscapedExactly(input: String, expected: String) throws {
        #expect(Self.written { $0.string(input) } == expected)
        // The escaped form must read back as the original.
        #expect(try JSONValue.parse(Array(expected.utf8)) == .string(input))
    }

    @Test func escapesAreFoundAtEveryOffsetOfTheWordScan() {
        for padding in 0..<17 {
            let prefix = String(repeating: "a", count: padding)
            let input = prefix + "\"" + prefix + "\\" + prefix + "\u{1}" + prefix + "é" + prefix
            let expected = "\"" + prefix + "\\\"" + prefix + "\\\\" + prefix + "\\u0001" + prefix + "é" + prefix + "\""
            #expect(Self.written { $0.string(input) } == expected, "padding \(padding)")
        }
    }

    static let numbers: [(JSONValue, String)] = [
        (.number(0), "0"),
        (.number(-0.0), "-0"),
        (.number(1), "1"),
        (.number(-42), "-42"),
        (.number(1.5), "1.5"),
        (.number(0.1), "0.1"),
        (.number(1e-5), "1e-05"),
        (.number(123456789012), "123456789012"),
        (.number(9_007_199_254_740_991), "9007199254740991"),
        (.number(9_007_199_254_740_992), "9007199254740992"),
        (.number(1e18), "1000000000000000000"),
        (.number(-9.2233720368547748e18), "-9223372036854774784"),
        (.number(9.223372036854775808e18), "9.223372036854776e+18"),
        (.number(1e20), "1e+20"),
        (.number(1e300), "1e+300"),
        (.number(Double.leastNonzeroMagnitude), "5e-324"),
        (.number(.nan), "null"),
        (.number(.infinity), "null"),
        (.number(-.infinity), "null"),
    ]

    @Test(arguments: numbers)
    func doubleIsWrittenAsValidJSON(value: JSONValue, expected: String) {
        #expect(Self.written { $0.value(value) } == expected)
    }

    static let integers: [(Int, String)] = [
        (0, "0"), (7, "7"), (-7, "-7"), (1_000_000, "1000000"),
        (Int.max, "9223372036854775807"), (Int.min, "-9223372036854775808"),
    ]

    @Test(arguments: integers)
    func intIsWrittenWithoutExponent(value: Int, expected: String) {
        #expect(Self.written { $0.int(value) } == expected)
    }

    @Test func commasAreInsertedBetweenMembersAndElementsAtEveryLevel() {
        let output = Self.written { writer in
            writer.beginObject()
            writer.key("a")
            writer.int(1)
            writer.key("list")
            writer.beginArray()
            writer.bool(true)
            writer.null()
            writer.beginObject()
            writer.endObject()
            writer.beginArray()
            writer.endArray()
            writer.beginObject()
            writer.key("x")
            writer.string("y")
            writer.key("z")
            writer.double(2.5)
            writer.endObject()
            writer.endArray()
            writer.key("after")
            writer.bool(false)
            writer.endObject()
            writer.beginArray()  // a second top-level value is separated too (e.g. JSON lines callers reset bytes)
            writer.endArray()
        }
        #expect(output == #"{"a":1,"list":[true,null,{},[],{"x":"y","z":2.5}],"after":false},[]"#)
    }

    /// Plain keys and plain ASCII values are copied as they are, with commas like every other call.
    @Test func plainKeysAndValuesAreCopiedVerbatim() {
        let value: [UInt8] = Array("4A3B0E8C-0000-4000-8000-00000000000A:001:abc_-XYZ".utf8)
        let output = Self.written { writer in
            writer.beginArray()
            writer.beginObject()
            writer.key(plain: "localIdentifier")
            writer.string("a\"b")
            value.withUnsafeBufferPointer { bytes in
                writer.key(plain: "cloudIdentifier")
                writer.string(plainASCII: bytes)
            }
            writer.endObject()
            value.withUnsafeBufferPointer { writer.string(plainASCII: $0) }
            writer.endArray()
        }
        #expect(output == #"[{"localIdentifier":"a\"b","cloudIdentifier":"4A3B0E8C-0000-4000-8000-00000000000A:001:abc_-XYZ"},"4A3B0E8C-0000-4000-8000-00000000000A:001:abc_-XYZ"]"#)
    }

    @Test func valueWritesMembersInOrderIncludingDuplicates() {
        let object = JSONValue.object(JSONObject([
            (key: "z", value: .number(1)), (key: "a", value: .array([.string("s"), .null])), (key: "z", value: .bool(true)),
        ]))
        #expect(Self.written { $0.value(object) } == #"{"z":1,"a":["s",null],"z":true}"#)
    }

    @Test func randomDoublesRoundTripBitForBit() throws {
        var generator = SeededGenerator(state: 0x5EED)
        for _ in 0..<20_000 {
            let value = Double(bitPattern: generator.next())
            guard value.isFinite else { continue }
            var writer = JSONWriter()
            writer.double(value)
            let parsed = try JSONValue.parse(writer.bytes)
            guard case .number(let back) = parsed else {
                Issue.record("\(value) did not read back as a number")
                continue
            }
            #expect(back.bitPattern == value.bitPattern || (back == 0 && value == 0), "\(value)")
        }
        // Plus values near the fast/slow path edges of the reader.
        for value in [0.1, 0.2, 0.3, 1e22, 1e23, 9007199254740993.0, 123456.789e-10, 2.2250738585072014e-308, 1.7976931348623157e308] {
            var writer = JSONWriter()
            writer.double(value)
            #expect(try JSONValue.parse(writer.bytes) == .number(value), "\(value)")
        }
    }

    @Test func randomStringsRoundTrip() throws {
        var generator = SeededGenerator(state: 42)
        let pool: [Unicode.Scalar] = (0..<0x80).compactMap(Unicode.Scalar.init)
            + ["é", "ß", "€", "\u{FFFF}", "\u{10000}", "😀", "\u{10FFFF}", "\u{2028}"]
        for _ in 0..<2_000 {
            var scalars = String.UnicodeScalarView()
            for _ in 0..<Int(generator.next() % 40) {
                scalars.append(pool[Int(generator.next() % UInt64(pool.count))])
            }
            let string = String(scalars)
            var writer = JSONWriter()
            writer.beginArray()
            writer.string(string)
            writer.endArray()
            #expect(try JSONValue.parse(writer.bytes) == .array([.string(string)]), "\(string.debugDescription)")
        }
    }

    @Test(.needsJSONTestSuite) func everyAcceptedJSONTestSuiteDocumentRoundTrips() throws {
        let directory = try JSONTestSuiteData.requireDirectory()
        var checked = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasSuffix(".json") {
            let bytes = try [UInt8](Data(contentsOf: directory.appendingPathComponent(name)))
            guard let value = try? JSONValue.parse(bytes) else { continue }
            var writer = JSONWriter()
            writer.value(value)
            #expect(try JSONValue.parse(writer.bytes) == value, "\(name)")
            checked += 1
        }
        #expect(checked >= 95)
    }

    @Test func mappingResponseShapeReadsBackIntact() throws {
        let mappings = (0..<1000).map { index in
            (local: "9F983DBA-EC35-42B8-8773-B597CF782EDD/L0/\(index)",
             cloud: "A1B2C3D4-0000-4000-8000-00000000000\(index % 10):001:abcdefghijklmnopqrstuvwxyzABCDEFGHIJ-_01234")
        }
        var writer = JSONWriter(capacity: 160 * 1024)
        writer.beginObject()
        writer.key("mappings")
        writer.beginArray()
        for mapping in mappings {
            writer.beginObject()
            writer.key("localIdentifier")
            writer.string(mapping.local)
            writer.key("cloudIdentifier")
            writer.string(mapping.cloud)
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()

        let array = try #require(try JSONValue.parse(writer.bytes).objectValue?["mappings"]?.arrayValue)
        #expect(array.count == mappings.count)
        for (element, mapping) in zip(array, mappings) {
            #expect(element.objectValue?["localIdentifier"]?.stringValue == mapping.local)
            #expect(element.objectValue?["cloudIdentifier"]?.stringValue == mapping.cloud)
        }
        // An independent reader (Foundation) accepts the output too.
        let foundation = try JSONSerialization.jsonObject(with: Data(writer.bytes)) as? [String: Any]
        #expect((foundation?["mappings"] as? [Any])?.count == 1000)
    }
}
