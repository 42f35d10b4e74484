import ConcordDomain
import ConcordHTTP
import ConcordJSON

/// API.md §5: mapping identifiers both ways, and links chosen by the person (device token).
func mappingRoutes(_ app: AppContext) -> [Route] {
    let metrics = app.appMetrics
    return [
        app.deviceRoute("POST", "/v1/library/cloud-identifiers", operation: "cloudIdentifiers") { request, device in
            let body = try request.jsonBody(maxElements: app.batchElements)
            let ids = try Codec.batch(body, "localIdentifiers", maxBatch: app.service.configuration.maxBatch)
            let answers = try app.service.mapping.cloudIdentifierAnswers(forLocalIdentifiers: ids, device: device)
            return localToCloudAnswer(ids, answers, metrics)
        },
        app.deviceRoute("POST", "/v1/library/local-identifiers", operation: "localIdentifiers") { request, device in
            let body = try request.jsonBody(maxElements: app.batchElements)
            let ids = try Codec.batch(body, "cloudIdentifiers", maxBatch: app.service.configuration.maxBatch)
            let mappings = try app.service.mapping.localIdentifiers(forCloudIdentifiers: ids, device: device)
            return mappingAnswer(mappings, .cloudToLocal, metrics, asked: "cloudIdentifier", answered: "localIdentifier") {
                ($0.cloudIdentifier, $0.result)
            }
        },
        app.deviceRoute("POST", "/v1/library/links", operation: "link") { request, device in
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

/// `{"mappings": [...]}` of local → cloud, the cloud identifiers copied from the answers' one
/// buffer into the response (no string per item).
private func localToCloudAnswer(_ ids: [String], _ answers: CloudIdentifierAnswers, _ metrics: AppMetrics) -> HTTPResponse {
    var found = 0
    defer {
        var tally = [Int](repeating: 0, count: AppMetrics.Outcome.allCases.count)
        tally[AppMetrics.Outcome.found.rawValue] = found
        tally[AppMetrics.Outcome(.error(answers.notFound)).rawValue] += ids.count - found
        metrics.recordMappings(.localToCloud, tally)
    }
    return Codec.json(capacity: 64 + 140 * ids.count) { w in
        w.beginObject()
        w.key(plain: "mappings")
        w.beginArray()
        answers.forEach { i, result in
            w.beginObject()
            w.key(plain: "localIdentifier"); w.string(ids[i])
            switch result {
            case .found(let bytes): w.key(plain: "cloudIdentifier"); w.string(plainASCII: bytes); found += 1
            case .error(let error): w.key(plain: "error"); Codec.write(error, into: &w)
            }
            w.endObject()
        }
        w.endArray()
        w.endObject()
    }
}

/// `{"mappings": [...]}`: per item the identifier asked for (`asked`), then the one it maps to
/// (`answered`) or its `error`; counts each outcome for `/metrics`.
private func mappingAnswer<Mapping>(
    _ mappings: [Mapping], _ direction: AppMetrics.Direction, _ metrics: AppMetrics, asked: String, answered: String,
    _ parts: (Mapping) -> (identifier: String, result: MappingResult)
) -> HTTPResponse {
    var tally = [Int](repeating: 0, count: AppMetrics.Outcome.allCases.count)
    defer { metrics.recordMappings(direction, tally) }
    return Codec.json(capacity: 64 + 128 * mappings.count) { w in
        w.beginObject()
        w.key("mappings")
        w.beginArray()
        for m in mappings {
            let (identifier, result) = parts(m)
            tally[AppMetrics.Outcome(result).rawValue] += 1
            w.beginObject()
            w.key(asked); w.string(identifier)
            switch result {
            case .found(let other): w.key(answered); w.string(other)
            case .error(let error): w.key("error"); Codec.write(error, into: &w)
            }
            w.endObject()
        }
        w.endArray()
        w.endObject()
    }
}
