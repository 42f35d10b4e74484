import ConcordDomain
import ConcordJSON

/// The one mapping from the domain's errors to the contract's (API.md §1): status, name,
/// message, `"domain"`/`"code"` for errors PhotoKit defines, then the error's details.
extension APIError {
    /// The answer for a domain error that is the whole answer.
    public init(_ error: DomainError) {
        self.init(status: error.httpStatus, name: error.name, message: error.message)
        if let code = error.photosErrorCode {
            self.details.append(("domain", jsonString(DomainError.photosErrorDomain)))
            self.details.append(("code", String(code)))
        }
        for detail in error.details {
            var writer = JSONWriter(capacity: 64)
            Codec.write(detail.value, into: &writer)
            self.details.append((detail.key, String(decoding: writer.bytes, as: UTF8.self)))
        }
        if case .unavailable = error { self.headers.append(("Retry-After", "1")) }
        if case .insufficientStorage = error { self.headers.append(("Retry-After", "30")) }
    }
}

extension Codec {
    /// A per-item error object (mapping items, changes): the same shape as a whole-answer
    /// error's inner object, details (`localIdentifiers`, `limitedLibrary`) as its fields.
    static func write(_ error: ItemError, into w: inout JSONWriter) {
        w.beginObject()
        w.key("name"); w.string(error.name)
        w.key("message"); w.string(error.message)
        if let code = error.photosErrorCode {
            w.key("domain"); w.string(DomainError.photosErrorDomain)
            w.key("code"); w.int(code)
        }
        for detail in error.details {
            w.key(detail.key)
            Self.write(detail.value, into: &w)
        }
        w.endObject()
    }

    /// A detail value as JSON.
    static func write(_ value: DetailValue, into w: inout JSONWriter) {
        switch value {
        case .string(let s): w.string(s)
        case .int(let i): w.int(i)
        case .bool(let b): w.bool(b)
        case .null: w.null()
        case .array(let values):
            w.beginArray()
            for v in values { Self.write(v, into: &w) }
            w.endArray()
        case .object(let fields):
            w.beginObject()
            for f in fields {
                w.key(f.key)
                Self.write(f.value, into: &w)
            }
            w.endObject()
        }
    }
}
