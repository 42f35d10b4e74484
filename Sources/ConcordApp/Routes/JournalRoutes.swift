import ConcordDomain
import ConcordHTTP
import ConcordJSON
import Foundation

/// API.md §6: the account's journals, their entries, the photo picker's selection and the
/// account's journal change feed. Device tokens only (§1: journals are part of "everything a
/// device does"); an account token is `403`.
func journalRoutes(_ app: AppContext) -> [Route] {
    [
        app.deviceRoute("POST", "/v1/journals", operation: "createJournal", idempotent: true) { request, device in
            let title = try Codec.requiredString(try request.jsonBody(), "title", path: "title")
            let journal = try app.service.journals.createJournal(title: title, device: device)
            var response = Codec.json(status: 201) { w in Codec.write(journal, entries: nil, into: &w) }
            response.headers.add(name: "ETag", value: Codec.entityTag(journal.version))
            response.headers.add(name: "Location", value: "/v1/journals/" + journal.journalID)
            return response
        },
        app.deviceRoute("GET", "/v1/journals", operation: "listJournals") { request, device in
            let page = try Codec.pageRequest(request)
            let (journals, hasMore) = try app.service.journals.listJournals(device: device, page: page)
            return Codec.json(capacity: 64 + 192 * journals.count) { w in
                w.beginObject()
                w.key("journals")
                w.beginArray()
                for j in journals { Codec.write(j, entries: nil, into: &w) }
                w.endArray()
                if page != nil { w.key("hasMore"); w.bool(hasMore) }
                w.endObject()
            }
        },
        app.deviceRoute("GET", "/v1/journals/token", operation: "currentJournalChangeToken") { request, device in
            let token = try app.service.journals.currentJournalChangeToken(device: device)
            return Codec.changeTokenResponse(token)
        },
        // With `wait=S`, a poll with nothing new is held until the account's journals change (issue 13).
        app.deviceDeferredRoute("GET", "/v1/journals/changes", operation: "journalChanges") { request, device, answer in
            guard let since = request.query("since") else { throw APIError.missingField("since") }
            let limit = try Codec.intQuery(request, "limit")
            let wait = try app.waitQuery(request)
            try app.longPolls.serve(topic: .journals(accountID: device.accountID), wait: wait, request: request, answer: answer) {
                try app.requireStillAuthorized(request, device)
                let page = try app.revokedIsUnauthorized(request, device) { try app.service.journals.journalChanges(since: since, limit: limit, device: device) }
                let response = Codec.changePageResponse(page.changes, changeToken: page.changeToken, hasMore: page.hasMore) { change, w in
                    Codec.write(change, into: &w)
                }
                return (response, !page.changes.isEmpty)
            }
        },
        app.deviceRoute("GET", "/v1/journals/{journalID}", operation: "getJournal") { request, device in
            let journalID = try request.pathParameter("journalID")
            let page = try Codec.pageRequest(request)
            let detail = try app.service.journals.journal(journalID, device: device, page: page)
            let photos = detail.entries.reduce(0) { $0 + $1.photos.count }
            var response = Codec.json(capacity: 256 + 256 * detail.entries.count + 160 * photos) { w in
                Codec.write(detail.journal, entries: detail.entries, hasMore: detail.paged ? detail.hasMore : nil, into: &w)
            }
            response.headers.add(name: "ETag", value: Codec.entityTag(detail.journal.version))
            return response
        },
        app.deviceRoute("PUT", "/v1/journals/{journalID}", operation: "renameJournal") { request, device in
            let journalID = try request.pathParameter("journalID")
            let ifMatch = try Codec.ifMatch(request)
            let title = try Codec.requiredString(try request.jsonBody(), "title", path: "title")
            let journal = try app.service.journals.renameJournal(journalID, title: title, ifMatch: ifMatch, device: device)
            var response = Codec.json { w in Codec.write(journal, entries: nil, into: &w) }
            response.headers.add(name: "ETag", value: Codec.entityTag(journal.version))
            return response
        },
        app.deviceRoute("DELETE", "/v1/journals/{journalID}", operation: "deleteJournal") { request, device in
            let journalID = try request.pathParameter("journalID")
            let ifMatch = try Codec.ifMatch(request)
            try app.service.journals.deleteJournal(journalID, ifMatch: ifMatch, device: device)
            return .noContent
        },
        app.deviceRoute("PUT", "/v1/journals/{journalID}/entries/{entryID}", operation: "putEntry", body: .batch) { request, device in
            let journalID = try request.pathParameter("journalID")
            let entryID = try request.pathParameter("entryID")
            let ifMatch = try Codec.ifMatch(request)
            let body = try request.jsonBody(maxElements: app.batchElements)
            let text = try Codec.requiredString(body, "text", path: "text")
            let photos = try Codec.journalPhotos(body, maxBatch: app.service.configuration.maxBatch)
            let entry = try app.service.journals.putEntry(journalID: journalID, entryID: entryID, text: text, photos: photos, ifMatch: ifMatch, device: device)
            return Codec.entryResponse(entry)
        },
        app.deviceRoute("GET", "/v1/journals/{journalID}/entries/{entryID}", operation: "getEntry") { request, device in
            let journalID = try request.pathParameter("journalID")
            let entryID = try request.pathParameter("entryID")
            return Codec.entryResponse(try app.service.journals.entry(journalID: journalID, entryID: entryID, device: device))
        },
        app.deviceRoute("DELETE", "/v1/journals/{journalID}/entries/{entryID}", operation: "deleteEntry") { request, device in
            let journalID = try request.pathParameter("journalID")
            let entryID = try request.pathParameter("entryID")
            let ifMatch = try Codec.ifMatch(request)
            try app.service.journals.deleteEntry(journalID: journalID, entryID: entryID, ifMatch: ifMatch, device: device)
            return .noContent
        },
        app.deviceRoute("POST", "/v1/journals/{journalID}/entries/{entryID}/selection", operation: "selection", body: .batch, idempotent: true) { request, device in
            let journalID = try request.pathParameter("journalID")
            let entryID = try request.pathParameter("entryID")
            let ifMatch = try Codec.ifMatch(request)
            let body = try request.jsonBody(maxElements: app.batchElements)
            guard let cancelled = try Codec.bool(body, "cancelled", path: "cancelled") else { throw APIError.missingField("cancelled") }
            // A cancelled session may come without identifiers (the picker returned none).
            let picked = try Codec.batch(body, "localIdentifiers", maxBatch: app.service.configuration.maxBatch, required: !cancelled) ?? []
            let entry = try app.service.journals.applySelection(journalID: journalID, entryID: entryID, cancelled: cancelled, localIdentifiers: picked,
                                               ifMatch: ifMatch, device: device)
            return Codec.entryResponse(entry)
        },
    ]
}

extension Codec {
    // MARK: - Journals (§6)

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
    static func write(_ e: JournalEntryView, into w: inout JSONWriter) {
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
        w.endObject()
    }

    /// `200` with the entry and its `ETag`.
    static func entryResponse(_ entry: JournalEntryView) -> HTTPResponse {
        var response = Codec.json(capacity: 128 + entry.text.utf8.count + 160 * entry.photos.count) { w in Codec.write(entry, into: &w) }
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
