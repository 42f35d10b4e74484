import ConcordBytes
import ConcordDomain
import ConcordHTTP
import ConcordJSON

/// Request decoding and response encoding for the API routes: bodies are parsed once with
/// `JSONValue.parse` (by `RequestContext.jsonBody`) and read field by field here; answers
/// are written straight into a `JSONWriter`.
///
/// Field names in `400 badRequest` answers are dotted paths from the body's root, the
/// same spelling the domain uses for its own value checks: `assets.upsert.fingerprint`,
/// `localIdentifiers`. A `null` counts as absent; unknown fields are ignored.
enum Codec {
    // MARK: - Reading fields

    /// Field `key` as `value` reads it (one of `JSONValue`'s accessors); nil when absent or null,
    /// `400` naming `path` as not `expected` when another type.
    private static func field<Value>(_ object: JSONObject, _ key: String, path: String, _ expected: String,
                                     _ value: (JSONValue) -> Value?) throws(APIError) -> Value? {
        switch object[key] {
        case .none, .null?: return nil
        case let present?:
            guard let typed = value(present) else { throw APIError.wrongType(path, expected) }
            return typed
        }
    }

    /// A string field; nil when absent or null, `400` naming `path` when another type.
    static func string(_ object: JSONObject, _ key: String, path: String) throws(APIError) -> String? {
        try self.field(object, key, path: path, "a string") { $0.stringValue }
    }

    static func requiredString(_ object: JSONObject, _ key: String, path: String) throws(APIError) -> String {
        guard let value = try self.string(object, key, path: path) else { throw APIError.missingField(path) }
        return value
    }

    static func bool(_ object: JSONObject, _ key: String, path: String) throws(APIError) -> Bool? {
        try self.field(object, key, path: path, "a boolean") { $0.boolValue }
    }

    static func array(_ object: JSONObject, _ key: String, path: String) throws(APIError) -> [JSONValue]? {
        try self.field(object, key, path: path, "an array") { $0.arrayValue }
    }

    static func object(_ object: JSONObject, _ key: String, path: String) throws(APIError) -> JSONObject? {
        try self.field(object, key, path: path, "an object") { $0.objectValue }
    }

    /// An array of strings (each element must be a string).
    static func stringArray(_ object: JSONObject, _ key: String, path: String) throws(APIError) -> [String]? {
        guard let array = try self.array(object, key, path: path) else { return nil }
        var strings: [String] = []
        strings.reserveCapacity(array.count)
        for element in array {
            guard case .string(let s) = element else { throw APIError.wrongType(path, "an array of strings") }
            strings.append(s)
        }
        return strings
    }

    static func requiredStringArray(_ object: JSONObject, _ key: String, path: String) throws(APIError) -> [String] {
        guard let value = try self.stringArray(object, key, path: path) else { throw APIError.missingField(path) }
        return value
    }

    /// A request's array of identifiers: `413 batchTooLarge` when it has more than `maxBatch`
    /// items — the domain's limit, enforced while decoding so an oversized batch is refused before
    /// its items are looked at — then `400` naming `key` when it is not an array of strings, or
    /// missing while `required`.
    static func batch(_ body: JSONObject, _ key: String, maxBatch: Int) throws(APIError) -> [String] {
        guard let ids = try self.batch(body, key, maxBatch: maxBatch, required: true) else { throw APIError.missingField(key) }
        return ids
    }

    static func batch(_ body: JSONObject, _ key: String, maxBatch: Int, required: Bool) throws(APIError) -> [String]? {
        guard let array = try self.array(body, key, path: key) else {
            if required { throw APIError.missingField(key) }
            return nil
        }
        guard array.count <= maxBatch else { throw APIError(DomainError.batchTooLarge(maxBatch: maxBatch)) }
        return try self.requiredStringArray(body, key, path: key)
    }

    /// The identifiers of a mapping batch, `{"<key>": [...]}`, read in place from the body when it
    /// is of the plain form `PlainStringArrayScanner` takes (a device's usual batch); any other body
    /// goes through `jsonBody` and `batch`, which decide what it means and word its errors.
    static func identifierBatch(_ request: RequestContext, _ key: StaticString, maxBatch: Int, maxElements: Int) throws(APIError) -> IdentifierBatch {
        try self.identifierBatchAndBody(request, key, maxBatch: maxBatch, maxElements: maxElements).batch
    }

    /// `identifierBatch`, and the parsed body when the batch was not read in place (nil: the body
    /// has no member but the batch, so nothing else to read from it).
    static func identifierBatchAndBody(_ request: RequestContext, _ key: StaticString, maxBatch: Int,
                                       maxElements: Int) throws(APIError) -> (batch: IdentifierBatch, body: JSONObject?) {
        let body = request.request.body
        if let spans = PlainStringArrayScanner.scan(body, member: key, maxCount: maxBatch, span: { start, length in
            IdentifierBatch.Span(start: UInt32(truncatingIfNeeded: start), length: UInt32(truncatingIfNeeded: length))
        }), body.count <= Int(UInt32.max), let batch = IdentifierBatch(bytes: body, plainASCIISpans: spans) {
            return (batch, nil)
        }
        let object = try request.jsonBody(maxElements: maxElements)
        return (IdentifierBatch(try self.batch(object, key.description, maxBatch: maxBatch)), object)
    }

    // MARK: - Library objects

    /// One object of type `type` from `value`; `path` is where it sits (`assets.upsert`, `assets`).
    static func libraryObject(_ value: JSONValue, type: ObjectType, path: String) throws(APIError) -> LibraryObject {
        guard case .object(let o) = value else { throw APIError.wrongType(path, "an array of objects") }
        let localIdentifier = try self.requiredString(o, "localIdentifier", path: path + ".localIdentifier")
        // Optional: absent or null keeps what is stored (the domain's empty fingerprint).
        let fingerprint = try self.string(o, "fingerprint", path: path + ".fingerprint") ?? ""
        if fingerprint.isEmpty, case .string? = o["fingerprint"] {
            throw APIError.badRequest("fingerprint of \(localIdentifier) must be base64url without padding of 16 to 64 bytes.", field: path + ".fingerprint")
        }
        var object = try self.typedObject(o, type: type, localIdentifier: localIdentifier, fingerprint: fingerprint, path: path)
        object.photoKitCloudIdentifier = try self.string(o, "photoKitCloudIdentifier", path: path + ".photoKitCloudIdentifier")
        return object
    }

    private static func typedObject(_ o: JSONObject, type: ObjectType, localIdentifier: String, fingerprint: String,
                                    path: String) throws(APIError) -> LibraryObject {
        switch type {
        case .asset:
            var mediaType = MediaType.image
            if let text = try self.string(o, "mediaType", path: path + ".mediaType") {
                guard let parsed = MediaType(rawValue: text) else {
                    throw APIError.badRequest("mediaType of \(localIdentifier) must be image, video, audio or unknown.", field: path + ".mediaType")
                }
                mediaType = parsed
            }
            return .asset(
                localIdentifier, fingerprint: fingerprint, mediaType: mediaType,
                creationDate: try self.string(o, "creationDate", path: path + ".creationDate"),
                modificationDate: try self.string(o, "modificationDate", path: path + ".modificationDate"),
                hasAdjustments: try self.bool(o, "hasAdjustments", path: path + ".hasAdjustments") ?? false,
                isFavorite: try self.bool(o, "isFavorite", path: path + ".isFavorite") ?? false)
        case .assetCollection:
            return .assetCollection(
                localIdentifier, fingerprint: fingerprint,
                title: try self.string(o, "title", path: path + ".title"),
                assets: try self.stringArray(o, "assets", path: path + ".assets") ?? [],
                appCreated: try self.bool(o, "appCreated", path: path + ".appCreated") ?? false)
        case .collectionList:
            return .collectionList(
                localIdentifier, fingerprint: fingerprint,
                title: try self.string(o, "title", path: path + ".title"),
                collections: try self.stringArray(o, "collections", path: path + ".collections") ?? [])
        }
    }

    /// `POST /v1/library/changes`: `{"assets": {"upsert": [...], "delete": [...]}, ...}`, each part optional.
    static func changeRequest(_ body: JSONObject) throws(APIError) -> LibraryChangeRequest {
        var request = LibraryChangeRequest()
        for type in ObjectType.allCases {
            let name = type.partName
            guard let part = try self.object(body, name, path: name) else { continue }
            var upsert: [LibraryObject] = []
            for value in try self.array(part, "upsert", path: name + ".upsert") ?? [] {
                upsert.append(try self.libraryObject(value, type: type, path: name + ".upsert"))
            }
            let delete = try self.stringArray(part, "delete", path: name + ".delete") ?? []
            switch type {
            case .asset: request.assets = LibraryChangePart(upsert: upsert, delete: delete)
            case .assetCollection: request.assetCollections = LibraryChangePart(upsert: upsert, delete: delete)
            case .collectionList: request.collectionLists = LibraryChangePart(upsert: upsert, delete: delete)
            }
        }
        return request
    }

    /// `PUT /v1/library`: `{"assets": [...], "assetCollections": [...], "collectionLists": [...]}`;
    /// a missing part means the library has none of that type.
    /// A manifest body (`PUT /v1/library`, an upload's part) as a snapshot. The usual shape is
    /// read one object at a time (`ObjectArraysScanner`: each element parsed and converted, then
    /// let go), so the body's whole tree is never built; any other body, and any body with
    /// something wrong in it, is parsed whole, which words the error as for every other body.
    static func snapshot(_ request: RequestContext, maxElements: Int) throws(APIError) -> LibrarySnapshot {
        let body = request.request.body
        if let parts = ObjectArraysScanner.scan(body, names: ObjectType.allCases.map(\.partName)),
           let snapshot = Self.snapshot(body, parts: parts, maxElements: maxElements) {
            return snapshot
        }
        return try Self.snapshot(try request.jsonBody(maxElements: maxElements))
    }

    /// The elements `ObjectArraysScanner` found, parsed and converted in the order `snapshot(_:)`
    /// takes them (by type, then in document order); nil at the first thing wrong (the caller then
    /// parses the body whole for its error), or past `maxElements` counted as the parser counts.
    static func snapshot(_ body: [UInt8], parts: [[Range<Int>]?], maxElements: Int) -> LibrarySnapshot? {
        var elements = parts.count { $0 != nil }   // the members themselves
        var snapshot = LibrarySnapshot()
        snapshot.reserveCapacity(parts.reduce(0) { $0 + ($1?.count ?? 0) })
        return body.withUnsafeBytes { b -> LibrarySnapshot? in
            for (type, ranges) in zip(ObjectType.allCases, parts) {
                for range in ranges ?? [] {
                    guard let value = try? JSONValue.parse(UnsafeRawBufferPointer(rebasing: b[range])),
                          let object = try? Self.libraryObject(value, type: type, path: type.partName) else { return nil }
                    elements += 1 + value.elementCount
                    snapshot.append(object)
                }
            }
            return elements <= maxElements ? snapshot : nil
        }
    }

    static func snapshot(_ body: JSONObject) throws(APIError) -> LibrarySnapshot {
        var snapshot = LibrarySnapshot()
        for type in ObjectType.allCases {
            for value in try self.array(body, type.partName, path: type.partName) ?? [] {
                snapshot.append(try self.libraryObject(value, type: type, path: type.partName))
            }
        }
        return snapshot
    }

    /// The `type` query value: a part name (`assets`), or its singular (`asset`) for convenience.
    static func objectType(query text: String) -> ObjectType? {
        if let type = ObjectType(partName: text) { return type }
        switch text {
        case "asset": return .asset
        case "assetCollection": return .assetCollection
        case "collectionList": return .collectionList
        default: return nil
        }
    }

    // MARK: - Query parameters

    /// A decimal integer query parameter; nil when absent, `400` naming it when not an integer.
    static func intQuery(_ request: RequestContext, _ name: String) throws(APIError) -> Int? {
        guard let text = request.query(name) else { return nil }
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let value = Int(text) else {
            throw APIError.badRequest("The query parameter \"\(name)\" must be a positive integer.", field: name)
        }
        return value
    }

    /// `limit` and `after` of a paged list (docs/api-notes.md); nil when neither is given (the
    /// whole list, as the API answers it).
    static func pageRequest(_ request: RequestContext) throws(APIError) -> PageRequest? {
        let limit = try Self.intQuery(request, "limit")
        let after = request.query("after")
        if after?.isEmpty == true { throw APIError.badRequest("The query parameter \"after\" must not be empty.", field: "after") }
        return limit == nil && after == nil ? nil : PageRequest(limit: limit, after: after)
    }

    /// A boolean query parameter (`true`/`false`, also `1`/`0`); nil when absent.
    static func boolQuery(_ request: RequestContext, _ name: String) throws(APIError) -> Bool? {
        guard let text = request.query(name) else { return nil }
        switch text {
        case "true", "1": return true
        case "false", "0": return false
        default: throw APIError.badRequest("The query parameter \"\(name)\" must be true or false.", field: name)
        }
    }

    // MARK: - Writing answers

    /// A `200` (or `status`) JSON answer built by `build`.
    /// `{"changeToken"}`: the answer of both token endpoints.
    static func changeTokenResponse(_ token: String) -> HTTPResponse {
        Codec.json { w in
            w.beginObject()
            w.key("changeToken"); w.string(token)
            w.endObject()
        }
    }

    /// `{"changes":[...],"changeToken","hasMore"}`: one page of either change feed.
    static func changePageResponse<Change>(
        _ changes: [Change], changeToken: String, hasMore: Bool, write: (Change, inout JSONWriter) -> Void
    ) -> HTTPResponse {
        Codec.json(capacity: 128 + 256 * changes.count) { w in
            w.beginObject()
            w.key("changes")
            w.beginArray()
            for change in changes { write(change, &w) }
            w.endArray()
            w.key("changeToken"); w.string(changeToken)
            w.key("hasMore"); w.bool(hasMore)
            w.endObject()
        }
    }

    static func json(status: Int = 200, capacity: Int = 256, _ build: (inout JSONWriter) -> Void) -> HTTPResponse {
        HTTPResponse.json(status: status, capacity: capacity, build)
    }

    /// `{"<key>":[...], ...}`: a list answer, each element written by `write`, then the members
    /// `after` writes (a page's `next` or `hasMore`). `bytesEach` sizes the buffer.
    static func list<Element>(_ key: String, _ elements: [Element], bytesEach: Int, write: (Element, inout JSONWriter) -> Void,
                              after: (inout JSONWriter) -> Void = { _ in }) -> HTTPResponse {
        Codec.json(capacity: 64 + bytesEach * elements.count) { w in
            w.beginObject()
            w.key(key)
            w.beginArray()
            for element in elements { write(element, &w) }
            w.endArray()
            after(&w)
            w.endObject()
        }
    }

    /// A stored object with its `"type"` (the part name: `assets`, `assetCollections`,
    /// `collectionLists`, the same spelling as the listing's `type` parameter). Optional
    /// fields that were never set are `null`.
    static func write(_ o: LibraryObject, into w: inout JSONWriter) {
        w.beginObject()
        w.key("localIdentifier"); w.string(o.localIdentifier)
        w.key("type"); w.string(o.type.partName)
        w.key("fingerprint"); self.optional(o.fingerprint.isEmpty ? nil : o.fingerprint, &w)
        w.key("photoKitCloudIdentifier"); self.optional(o.photoKitCloudIdentifier, &w)
        switch o.type {
        case .asset:
            w.key("mediaType"); w.string(o.mediaType.rawValue)
            w.key("creationDate"); self.optional(o.creationDate, &w)
            w.key("modificationDate"); self.optional(o.modificationDate, &w)
            w.key("hasAdjustments"); w.bool(o.hasAdjustments)
            w.key("isFavorite"); w.bool(o.isFavorite)
        case .assetCollection:
            w.key("title"); self.optional(o.title, &w)
            w.key("assets"); self.strings(o.members, &w)
            w.key("appCreated"); w.bool(o.appCreated)
        case .collectionList:
            w.key("title"); self.optional(o.title, &w)
            w.key("collections"); self.strings(o.members, &w)
        }
        w.endObject()
    }

    /// `{"changeToken","inserted","updated","deleted","unchanged"}`.
    static func write(_ r: LibraryChangeResult, into w: inout JSONWriter) {
        w.beginObject()
        w.key("changeToken"); w.string(r.changeToken)
        self.counts([("inserted", r.inserted), ("updated", r.updated), ("deleted", r.deleted), ("unchanged", r.unchanged)], into: &w)
        w.endObject()
    }

    /// A JSON object of string members, in order (the token-issuing answers, and other small ones).
    static func strings(status: Int = 200, _ members: [(String, String)]) -> HTTPResponse {
        self.json(status: status) { w in
            w.beginObject()
            for (name, value) in members { w.key(name); w.string(value) }
            w.endObject()
        }
    }

    /// Members that are counts, in order.
    static func counts(_ members: [(String, Int)], into w: inout JSONWriter) {
        for (name, value) in members { w.key(name); w.int(value) }
    }

    /// One change of a history page: every part present, or the per-change error for a reset library.
    static func write(_ change: LibraryChange, into w: inout JSONWriter) {
        w.beginObject()
        w.key("changeToken"); w.string(change.changeToken)
        if let details = change.details {
            for type in ObjectType.allCases {
                let lists = details[type]
                w.key(type.partName)
                w.beginObject()
                w.key("inserted"); self.strings(lists.inserted, &w)
                w.key("updated"); self.strings(lists.updated, &w)
                w.key("deleted"); self.strings(lists.deleted, &w)
                w.endObject()
            }
        } else {
            w.key("error"); self.write(ItemError.persistentChangeDetailsUnavailable, into: &w)
        }
        w.endObject()
    }

    static func strings(_ values: [String], _ w: inout JSONWriter) {
        w.beginArray()
        for v in values { w.string(v) }
        w.endArray()
    }

    /// A change's list, written from its bytes (no string per identifier).
    static func strings(_ values: IdentifierList, _ w: inout JSONWriter) {
        w.beginArray()
        for i in values.indices { values.withUTF8(at: i) { w.string(utf8: $0) } }
        w.endArray()
    }

    static func optional(_ value: String?, _ w: inout JSONWriter) {
        if let value { w.string(value) } else { w.null() }
    }
}
