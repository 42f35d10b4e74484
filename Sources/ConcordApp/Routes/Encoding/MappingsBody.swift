import ConcordBytes
import ConcordDomain
import ConcordHTTP
import ConcordJSON

/// The body of a local → cloud answer, two ways with the same bytes (a table test holds them equal).
enum LocalToCloudBody {
    /// Each answer a run of the cloud identifiers' bytes, or the not-found error.
    static func answers(_ answers: CloudIdentifierAnswers) -> MappingsBody.Answers {
        MappingsBody.Answers(pieces: answers.answers.mapOthers { _ in 0 }, errors: [answers.notFound])
    }

    static func written(_ ids: IdentifierBatch, _ answers: CloudIdentifierAnswers) -> [UInt8] {
        MappingsBody.written(ids, asked: "localIdentifier", answered: "cloudIdentifier", Self.answers(answers))
    }

    /// For a plain-ASCII batch (the usual one): cloud identifiers never need escaping.
    static func plain(_ ids: IdentifierBatch, _ answers: CloudIdentifierAnswers) -> [UInt8] {
        MappingsBody.plain(ids, asked: "localIdentifier", answered: "cloudIdentifier", Self.answers(answers))
    }
}

/// `{"mappings":[{"<asked>":"<id>","<answered>":"<answer>"} or {"<asked>":"<id>","error":{…}}, …]}`,
/// the answer of both mapping directions, two ways with the same bytes.
enum MappingsBody {
    /// Per item its answer's bytes, or the number of its error in `errors`.
    struct Answers {
        var pieces: AnswerBuffer<Int>
        var errors: [ItemError]
    }

    /// Through `JSONWriter`, escaping what needs it: for any batch.
    static func written(_ ids: IdentifierBatch, asked: StaticString, answered: StaticString, _ answers: Answers) -> [UInt8] {
        var w = JSONWriter(capacity: 64 + 160 * ids.count)
        w.beginObject()
        w.key(plain: "mappings")
        w.beginArray()
        answers.pieces.bytes.withUnsafeBufferPointer { bytes in
            for (i, piece) in answers.pieces.enumerated() {
                w.beginObject()
                w.key(plain: asked)
                ids.withIdentifier(i) { ids.isPlainASCII ? w.string(plainASCII: $0) : w.string(utf8: $0) }
                switch piece {
                case .bytes(let range): w.key(plain: answered); w.string(utf8: UnsafeBufferPointer(rebasing: bytes[range]))
                case .other(let e): w.key(plain: "error"); Codec.write(answers.errors[e], into: &w)
                }
                w.endObject()
            }
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }

    /// For a plain-ASCII batch whose answers are plain ASCII too (`IdentifierBatch.isPlainASCII`):
    /// no byte needs escaping, so the body is copies of byte runs into a buffer of exactly its
    /// size, in one pass, each error rendered once.
    ///
    /// Every run is copied inline, a word at a time (`ByteRuns.copy`): most runs are 2 to 90
    /// bytes, and a call into `memmove` per run (five or so per item) cost more than the copying.
    static func plain(_ ids: IdentifierBatch, asked: StaticString, answered: StaticString, _ answers: Answers) -> [UInt8] {
        precondition(ids.isPlainASCII, "a batch with identifiers to escape goes through written(_:asked:answered:_:)")
        // Each error's bytes (`"error":{…}`) once, all in one buffer written by one writer.
        var errorWriter = JSONWriter(capacity: answers.errors.count * 192)
        let errorRanges = answers.errors.map { error -> Range<Int> in
            let start = errorWriter.bytes.count
            errorWriter.beginFragment()
            errorWriter.key(plain: "error")
            Codec.write(error, into: &errorWriter)
            return start..<errorWriter.bytes.count
        }
        let errorBytes = errorWriter.bytes
        // The fixed runs around each item, spelled once:
        // ,{"<asked>":"  <id>  ","<answered>":"  <answer>  "}      or      ,{"<asked>":"  <id>  ",  error  }
        // (the first item's opening without its comma).
        let fixed = ByteRuns.spell(["{\"mappings\":[", ",{\"", asked, "\":\"", "\",\"", answered, "\":\"", "\"}", "\",", "}", "]}"])
        let head = fixed.ranges[0], open = fixed.ranges[1].lowerBound..<fixed.ranges[3].upperBound
        let between = fixed.ranges[4].lowerBound..<fixed.ranges[6].upperBound, close = fixed.ranges[7]
        let errorOpen = fixed.ranges[8], errorClose = fixed.ranges[9], tail = fixed.ranges[10]
        let count = ids.count
        // Plain pointers to the spans and the pieces for the two passes: no array access (nor its
        // reference counting) per item.
        return ids.spans.withUnsafeBufferPointer { spans in
          answers.pieces.withAnswers { pieces in
            var total = head.count + tail.count + max(0, count - 1)
            for i in 0..<count {
                total += open.count - 1 + Int(spans[i].length)
                switch pieces[i] {
                case .bytes(let range): total += between.count + range.count + close.count
                case .other(let e): total += errorOpen.count + errorRanges[e].count + errorClose.count
                }
            }
            return [UInt8](unsafeUninitializedCapacity: total) { out, written in
                var at = out.baseAddress!
                fixed.bytes.withUnsafeBufferPointer { fixedBytes in
                  ids.bytes.withUnsafeBufferPointer { idBytes in
                    answers.pieces.bytes.withUnsafeBufferPointer { answerBytes in
                      errorBytes.withUnsafeBufferPointer { errorBytes in
                        let f = fixedBytes.baseAddress!
                        @inline(__always) func put(_ r: Range<Int>) { ByteRuns.copy(f + r.lowerBound, r.count, to: &at) }
                        put(head)
                        for i in 0..<count {
                            // The comma before every item but the first is the opening's first byte.
                            ByteRuns.copy(f + open.lowerBound + (i == 0 ? 1 : 0), open.count - (i == 0 ? 1 : 0), to: &at)
                            let span = spans[i]
                            ByteRuns.copy(idBytes.baseAddress! + Int(span.start), Int(span.length), to: &at)
                            switch pieces[i] {
                            case .bytes(let range):
                                put(between)
                                ByteRuns.copy(answerBytes.baseAddress! + range.lowerBound, range.count, to: &at)
                                put(close)
                            case .other(let e):
                                put(errorOpen)
                                ByteRuns.copy(errorBytes.baseAddress! + errorRanges[e].lowerBound, errorRanges[e].count, to: &at)
                                put(errorClose)
                            }
                        }
                        put(tail)
                      }
                    }
                  }
                }
                written = at - out.baseAddress!
                precondition(written == total, "the answer's size was counted before writing it")
            }
          }
        }
    }
}

/// Short runs of bytes copied into an answer without a call per run.
enum ByteRuns {
    /// Static strings in one buffer, and where each lies in it.
    static func spell(_ parts: [StaticString]) -> (bytes: [UInt8], ranges: [Range<Int>]) {
        var bytes: [UInt8] = []
        var ranges: [Range<Int>] = []
        for part in parts {
            let start = bytes.count
            bytes.append(contentsOf: UnsafeBufferPointer(start: part.utf8Start, count: part.utf8CodeUnitCount))
            ranges.append(start..<bytes.count)
        }
        return (bytes, ranges)
    }

    /// Copies `count` bytes from `from` to `at`, and moves `at` past them. A word at a time, the
    /// last word overlapping the one before it (it rewrites bytes already written with the same
    /// values); runs shorter than a word byte by byte. Reads and writes nothing outside the two runs.
    @inline(__always)
    static func copy(_ from: UnsafePointer<UInt8>, _ count: Int, to at: inout UnsafeMutablePointer<UInt8>) {
        let src = UnsafeRawPointer(from), dst = UnsafeMutableRawPointer(at)
        if count >= 8 {
            var k = 0
            while k + 8 <= count {
                dst.storeBytes(of: src.loadUnaligned(fromByteOffset: k, as: UInt64.self), toByteOffset: k, as: UInt64.self)
                k += 8
            }
            if k < count {
                dst.storeBytes(of: src.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self), toByteOffset: count - 8, as: UInt64.self)
            }
        } else {
            if count >= 4 {
                dst.storeBytes(of: src.loadUnaligned(as: UInt32.self), as: UInt32.self)
                dst.storeBytes(of: src.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self), toByteOffset: count - 4, as: UInt32.self)
            } else {
                for k in 0..<count { at[k] = from[k] }
            }
        }
        at += count
    }
}

/// The body of a cloud → local answer, two ways with the same bytes (a table test holds them equal).
enum CloudToLocalBody {
    /// The answers as they are: each a run of the local identifiers' bytes, or the number of its error.
    static func answers(_ answers: LocalIdentifierAnswers) -> MappingsBody.Answers {
        MappingsBody.Answers(pieces: answers.answers, errors: answers.errors)
    }

    static func written(_ ids: IdentifierBatch, _ answers: LocalIdentifierAnswers) -> [UInt8] {
        MappingsBody.written(ids, asked: "cloudIdentifier", answered: "localIdentifier", Self.answers(answers))
    }

    /// For a plain-ASCII batch whose local identifiers are plain ASCII too.
    static func plain(_ ids: IdentifierBatch, _ answers: LocalIdentifierAnswers) -> [UInt8] {
        MappingsBody.plain(ids, asked: "cloudIdentifier", answered: "localIdentifier", Self.answers(answers))
    }
}
