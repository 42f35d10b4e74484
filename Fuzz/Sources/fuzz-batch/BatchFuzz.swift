import ConcordDomain
import ConcordJSON
import FuzzSupport

// The in-place identifier batch: what the mapping routes run on a request body
// (ConcordApp's `Codec.identifierBatchAndBody`, internal to the app, repeated here step for
// step): `PlainStringArrayScanner.scan` with the route's member name, the span closure the
// route uses, then `IdentifierBatch(bytes:spans:)`; any other body goes to `JSONValue.parse`.
// Besides "no crash, no sanitizer report", each input checks, for both routes' member names:
//  - whatever is read in place is what the full parser reads: the body is `{"<member>": [...]}`
//    with exactly that one member, an array of as many strings, byte for byte the spans' bytes,
//    never more than maxCount, and the batch is built (plain ASCII);
//  - the batch's fast validation (`firstInvalidLocalIdentifier`, plain ASCII) answers as the
//    per-string one does;
//  - the plain form is taken: a body the full parser reads as that one member holding plain
//    printable-ASCII strings, written with no escape and no byte outside ASCII, is read in place
//    (otherwise every device batch would silently take the slow path).
//  - an identifier is written the same by `JSONWriter.string(_:)` and `string(utf8:)` (the
//    answer's two ways), and a plain one as its bytes between quotes (the plain answer's copy).
// And on the input as one identifier: `Identifiers.isValidLocalIdentifier` (SWAR fast path)
// and `IdentifierBatch.isPlainASCII` agree with a byte-by-byte reading of the API.

let maxCount = 8

func plainASCII(_ bytes: some Sequence<UInt8>) -> Bool {
    bytes.allSatisfy { $0 >= 0x20 && $0 <= 0x7E && $0 != 0x22 && $0 != 0x5C }
}

/// The API read literally: 1–255 bytes of UTF-8, no C0, DEL or C1 control character.
func referenceValidLocal(_ s: String) -> Bool {
    let n = s.utf8.count
    return n >= 1 && n <= 255 && !s.unicodeScalars.contains { $0.value < 0x20 || ($0.value >= 0x7F && $0.value <= 0x9F) }
}

func checkRoute(_ body: [UInt8], member: StaticString) {
    let name = member.description
    let spans = PlainStringArrayScanner.scan(body, member: member, maxCount: maxCount, span: { start, length in
        IdentifierBatch.Span(start: UInt32(truncatingIfNeeded: start), length: UInt32(truncatingIfNeeded: length))
    })
    let parsed = try? JSONValue.parse(body)
    // The full parser's reading, when the body is exactly {"<member>": [strings]}.
    var strings: [String]?
    if case .object(let o)? = parsed, o.members.count == 1, o.members[0].key == name, case .array(let items) = o.members[0].value {
        var all: [String] = []
        for item in items {
            guard case .string(let s) = item else { all = []; strings = nil; break }
            all.append(s)
        }
        if all.count == items.count { strings = all }
    }
    if let spans {
        guard let strings else { propertyFailed("read in place, but the parser reads \(parsed.map { "\($0)" } ?? "an error")") }
        check(spans.count == strings.count, "\(spans.count) spans, \(strings.count) strings")
        check(spans.count <= maxCount, "\(spans.count) spans over maxCount \(maxCount)")
        for (span, s) in zip(spans, strings) {
            let start = Int(span.start), end = Int(span.start) + Int(span.length)
            check(end <= body.count, "span \(start)..<\(end) outside \(body.count) bytes")
            check(Array(body[start..<end]) == Array(s.utf8), "span \(describe(body[start..<end])) is not \(s)")
        }
        guard let batch = IdentifierBatch(bytes: body, spans: spans) else { propertyFailed("scanned spans refused by IdentifierBatch") }
        check(batch.isPlainASCII && batch.count == strings.count && batch.strings == strings, "batch differs from the strings")
        let reference = strings.firstIndex { !referenceValidLocal($0) }
        check(batch.firstInvalidLocalIdentifier() == reference, "firstInvalidLocalIdentifier \(String(describing: batch.firstInvalidLocalIdentifier())) vs \(String(describing: reference))")
    } else if let strings, strings.count <= maxCount, strings.allSatisfy({ plainASCII($0.utf8) }),
              body.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E && $0 != 0x5C || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
        propertyFailed("plain body not read in place: \(describe(body))")
    }
    // The slow path's batch (what the route builds from parsed strings) validates the same way.
    if let strings {
        for s in strings { checkWritten(s) }
        let batch = IdentifierBatch(strings)
        check(batch.firstInvalidLocalIdentifier() == strings.firstIndex { !referenceValidLocal($0) }, "slow-path batch validation differs")
    }
}

/// The answer's ways of writing an identifier agree (LocalToCloudBody.written and .plain).
func checkWritten(_ s: String) {
    var a = JSONWriter(), b = JSONWriter()
    a.string(s)
    var copy = s
    copy.withUTF8 { b.string(utf8: $0) }
    check(a.bytes == b.bytes, "string and string(utf8:) write \(describe(a.bytes)) and \(describe(b.bytes))")
    if plainASCII(s.utf8) {
        check(a.bytes == [0x22] + Array(s.utf8) + [0x22], "a plain identifier written as \(describe(a.bytes))")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBatch(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = inputBytes(data, size)
    checkRoute(input, member: "localIdentifiers")
    checkRoute(input, member: "cloudIdentifiers")

    // The input as one identifier.
    let s = String(decoding: input, as: UTF8.self)
    check(Identifiers.isValidLocalIdentifier(s) == referenceValidLocal(s), "isValidLocalIdentifier(\(describe(s.utf8)))")
    check(IdentifierBatch([s]).isPlainASCII == plainASCII(s.utf8), "isPlainASCII(\(describe(s.utf8)))")
    checkWritten(s)
    let batch = IdentifierBatch([s, s])
    check(batch.firstInvalidLocalIdentifier() == (referenceValidLocal(s) ? nil : 0), "firstInvalidLocalIdentifier of one identifier")
    return 0
}

// The entry point SwiftPM links as `main` (see FuzzSupport's runFuzzer).
@_cdecl("fuzz_batch_main")
func fuzzMain(_ argc: Int32, _ argv: FuzzArguments) -> Int32 { runFuzzer(argc, argv, testOneInput: fuzzBatch) }
