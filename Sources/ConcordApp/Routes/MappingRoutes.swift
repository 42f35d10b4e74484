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
    /// Through `JSONWriter`, escaping each identifier: for any batch.
    static func written(_ ids: IdentifierBatch, _ answers: CloudIdentifierAnswers) -> [UInt8] {
        var w = JSONWriter(capacity: 64 + 140 * ids.count)
        w.beginObject()
        w.key(plain: "mappings")
        w.beginArray()
        answers.forEach { i, result in
            w.beginObject()
            w.key(plain: "localIdentifier")
            ids.withIdentifier(i) { w.string(utf8: $0) }
            switch result {
            case .found(let bytes): w.key(plain: "cloudIdentifier"); w.string(plainASCII: bytes)
            case .error(let error): w.key(plain: "error"); Codec.write(error, into: &w)
            }
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }

    /// For a plain-ASCII batch (the usual one): neither its identifiers nor cloud identifiers need
    /// escaping (`PlainMappingsBody`); the not-found error is rendered once.
    static func plain(_ ids: IdentifierBatch, _ answers: CloudIdentifierAnswers) -> [UInt8] {
        let pieces = answers.answers.map { answer -> PlainMappingsBody.Piece in
            if case .linked(let start, let count) = answer { return .found(start: start, count: count) }
            return .error(0)
        }
        return PlainMappingsBody.write(ids, asked: "localIdentifier", answered: "cloudIdentifier", pieces: pieces,
                                       answerBytes: answers.bytes, errors: [PlainMappingsBody.render(answers.notFound)])
    }
}

/// `{"mappings":[{"<asked>":"<id>","<answered>":"<answer>"} or {"<asked>":"<id>","error":{…}}, …]}`
/// for a plain-ASCII batch whose answers are plain ASCII too (`IdentifierBatch.isPlainASCII`): no
/// byte needs escaping, so the body is copies of byte runs into a buffer of exactly its size, in
/// one pass. Both mapping directions answer this way.
enum PlainMappingsBody {
    /// One item's answer: a run of `answerBytes`, or one of the pre-rendered `errors`.
    enum Piece {
        case found(start: Int, count: Int)
        case error(Int)
    }

    /// `"error":{…}` for an item error.
    static func render(_ error: ItemError) -> [UInt8] {
        var w = JSONWriter()
        w.key(plain: "error")
        Codec.write(error, into: &w)
        return w.bytes
    }

    static func write(_ ids: IdentifierBatch, asked: StaticString, answered: StaticString, pieces: [Piece],
                      answerBytes: [UInt8], errors: [[UInt8]]) -> [UInt8] {
        precondition(ids.isPlainASCII, "a batch with identifiers to escape goes through JSONWriter")
        let head: StaticString = #"{"mappings":["#, tail: StaticString = "]}"
        // {"<asked>":"  <id>  ","<answered>":"  <answer>  "}      or      {"<asked>":"  <id>  ",  error  }
        let open = 5 + asked.utf8CodeUnitCount, between = 6 + answered.utf8CodeUnitCount, errorOpen = 2
        var total = head.utf8CodeUnitCount + tail.utf8CodeUnitCount + max(0, ids.count - 1)
        for (i, piece) in pieces.enumerated() {
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
                answerBytes.withUnsafeBufferPointer { answerBytes in
                    for (i, piece) in pieces.enumerated() {
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
    /// Through `JSONWriter`, escaping each identifier: for any batch.
    static func written(_ ids: IdentifierBatch, _ answers: LocalIdentifierAnswers) -> [UInt8] {
        var w = JSONWriter(capacity: 64 + 160 * ids.count)
        w.beginObject()
        w.key(plain: "mappings")
        w.beginArray()
        answers.bytes.withUnsafeBufferPointer { bytes in
            for (i, answer) in answers.answers.enumerated() {
                w.beginObject()
                w.key(plain: "cloudIdentifier")
                ids.withIdentifier(i) { ids.isPlainASCII ? w.string(plainASCII: $0) : w.string(utf8: $0) }
                switch answer {
                case .found(let start, let count): w.key(plain: "localIdentifier"); w.string(utf8: UnsafeBufferPointer(rebasing: bytes[start..<start + count]))
                case .error(let error): w.key(plain: "error"); Codec.write(error, into: &w)
                }
                w.endObject()
            }
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }

    /// For a plain-ASCII batch whose local identifiers are plain ASCII too (`PlainMappingsBody`);
    /// each distinct error other than a list of candidates is rendered once.
    static func plain(_ ids: IdentifierBatch, _ answers: LocalIdentifierAnswers) -> [UInt8] {
        var errors: [[UInt8]] = []
        var rendered: [ItemError: Int] = [:]
        let pieces = answers.answers.map { answer -> PlainMappingsBody.Piece in
            switch answer {
            case .found(let start, let count): return .found(start: start, count: count)
            case .error(let error):
                if let e = rendered[error] { return .error(e) }
                errors.append(PlainMappingsBody.render(error))
                if case .multipleIdentifiersFound = error {} else { rendered[error] = errors.count - 1 }
                return .error(errors.count - 1)
            }
        }
        return PlainMappingsBody.write(ids, asked: "cloudIdentifier", answered: "localIdentifier", pieces: pieces,
                                       answerBytes: answers.bytes, errors: errors)
    }
}
