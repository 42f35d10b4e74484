import ConcordJSON
import FuzzSupport

// JSONValue.parse on arbitrary bytes. Besides "no crash, no sanitizer report", each input checks:
//  - every entry point agrees (array, raw buffer, a non-contiguous-looking slice, maxElements: .max);
//  - an error's offset lies within the input;
//  - a parsed value written with JSONWriter parses back equal, and writing that gives the same
//    bytes (the writer's output is a fixed point);
//  - the limits are exact: a value of depth d parses with maxDepth d and not d - 1; a value of
//    n elements parses with maxElements n and fails with tooManyElements at n - 1;
//  - a manifest read element-wise (`ObjectArraysScanner`, then each element parsed alone, as
//    ConcordApp's `Codec.snapshot` does) is what the whole-body parser reads: when every element
//    found parses, so does the body, to an object of exactly those members, each once, each the
//    array of exactly those elements, with the same element count.

func outcome(_ parse: () throws(JSONParseError) -> JSONValue) -> Result<JSONValue, JSONParseError> {
    do throws(JSONParseError) { return .success(try parse()) } catch { return .failure(error) }
}

func depthAndElements(_ v: JSONValue) -> (depth: Int, elements: Int) {
    switch v {
    case .null, .bool, .number, .string: return (0, 0)
    case .array(let items):
        var depth = 0, elements = items.count
        for item in items { let (d, e) = depthAndElements(item); depth = max(depth, d); elements += e }
        return (depth + 1, elements)
    case .object(let o):
        var depth = 0, elements = o.members.count
        for m in o.members { let (d, e) = depthAndElements(m.value); depth = max(depth, d); elements += e }
        return (depth + 1, elements)
    }
}

func written(_ v: JSONValue) -> [UInt8] {
    var w = JSONWriter()
    w.value(v)
    return w.bytes
}

let manifestNames = ["assets", "assetCollections", "collectionLists"]

func checkManifestReading(_ input: [UInt8], _ whole: Result<JSONValue, JSONParseError>) {
    guard let parts = ObjectArraysScanner.scan(input, names: manifestNames) else { return }
    var elements: [[JSONValue]?] = []
    var count = parts.count { $0 != nil }
    for ranges in parts {
        guard let ranges else { elements.append(nil); continue }
        var values: [JSONValue] = []
        for range in ranges {
            guard let value = try? JSONValue.parse(Array(input[range])) else { return }   // the body is then read whole
            values.append(value)
            count += 1 + value.elementCount
        }
        elements.append(values)
    }
    guard case .success(.object(let o)) = whole else { propertyFailed("elements read alone, but the body does not parse to an object: \(describe(input))") }
    check(o.members.count == parts.count { $0 != nil }, "members differ: \(describe(input))")
    for member in o.members {
        guard let k = manifestNames.firstIndex(of: member.key), let values = elements[k] else { propertyFailed("member \(member.key) not found element-wise: \(describe(input))") }
        check(member.value == .array(values), "member \(member.key) read otherwise element-wise: \(describe(input))")
        check(values.allSatisfy { if case .object = $0 { true } else { false } }, "an element that is not an object: \(describe(input))")
    }
    check(count == JSONValue.object(o).elementCount, "element counts differ: \(describe(input))")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = inputBytes(data, size)
    let fromArray = outcome { () throws(JSONParseError) in try JSONValue.parse(input) }
    let fromRaw = input.withUnsafeBytes { raw in outcome { () throws(JSONParseError) in try JSONValue.parse(raw) } }
    let fromSlice = outcome { () throws(JSONParseError) in try JSONValue.parse(input[...]) }
    let bounded = outcome { () throws(JSONParseError) in try JSONValue.parse(input, maxElements: .max) }
    check(fromArray == fromRaw && fromArray == fromSlice && fromArray == bounded, "entry points disagree")
    checkManifestReading(input, fromArray)

    switch fromArray {
    case .failure(let error):
        check(error.offset >= 0 && error.offset <= input.count, "error offset \(error.offset) outside \(input.count) bytes")
    case .success(let value):
        let out = written(value)
        switch outcome({ () throws(JSONParseError) in try JSONValue.parse(out) }) {
        case .failure(let error):
            propertyFailed("written value does not parse: \(error) in \(describe(out))")
        case .success(let again):
            check(again == value, "written value parses to another value: \(describe(out))")
            let out2 = written(again)
            check(out2 == out, "writing is not a fixed point: \(describe(out)) vs \(describe(out2))")
        }
        let (depth, elements) = depthAndElements(value)
        check(depth <= 64, "depth \(depth) over the default maxDepth")
        check((try? JSONValue.parse(input, maxDepth: depth)) == value, "depth \(depth) refused at maxDepth \(depth)")
        if depth > 0 {
            check((try? JSONValue.parse(input, maxDepth: depth - 1)) == nil, "depth \(depth) accepted at maxDepth \(depth - 1)")
        }
        check((try? JSONValue.parse(input, maxElements: elements)) == value, "\(elements) elements refused at maxElements \(elements)")
        if elements > 0 {
            switch outcome({ () throws(JSONParseError) in try JSONValue.parse(input, maxElements: elements - 1) }) {
            case .success: propertyFailed("\(elements) elements accepted at maxElements \(elements - 1)")
            case .failure(let error): check(error.tooManyElements, "not tooManyElements at maxElements \(elements - 1): \(error)")
            }
        }
    }
    return 0
}

// The entry point SwiftPM links as `main` (see FuzzSupport's runFuzzer).
@_cdecl("fuzz_json_main")
func fuzzMain(_ argc: Int32, _ argv: FuzzArguments) -> Int32 { runFuzzer(argc, argv, testOneInput: fuzzJSON) }
