@testable import ConcordDomain
import Foundation
import Testing

/// A mapping batch as one buffer of spans.
struct IdentifierBatchTests {
    static let cases: [(ids: [String], plain: Bool, firstInvalid: Int?)] = [
        ([], true, nil),
        (["ABC/L0/001", "x"], true, nil),
        ([" ~!#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}"], true, nil),
        (["ok", ""], true, 1),
        (["ok", String(repeating: "y", count: 255), String(repeating: "y", count: 256)], true, 2),
        (["caf\u{E9}"], false, nil),                 // not ASCII: valid, but written escaped-or-not by JSONWriter
        (["a\"b", "a\\b"], false, nil),
        (["ok", "tab\there"], false, 1),             // control characters
        (["del\u{7F}"], false, 0),
        (["c1\u{85}"], false, 0),
        (["twelve bytes", "then\u{1}"], false, 1),   // past the 8-byte words
    ]

    @Test(arguments: cases.indices) func spansPlainnessAndValidity(_ i: Int) {
        let (ids, plain, firstInvalid) = Self.cases[i]
        let batch = IdentifierBatch(ids)
        #expect(batch.count == ids.count)
        #expect(batch.strings == ids)
        #expect(batch.isPlainASCII == plain)
        #expect(batch.firstInvalidLocalIdentifier() == firstInvalid)
        for (n, id) in ids.enumerated() {
            #expect(batch.withIdentifier(n) { Array($0) } == Array(id.utf8))
        }
        // Read in place from someone else's bytes: only plain batches are taken.
        #expect((IdentifierBatch(bytes: batch.bytes, spans: batch.spans) != nil) == plain)
    }

    /// `isPlainASCII` 16 and 8 bytes a step: every byte value at every position of runs up to
    /// 40 bytes agrees with the byte-by-byte rule.
    @Test func plainnessOfEveryByteInEveryLane() {
        func plain(_ c: UInt8) -> Bool { c >= 0x20 && c <= 0x7E && c != 0x22 && c != 0x5C }
        for length in 1...40 {
            var run = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            #expect(run.withUnsafeBufferPointer { IdentifierBatch.isPlainASCII($0) })
            for at in 0..<length {
                for c in 0...255 {
                    run[at] = UInt8(c)
                    if run.withUnsafeBufferPointer({ IdentifierBatch.isPlainASCII($0) }) != plain(UInt8(c)) {
                        Issue.record("length \(length), byte \(c) at \(at)")
                    }
                }
                run[at] = UInt8(ascii: "a")
            }
        }
    }

    @Test func spansOutsideTheBytesAreRefused() {
        let bytes = Array("abcdef".utf8)
        #expect(IdentifierBatch(bytes: bytes, spans: [.init(start: 2, length: 4)])?.strings == ["cdef"])
        #expect(IdentifierBatch(bytes: bytes, spans: [.init(start: 2, length: 5)]) == nil)
        #expect(IdentifierBatch(bytes: bytes, spans: [.init(start: UInt32.max, length: 2)]) == nil)
        // Spans already found plain (the scanner's): the bounds are still checked.
        #expect(IdentifierBatch(bytes: bytes, plainASCIISpans: [.init(start: 2, length: 4)])?.strings == ["cdef"])
        #expect(IdentifierBatch(bytes: bytes, plainASCIISpans: [.init(start: 2, length: 5)]) == nil)
        #expect(IdentifierBatch(bytes: bytes, plainASCIISpans: [.init(start: UInt32.max, length: 2)]) == nil)
    }
}
