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
    static func plain(_ ids: IdentifierBatch, asked: StaticString, answered: StaticString, _ answers: Answers) -> [UInt8] {
        precondition(ids.isPlainASCII, "a batch with identifiers to escape goes through written(_:asked:answered:_:)")
        // Each error's bytes (`"error":{…}`) once, all in one buffer.
        var errorBytes: [UInt8] = []
        let errorRanges = answers.errors.map { error -> Range<Int> in
            var w = JSONWriter()
            w.key(plain: "error")
            Codec.write(error, into: &w)
            let start = errorBytes.count
            errorBytes += w.bytes
            return start..<errorBytes.count
        }
        let head: StaticString = #"{"mappings":["#, tail: StaticString = "]}"
        // {"<asked>":"  <id>  ","<answered>":"  <answer>  "}      or      {"<asked>":"  <id>  ",  error  }
        let open = 5 + asked.utf8CodeUnitCount, between = 6 + answered.utf8CodeUnitCount, errorOpen = 2
        let count = ids.count
        // Plain pointers to the spans and the pieces for the two passes: no array access (nor its
        // reference counting) per item.
        return ids.spans.withUnsafeBufferPointer { spans in
          answers.pieces.withAnswers { pieces in
            var total = head.utf8CodeUnitCount + tail.utf8CodeUnitCount + max(0, count - 1)
            for i in 0..<count {
                total += open + Int(spans[i].length)
                switch pieces[i] {
                case .bytes(let range): total += between + range.count + 2
                case .other(let e): total += errorOpen + errorRanges[e].count + 1
                }
            }
            return [UInt8](unsafeUninitializedCapacity: total) { out, written in
                var at = out.baseAddress!
                @inline(__always) func put(_ s: StaticString) {
                    at.update(from: s.utf8Start, count: s.utf8CodeUnitCount)
                    at += s.utf8CodeUnitCount
                }
                @inline(__always) func put(_ p: UnsafePointer<UInt8>, _ count: Int) {
                    if count > 0 { at.update(from: p, count: count) }
                    at += count
                }
                put(head)
                ids.bytes.withUnsafeBufferPointer { idBytes in
                  answers.pieces.bytes.withUnsafeBufferPointer { answerBytes in
                    errorBytes.withUnsafeBufferPointer { errorBytes in
                        for i in 0..<count {
                            if i > 0 { put(",") }
                            put("{\""); put(asked); put("\":\"")
                            let span = spans[i]
                            put(idBytes.baseAddress! + Int(span.start), Int(span.length))
                            switch pieces[i] {
                            case .bytes(let range):
                                put("\",\""); put(answered); put("\":\"")
                                put(answerBytes.baseAddress! + range.lowerBound, range.count)
                                put("\"}")
                            case .other(let e):
                                put("\",")
                                put(errorBytes.baseAddress! + errorRanges[e].lowerBound, errorRanges[e].count)
                                put("}")
                            }
                        }
                    }
                  }
                }
                put(tail)
                written = at - out.baseAddress!
                precondition(written == total, "the answer's size was counted before writing it")
            }
          }
        }
    }
}

/// The body of a cloud → local answer, two ways with the same bytes (a table test holds them equal).
enum CloudToLocalBody {
    /// Each answer a run of the local identifiers' bytes, or its error (each distinct error once,
    /// lists of candidates apart).
    static func answers(_ answers: LocalIdentifierAnswers) -> MappingsBody.Answers {
        var errors: [ItemError] = []
        var numbered: [ItemError: Int] = [:]
        // A batch's errors are mostly one repeated (identifierNotFound): the last numbered one is
        // compared before any hashing.
        var last: (error: ItemError, number: Int)?
        let pieces = answers.mapOthers { error -> Int in
            if let last, last.error == error { return last.number }
            if let e = numbered[error] { last = (error, e); return e }
            errors.append(error)
            if case .multipleIdentifiersFound = error {} else {
                numbered[error] = errors.count - 1
                last = (error, errors.count - 1)
            }
            return errors.count - 1
        }
        return MappingsBody.Answers(pieces: pieces, errors: errors)
    }

    static func written(_ ids: IdentifierBatch, _ answers: LocalIdentifierAnswers) -> [UInt8] {
        MappingsBody.written(ids, asked: "cloudIdentifier", answered: "localIdentifier", Self.answers(answers))
    }

    /// For a plain-ASCII batch whose local identifiers are plain ASCII too.
    static func plain(_ ids: IdentifierBatch, _ answers: LocalIdentifierAnswers) -> [UInt8] {
        MappingsBody.plain(ids, asked: "cloudIdentifier", answered: "localIdentifier", Self.answers(answers))
    }
}
