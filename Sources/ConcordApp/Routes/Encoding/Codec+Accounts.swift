import ConcordDomain
import ConcordHTTP
import ConcordJSON

/// Answers of accounts and devices.
extension Codec {
    /// `{"devices": [...]}`, with `"hasMore"` when a page was asked for (`hasMore` not nil).
    static func devices(_ devices: [DeviceSummary], hasMore: Bool?) -> HTTPResponse {
        Codec.json(capacity: 64 + 256 * devices.count) { w in
            w.beginObject()
            w.key("devices")
            w.beginArray()
            for d in devices {
                w.beginObject()
                w.key("deviceID"); w.string(d.deviceID)
                w.key("name"); w.string(d.name)
                w.key("platform"); Codec.optional(d.platform, &w)
                w.key("createdAt"); w.string(RFC3339.format(d.createdAt))
                w.key("objectCount"); w.int(d.objectCount)
                w.key("changeToken"); w.string(d.changeToken)
                w.key("tokenCreatedAt"); Codec.optional(d.tokenCreatedAt.map(RFC3339.format), &w)
                w.key("tokenLastUsedAt"); Codec.optional(d.tokenLastUsedAt.map(RFC3339.format), &w)
                w.key("replaces"); Codec.optional(d.replaces, &w)
                w.key("replacedBy"); Codec.optional(d.replacedBy, &w)
                w.endObject()
            }
            w.endArray()
            if let hasMore { w.key("hasMore"); w.bool(hasMore) }
            w.endObject()
        }
    }
}
