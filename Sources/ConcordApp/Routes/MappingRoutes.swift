import ConcordDomain
import ConcordHTTP
import ConcordJSON

/// API.md §5: mapping identifiers both ways, and links chosen by the person (device token).
/// The two lookups are computation once the account's index is loaded: they queue for a core.
func mappingRoutes(_ app: AppContext) -> [Route] {
    let metrics = app.appMetrics
    return [
        app.deviceRoute("POST", "/v1/library/cloud-identifiers", operation: "cloudIdentifiers", body: .batch, scheduling: .perCoreLookup) { request, device in
            let ids = try Codec.identifierBatch(request, "localIdentifiers", maxBatch: app.service.configuration.maxBatch, maxElements: app.batchElements)
            let answers = try app.service.mapping.cloudIdentifierAnswers(forLocalIdentifiers: ids, device: device)
            return localToCloudAnswer(ids, answers, metrics)
        },
        app.deviceRoute("POST", "/v1/library/local-identifiers", operation: "localIdentifiers", body: .batch, scheduling: .perCoreLookup) { request, device in
            let (ids, contentMatch) = try Codec.cloudIdentifierBatch(request, maxBatch: app.service.configuration.maxBatch, maxElements: app.batchElements)
            let answers = try app.service.mapping.localIdentifierAnswers(forCloudIdentifiers: ids, device: device, contentMatch: contentMatch)
            return cloudToLocalAnswer(ids, answers, metrics)
        },
        // §5 "Fingerprints on demand": which objects are worth hashing, and the library's counts.
        app.deviceRoute("GET", "/v1/library/wanted", operation: "wanted") { request, device in
            let after = request.query("after")
            if after?.isEmpty == true { throw APIError.badRequest("The query parameter \"after\" must not be empty.", field: "after") }
            let page = try app.service.mapping.wanted(device: device, after: after, limit: try Codec.intQuery(request, "limit") ?? 1000)
            return Codec.wantedPage(page)
        },
        app.deviceRoute("GET", "/v1/library/status", operation: "libraryStatus") { _, device in
            Codec.libraryStatus(try app.service.mapping.status(device: device))
        },
        // §5: the predecessor's links carried over (a new phone, issue 22).
        app.deviceRoute("POST", "/v1/library/adopt", operation: "adopt", idempotent: true) { request, device in
            _ = try request.jsonBody()
            return Codec.adoption(try app.service.mapping.adopt(device: device))
        },
        app.deviceRoute("POST", "/v1/library/links", operation: "link", idempotent: true) { request, device in
            let body = try request.jsonBody()
            let cloud = try Codec.requiredString(body, "cloudIdentifier", path: "cloudIdentifier")
            let local = try Codec.requiredString(body, "localIdentifier", path: "localIdentifier")
            try app.service.mapping.link(cloudIdentifier: cloud, localIdentifier: local, device: device)
            return Codec.json { w in
                w.beginObject()
                w.key("cloudIdentifier"); w.string(cloud)
                w.key("localIdentifier"); w.string(local)
                w.endObject()
            }
        },
    ]
}

/// `{"mappings": [...]}` of local → cloud; counts each outcome for `/metrics`.
private func localToCloudAnswer(_ ids: IdentifierBatch, _ answers: CloudIdentifierAnswers, _ metrics: AppMetrics) -> HTTPResponse {
    var found = 0
    for answer in answers.answers { if case .linked = answer { found += 1 } }
    var tally = [Int](repeating: 0, count: AppMetrics.Outcome.allCases.count)
    tally[AppMetrics.Outcome.found.rawValue] = found
    tally[AppMetrics.Outcome(.error(answers.notFound)).rawValue] += ids.count - found
    metrics.recordMappings(.localToCloud, tally)
    let body = ids.isPlainASCII ? LocalToCloudBody.plain(ids, answers) : LocalToCloudBody.written(ids, answers)
    return HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/json")]), body: body)
}

/// The body of a local → cloud answer, two ways with the same bytes (a table test holds them equal).
enum LocalToCloudBody {
    /// Each answer a run of the cloud identifiers' bytes, or the not-found error.
    static func answers(_ answers: CloudIdentifierAnswers) -> MappingsBody.Answers {
        MappingsBody.Answers(pieces: answers.answers.map { answer in
            if case .linked(let start, let count) = answer { return .found(start: start, count: count) }
            return .error(0)
        }, bytes: answers.bytes, errors: [answers.notFound])
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
    /// One item's answer: a run of `bytes`, or one of `errors`.
    enum Piece {
        case found(start: Int, count: Int)
        case error(Int)
    }

    struct Answers {
        var pieces: [Piece]
        var bytes: [UInt8]
        var errors: [ItemError]
    }

    /// Through `JSONWriter`, escaping what needs it: for any batch.
    static func written(_ ids: IdentifierBatch, asked: StaticString, answered: StaticString, _ answers: Answers) -> [UInt8] {
        var w = JSONWriter(capacity: 64 + 160 * ids.count)
        w.beginObject()
        w.key(plain: "mappings")
        w.beginArray()
        answers.bytes.withUnsafeBufferPointer { bytes in
            for (i, piece) in answers.pieces.enumerated() {
                w.beginObject()
                w.key(plain: asked)
                ids.withIdentifier(i) { ids.isPlainASCII ? w.string(plainASCII: $0) : w.string(utf8: $0) }
                switch piece {
                case .found(let start, let count): w.key(plain: answered); w.string(utf8: UnsafeBufferPointer(rebasing: bytes[start..<start + count]))
                case .error(let e): w.key(plain: "error"); Codec.write(answers.errors[e], into: &w)
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
        let errors = answers.errors.map { error in
            var w = JSONWriter()
            w.key(plain: "error")
            Codec.write(error, into: &w)
            return w.bytes
        }
        let head: StaticString = #"{"mappings":["#, tail: StaticString = "]}"
        // {"<asked>":"  <id>  ","<answered>":"  <answer>  "}      or      {"<asked>":"  <id>  ",  error  }
        let open = 5 + asked.utf8CodeUnitCount, between = 6 + answered.utf8CodeUnitCount, errorOpen = 2
        var total = head.utf8CodeUnitCount + tail.utf8CodeUnitCount + max(0, ids.count - 1)
        for (i, piece) in answers.pieces.enumerated() {
            total += open + Int(ids.spans[i].length)
            switch piece {
            case .found(_, let count): total += between + count + 2
            case .error(let e): total += errorOpen + errors[e].count + 1
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
                answers.bytes.withUnsafeBufferPointer { answerBytes in
                    for (i, piece) in answers.pieces.enumerated() {
                        if i > 0 { put(",") }
                        put("{\""); put(asked); put("\":\"")
                        let span = ids.spans[i]
                        put(idBytes.baseAddress! + Int(span.start), Int(span.length))
                        switch piece {
                        case .found(let start, let count):
                            put("\",\""); put(answered); put("\":\"")
                            put(answerBytes.baseAddress! + start, count)
                            put("\"}")
                        case .error(let e):
                            put("\",")
                            errors[e].withUnsafeBufferPointer { put($0.baseAddress!, $0.count) }
                            put("}")
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

/// `{"mappings": [...]}` of cloud → local: per item the cloud identifier asked for (copied from
/// the batch, escaped only when it needs to be), then its `localIdentifier` or `error`; counts
/// each outcome for `/metrics`.
private func cloudToLocalAnswer(_ ids: IdentifierBatch, _ answers: LocalIdentifierAnswers, _ metrics: AppMetrics) -> HTTPResponse {
    var tally = [Int](repeating: 0, count: AppMetrics.Outcome.allCases.count)
    for answer in answers.answers {
        switch answer {
        case .found: tally[AppMetrics.Outcome.found.rawValue] += 1
        case .error(let error): tally[AppMetrics.Outcome(.error(error)).rawValue] += 1
        }
    }
    metrics.recordMappings(.cloudToLocal, tally)
    let plain = ids.isPlainASCII && answers.bytes.withUnsafeBufferPointer { IdentifierBatch.isPlainASCII($0) }
    let body = plain ? CloudToLocalBody.plain(ids, answers) : CloudToLocalBody.written(ids, answers)
    return HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/json")]), body: body)
}

/// The body of a cloud → local answer, two ways with the same bytes (a table test holds them equal).
enum CloudToLocalBody {
    /// Each answer a run of the local identifiers' bytes, or its error (each distinct error once,
    /// lists of candidates apart).
    static func answers(_ answers: LocalIdentifierAnswers) -> MappingsBody.Answers {
        var errors: [ItemError] = []
        var numbered: [ItemError: Int] = [:]
        let pieces = answers.answers.map { answer -> MappingsBody.Piece in
            switch answer {
            case .found(let start, let count): return .found(start: start, count: count)
            case .error(let error):
                if let e = numbered[error] { return .error(e) }
                errors.append(error)
                if case .multipleIdentifiersFound = error {} else { numbered[error] = errors.count - 1 }
                return .error(errors.count - 1)
            }
        }
        return MappingsBody.Answers(pieces: pieces, bytes: answers.bytes, errors: errors)
    }

    static func written(_ ids: IdentifierBatch, _ answers: LocalIdentifierAnswers) -> [UInt8] {
        MappingsBody.written(ids, asked: "cloudIdentifier", answered: "localIdentifier", Self.answers(answers))
    }

    /// For a plain-ASCII batch whose local identifiers are plain ASCII too.
    static func plain(_ ids: IdentifierBatch, _ answers: LocalIdentifierAnswers) -> [UInt8] {
        MappingsBody.plain(ids, asked: "cloudIdentifier", answered: "localIdentifier", Self.answers(answers))
    }
}
