import ConcordDomain
import ConcordHTTP
import ConcordJSON

/// Journals: `If-Match`, an entry's photos, and the answers.
extension Codec {

    /// `"<version>"`: the `ETag` of a journal or entry (a strong entity tag, RFC 9110 §8.8.3).
    static func entityTag(_ version: String) -> String { "\"" + version + "\"" }

    /// The request's `If-Match` in the domain's terms (parsed by `HTTPHeaders.ifMatch`); `400` naming
    /// `If-Match` when it is malformed.
    static func ifMatch(_ request: RequestContext) throws(APIError) -> IfMatch? {
        do {
            switch try request.request.headers.ifMatch() {
            case nil: return nil
            case .any?: return .any
            case .strong(let versions)?: return .versions(versions)
            }
        } catch {
            throw APIError.badRequest("If-Match must be * or a list of quoted entity tags.", field: "If-Match")
        }
    }

    /// An entry PUT's `"photos"`: each `{"cloudIdentifier"}` or `{"localIdentifier"}` (exactly one);
    /// more than `maxBatch` photos is `413 batchTooLarge`, checked before the items.
    static func journalPhotos(_ body: JSONObject, maxBatch: Int) throws(APIError) -> [JournalPhotoInput] {
        guard let array = try self.array(body, "photos", path: "photos") else { throw APIError.missingField("photos") }
        guard array.count <= maxBatch else { throw APIError(DomainError.batchTooLarge(maxBatch: maxBatch)) }
        var photos: [JournalPhotoInput] = []
        photos.reserveCapacity(array.count)
        for value in array {
            guard case .object(let o) = value else { throw APIError.wrongType("photos", "an array of objects") }
            let cloud = try self.string(o, "cloudIdentifier", path: "photos.cloudIdentifier")
            let local = try self.string(o, "localIdentifier", path: "photos.localIdentifier")
            switch (cloud, local) {
            case (let c?, nil): photos.append(.cloudIdentifier(c))
            case (nil, let l?): photos.append(.localIdentifier(l))
            default:
                throw APIError.badRequest("Each photo must have exactly one of cloudIdentifier and localIdentifier.", field: "photos")
            }
        }
        return photos
    }

    /// A journal: `{"journalID","title","version","entryCount","updatedAt","createdAt"}`, with
    /// `"entries"` when given (`GET /v1/journals/{journalID}`).
    /// `hasMore`: after the entries, when a page of them was asked for.
    static func write(_ j: JournalSummary, entries: [JournalEntryView]?, hasMore: Bool? = nil, into w: inout JSONWriter) {
        w.beginObject()
        w.key("journalID"); w.string(j.journalID)
        w.key("title"); w.string(j.title)
        w.key("version"); w.string(j.version)
        w.key("entryCount"); w.int(j.entryCount)
        w.key("updatedAt"); w.string(RFC3339.format(j.updatedAt))
        w.key("createdAt"); w.string(RFC3339.format(j.createdAt))
        if let entries {
            w.key("entries")
            w.beginArray()
            for e in entries { self.write(e, into: &w) }
            w.endArray()
        }
        if let hasMore { w.key("hasMore"); w.bool(hasMore) }
        w.endObject()
    }

    /// An entry: `{"entryID","text","version","photos"}`, each photo `{"cloudIdentifier","localIdentifier"}`
    /// or `{"cloudIdentifier","error"}` as resolved for the calling device.
    static func write(_ e: JournalEntryView, applied: Bool? = nil, into w: inout JSONWriter) {
        w.beginObject()
        w.key("entryID"); w.string(e.entryID)
        w.key("text"); w.string(e.text)
        w.key("version"); w.string(e.version)
        w.key("photos")
        w.beginArray()
        for p in e.photos {
            w.beginObject()
            w.key("cloudIdentifier"); w.string(p.cloudIdentifier)
            switch p.result {
            case .found(let local): w.key("localIdentifier"); w.string(local)
            case .error(let error): w.key("error"); self.write(error, into: &w)
            }
            w.endObject()
        }
        w.endArray()
        if let applied { w.key("applied"); w.bool(applied) }
        w.endObject()
    }

    /// A selection's `"mode"`: `"replace"` when absent or null, else one of the two names.
    static func selectionMode(_ body: JSONObject) throws(APIError) -> SelectionMode {
        guard let name = try Codec.string(body, "mode", path: "mode") else { return .replace }
        guard let mode = SelectionMode(rawValue: name) else {
            throw APIError.badRequest("mode must be \"replace\" or \"add\".", field: "mode")
        }
        return mode
    }

    /// A selection's `"sequence"`: an integer (a JSON number without a fraction); nil when absent or
    /// null. Its range is the domain's to check, so out-of-range whole numbers pass as far as Int64 holds them.
    static func sequence(_ body: JSONObject, _ key: String) throws(APIError) -> Int64? {
        switch body[key] {
        case .none, .null?: return nil
        case .number(let n)?:
            guard n == n.rounded(), n.isFinite else { throw APIError.wrongType(key, "an integer from 0 to 2^53 - 1") }
            // Beyond 2^53 a double holds no odd integer: clamp, and let the domain refuse it as too large.
            return Int64(exactly: n) ?? (n < 0 ? Int64.min : Int64.max)
        default: throw APIError.wrongType(key, "an integer from 0 to 2^53 - 1")
        }
    }

    /// `{"journals": [...]}`, with `"hasMore"` when a page was asked for (`hasMore` not nil).
    static func journals(_ journals: [JournalSummary], hasMore: Bool?) -> HTTPResponse {
        Codec.json(capacity: 64 + 192 * journals.count) { w in
            w.beginObject()
            w.key("journals")
            w.beginArray()
            for j in journals { Codec.write(j, entries: nil, into: &w) }
            w.endArray()
            if let hasMore { w.key("hasMore"); w.bool(hasMore) }
            w.endObject()
        }
    }

    /// The journal (with `entries` when given) and its `ETag`.
    static func journalResponse(_ journal: JournalSummary, status: Int = 200, entries: [JournalEntryView]? = nil, hasMore: Bool? = nil) -> HTTPResponse {
        let capacity = entries.map { entries in 256 + 256 * entries.count + 160 * entries.reduce(0) { $0 + $1.photos.count } } ?? 256
        var response = Codec.json(status: status, capacity: capacity) { w in Codec.write(journal, entries: entries, hasMore: hasMore, into: &w) }
        response.headers.add(name: "ETag", value: Codec.entityTag(journal.version))
        return response
    }

    /// `200` with the entry and its `ETag`; with `"applied"` when given (a picker session's selection).
    static func entryResponse(_ entry: JournalEntryView, applied: Bool? = nil) -> HTTPResponse {
        var response = Codec.json(capacity: 128 + entry.text.utf8.count + 160 * entry.photos.count) { w in Codec.write(entry, applied: applied, into: &w) }
        response.headers.add(name: "ETag", value: Codec.entityTag(entry.version))
        return response
    }

    /// One journal change: `{"changeToken","journals":{...},"entries":{...}}`, every list present.
    static func write(_ change: JournalChange, into w: inout JSONWriter) {
        w.beginObject()
        w.key("changeToken"); w.string(change.changeToken)
        for (name, lists) in [("journals", change.details.journals), ("entries", change.details.entries)] {
            w.key(name)
            w.beginObject()
            w.key("inserted"); self.strings(lists.inserted, &w)
            w.key("updated"); self.strings(lists.updated, &w)
            w.key("deleted"); self.strings(lists.deleted, &w)
            w.endObject()
        }
        w.endObject()
    }
}
