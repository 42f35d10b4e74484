import ConcordDomain
import ConcordHTTP
import ConcordJSON
import Foundation

/// The account's journals, their entries, the photo picker's selection and the
/// account's journal change feed. Device tokens only (journals are part of "everything a
/// device does"); an account token is `403`.
func journalRoutes(_ app: AppContext) -> [Route] {
    [
        app.deviceRoute("POST", "/v1/journals", operation: "createJournal", idempotent: true) { request, device in
            let title = try Codec.requiredString(try request.jsonBody(), "title", path: "title")
            let journal = try app.service.journals.createJournal(title: title, device: device, idempotency: request.idempotency)
            var response = Codec.journalResponse(journal, status: 201)
            response.headers.add(name: "Location", value: "/v1/journals/" + journal.journalID)
            return response
        },
        app.deviceRoute("GET", "/v1/journals", operation: "listJournals") { request, device in
            let page = try Codec.pageRequest(request)
            let (journals, hasMore) = try app.service.journals.listJournals(device: device, page: page)
            return Codec.journals(journals, hasMore: page != nil ? hasMore : nil)
        },
        app.deviceRoute("GET", "/v1/journals/token", operation: "currentJournalChangeToken") { request, device in
            let token = try app.service.journals.currentJournalChangeToken(device: device)
            return Codec.changeTokenResponse(token)
        },
        // With `wait=S`, a poll with nothing new is held until the account's journals change.
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
            return Codec.journalResponse(detail.journal, entries: detail.entries, hasMore: detail.paged ? detail.hasMore : nil)
        },
        app.deviceRoute("PUT", "/v1/journals/{journalID}", operation: "renameJournal") { request, device in
            let journalID = try request.pathParameter("journalID")
            let ifMatch = try Codec.ifMatch(request)
            let title = try Codec.requiredString(try request.jsonBody(), "title", path: "title")
            let journal = try app.service.journals.renameJournal(journalID, title: title, ifMatch: ifMatch, device: device)
            return Codec.journalResponse(journal)
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
            let mode = try Codec.selectionMode(body)
            let session = try PickerSessionStep.from(session: try Codec.string(body, "session", path: "session"),
                                                     sequence: try Codec.sequence(body, "sequence"))
            let outcome = try app.service.journals.applySelection(journalID: journalID, entryID: entryID, cancelled: cancelled, localIdentifiers: picked,
                                                                  mode: mode, session: session, ifMatch: ifMatch, device: device,
                                                                  idempotency: request.idempotency)
            return Codec.entryResponse(outcome.entry, applied: outcome.applied)
        },
    ]
}
