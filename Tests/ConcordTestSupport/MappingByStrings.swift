import ConcordDomain

// The mapping directions with strings in and strings out, for tests: they read better than the
// byte-buffer batches the routes use (`cloudIdentifierAnswers`, `localIdentifierAnswers`), which
// they call, so a test exercises exactly the routes' path. Nothing here is in the server.

/// One answer item of either direction: the identifier asked about (local for local → cloud,
/// cloud for cloud → local), and `.found(the other)` or an item error.
public struct IdentifierMapping: Sendable, Equatable {
    public var identifier: String
    public var result: MappingResult
}

extension MappingService {
    /// Local → cloud for identifiers as strings, one mapping per item in order.
    public func cloudIdentifiers(forLocalIdentifiers ids: [String], device: DeviceRef) throws(DomainError) -> [IdentifierMapping] {
        let answers = try self.cloudIdentifierAnswers(forLocalIdentifiers: IdentifierBatch(ids), device: device)
        return answers.answers.indices.map { i in
            IdentifierMapping(identifier: ids[i], result: answers.result(i))
        }
    }

    /// Cloud → local for identifiers as strings, one mapping per item in order.
    public func localIdentifiers(forCloudIdentifiers strings: [String], device: DeviceRef) throws(DomainError) -> [IdentifierMapping] {
        let results = try self.localIdentifierResults(forCloudIdentifiers: IdentifierBatch(strings), device: device)
        return zip(strings, results).map { IdentifierMapping(identifier: $0, result: $1) }
    }

    /// `localIdentifierAnswers` as one `MappingResult` per identifier (a string each).
    public func localIdentifierResults(forCloudIdentifiers batch: IdentifierBatch, device: DeviceRef, contentMatch: Bool = true) throws(DomainError) -> [MappingResult] {
        try self.localIdentifierAnswers(forCloudIdentifiers: batch, device: device, contentMatch: contentMatch).results
    }
}

extension CloudIdentifierAnswers {
    /// Answer `i` as a string: its cloud identifier, or the not-found error.
    public func result(_ i: Int) -> MappingResult {
        guard case .bytes(let range) = self.answers[i] else { return .error(self.notFound) }
        return .found(String(decoding: self.answers.bytes[range], as: UTF8.self))
    }
}

extension LocalIdentifierAnswers {
    /// One `MappingResult` per identifier.
    public var results: [MappingResult] {
        self.answers.map { answer in
            switch answer {
            case .bytes(let range): .found(String(decoding: self.answers.bytes[range], as: UTF8.self))
            case .other(let error): .error(self.errors[error])
            }
        }
    }
}
