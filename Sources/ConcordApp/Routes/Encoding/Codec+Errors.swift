import ConcordDomain
import ConcordJSON

extension Codec {
    /// A per-item error object (mapping items, changes): the same shape as a whole-answer
    /// error's inner object, details (`localIdentifiers`, `limitedLibrary`) as its fields.
    static func write(_ error: ItemError, into w: inout JSONWriter) {
        if case .multipleIdentifiersFound(let localIdentifiers) = error {
            // Only the candidates differ from one such error to the next (a batch can hold hundreds).
            w.appendOpened(Self.multipleIdentifiersHead)
            for id in localIdentifiers { w.string(id) }
            w.endArray()
            w.endObject()
            return
        }
        w.beginObject()
        Self.writeHead(of: error, into: &w)
        for detail in error.details {
            w.key(detail.key)
            Self.write(detail.value, into: &w)
        }
        w.endObject()
    }

    /// `name`, `message` and, for PhotoKit's errors, `domain` and `code`.
    private static func writeHead(of error: ItemError, into w: inout JSONWriter) {
        w.key("name"); w.string(error.name)
        w.key("message"); w.string(error.message)
        if let code = error.photosErrorCode {
            w.key("domain"); w.string(DomainError.photosErrorDomain)
            w.key("code"); w.int(code)
        }
    }

    /// A multipleIdentifiersFound error up to its candidates: `{"name":…,"code":3202,"localIdentifiers":[`.
    static let multipleIdentifiersHead: [UInt8] = {
        var w = JSONWriter()
        w.beginObject()
        Self.writeHead(of: .multipleIdentifiersFound(localIdentifiers: []), into: &w)
        w.key(plain: "localIdentifiers")
        w.beginArray()
        return w.bytes
    }()

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
