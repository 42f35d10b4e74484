import CFuzzer
import ConcordJSON
import FuzzSupport

// JSONValue.parse on arbitrary bytes. Besides "no crash, no sanitizer report", each input checks:
//  - every entry point agrees (array, raw buffer, a non-contiguous-looking slice, maxElements: .max);
//  - an error's offset lies within the input;
//  - a parsed value written with JSONWriter parses back equal, and writing that gives the same
//    bytes (the writer's output is a fixed point);
//  - the limits are exact: a value of depth d parses with maxDepth d and not d - 1; a value of
//    n elements parses with maxElements n and fails with tooManyElements at n - 1.

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

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = inputBytes(data, size)
    let fromArray = outcome { () throws(JSONParseError) in try JSONValue.parse(input) }
    let fromRaw = input.withUnsafeBytes { raw in outcome { () throws(JSONParseError) in try JSONValue.parse(raw) } }
    let fromSlice = outcome { () throws(JSONParseError) in try JSONValue.parse(input[...]) }
    let bounded = outcome { () throws(JSONParseError) in try JSONValue.parse(input, maxElements: .max) }
    check(fromArray == fromRaw && fromArray == fromSlice && fromArray == bounded, "entry points disagree")

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

// The entry point SwiftPM links as `main` on Linux (`--defsym main=<module>_main`): libFuzzer's
// driver with this file's LLVMFuzzerTestOneInput.
@_cdecl("fuzz_json_main")
func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzJSON(data, size) }
}
