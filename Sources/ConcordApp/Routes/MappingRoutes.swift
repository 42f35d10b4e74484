import ConcordBytes
import ConcordDomain
import ConcordHTTP
import ConcordJSON

/// Mapping identifiers both ways, and links chosen by the person (device token).
/// The two lookups are computation once the account's index is loaded: they queue for a core.
func mappingRoutes(_ app: AppContext) -> [Route] {
    let metrics = app.appMetrics
    return [
        app.deviceRoute("POST", "/v1/library/cloud-identifiers", operation: "cloudIdentifiers", body: .batch, scheduling: .perCoreLookup) { request, device in
            let ids = try Codec.identifierBatch(request, "localIdentifiers", maxBatch: app.service.configuration.maxBatch, maxElements: app.batchElements)
            let answers = try app.service.mapping.cloudIdentifierAnswers(forLocalIdentifiers: ids, device: device, checked: request.deviceCheck.check)
            return localToCloudAnswer(ids, answers, metrics)
        },
        app.deviceRoute("POST", "/v1/library/local-identifiers", operation: "localIdentifiers", body: .batch, scheduling: .perCoreLookup) { request, device in
            let (ids, contentMatch) = try Codec.cloudIdentifierBatch(request, maxBatch: app.service.configuration.maxBatch, maxElements: app.batchElements)
            let answers = try app.service.mapping.localIdentifierAnswers(forCloudIdentifiers: ids, device: device, contentMatch: contentMatch,
                                                                          checked: request.deviceCheck.check)
            return cloudToLocalAnswer(ids, answers, metrics)
        },
        // Which objects are worth hashing, and the library's counts.
        app.deviceRoute("GET", "/v1/library/wanted", operation: "wanted") { request, device in
            let after = request.query("after")
            if after?.isEmpty == true { throw APIError.badRequest("The query parameter \"after\" must not be empty.", field: "after") }
            let page = try app.service.mapping.wanted(device: device, after: after, limit: try Codec.intQuery(request, "limit") ?? 1000)
            return Codec.wantedPage(page)
        },
        app.deviceRoute("GET", "/v1/library/status", operation: "libraryStatus") { _, device in
            Codec.libraryStatus(try app.service.mapping.status(device: device))
        },
        // The predecessor's links carried over (a new phone).
        app.deviceRoute("POST", "/v1/library/adopt", operation: "adopt", idempotent: true) { request, device in
            _ = try request.jsonBody()
            return Codec.adoption(try app.service.mapping.adopt(device: device, idempotency: request.idempotency))
        },
        app.deviceRoute("POST", "/v1/library/links", operation: "link", idempotent: true) { request, device in
            let body = try request.jsonBody()
            let cloud = try Codec.requiredString(body, "cloudIdentifier", path: "cloudIdentifier")
            let local = try Codec.requiredString(body, "localIdentifier", path: "localIdentifier")
            try app.service.mapping.link(cloudIdentifier: cloud, localIdentifier: local, device: device, idempotency: request.idempotency)
            return Codec.strings([("cloudIdentifier", cloud), ("localIdentifier", local)])
        },
    ]
}

/// `{"mappings": [...]}` of local → cloud; counts each outcome for `/metrics`.
private func localToCloudAnswer(_ ids: IdentifierBatch, _ answers: CloudIdentifierAnswers, _ metrics: AppMetrics) -> HTTPResponse {
    var found = 0
    for answer in answers.answers { if case .bytes = answer { found += 1 } }
    var tally = [Int](repeating: 0, count: AppMetrics.Outcome.allCases.count)
    tally[AppMetrics.Outcome.found.rawValue] = found
    tally[AppMetrics.Outcome(.error(answers.notFound)).rawValue] += ids.count - found
    metrics.recordMappings(.localToCloud, tally)
    let body = ids.isPlainASCII ? LocalToCloudBody.plain(ids, answers) : LocalToCloudBody.written(ids, answers)
    return HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/json")]), body: body)
}

/// `{"mappings": [...]}` of cloud → local: per item the cloud identifier asked for (copied from
/// the batch, escaped only when it needs to be), then its `localIdentifier` or `error`; counts
/// each outcome for `/metrics`.
private func cloudToLocalAnswer(_ ids: IdentifierBatch, _ answers: LocalIdentifierAnswers, _ metrics: AppMetrics) -> HTTPResponse {
    // Errors come numbered: counted by their number, one pass over the items' plain numbers.
    let numbered = CloudToLocalBody.answers(answers)
    var perError = [Int](repeating: 0, count: numbered.errors.count)
    var found = 0
    for piece in numbered.pieces {
        switch piece {
        case .bytes: found += 1
        case .other(let e): perError[e] += 1
        }
    }
    var tally = [Int](repeating: 0, count: AppMetrics.Outcome.allCases.count)
    tally[AppMetrics.Outcome.found.rawValue] = found
    for (e, error) in numbered.errors.enumerated() { tally[AppMetrics.Outcome(.error(error)).rawValue] += perError[e] }
    metrics.recordMappings(.cloudToLocal, tally)
    let plain = ids.isPlainASCII && (answers.answers.bytesArePlainASCII || answers.answers.bytes.withUnsafeBufferPointer { IdentifierBatch.isPlainASCII($0) })
    let body = plain ? MappingsBody.plain(ids, asked: "cloudIdentifier", answered: "localIdentifier", numbered)
        : MappingsBody.written(ids, asked: "cloudIdentifier", answered: "localIdentifier", numbered)
    return HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/json")]), body: body)
}
