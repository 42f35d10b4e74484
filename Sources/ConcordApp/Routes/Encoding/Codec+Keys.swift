import ConcordDomain
import ConcordHTTP
import ConcordJSON

/// Bodies and answers of the key-first mapping.
extension Codec {
    /// A cloud → local batch and its optional `contentMatch` (default true). A body the in-place
    /// reader takes has the batch as its one member; any other is parsed once, and read from there.
    static func cloudIdentifierBatch(_ request: RequestContext, maxBatch: Int, maxElements: Int) throws(APIError) -> (IdentifierBatch, contentMatch: Bool) {
        let (batch, body) = try self.identifierBatchAndBody(request, "cloudIdentifiers", maxBatch: maxBatch, maxElements: maxElements)
        guard let body else { return (batch, true) }
        return (batch, try self.bool(body, "contentMatch", path: "contentMatch") ?? true)
    }

    /// `GET /v1/library/wanted`'s answer.
    static func wantedPage(_ page: WantedPage) -> HTTPResponse {
        self.json { w in
            w.beginObject()
            w.key("objects"); w.beginArray()
            for o in page.objects {
                w.beginObject()
                w.key("localIdentifier"); w.string(o.localIdentifier)
                w.key("type"); w.string(o.type.partName)
                w.endObject()
            }
            w.endArray()
            w.key("next"); if let next = page.next { w.string(next) } else { w.null() }
            w.key("total"); w.int(page.total)
            w.endObject()
        }
    }

    /// `POST /v1/library/adopt`'s answer.
    static func adoption(_ r: AdoptionResult) -> HTTPResponse {
        self.json { w in
            w.beginObject()
            self.counts([("adopted", r.adopted), ("alreadyLinked", r.alreadyLinked), ("unmatched", r.unmatched)], into: &w)
            w.key("ambiguous"); w.beginArray()
            for a in r.ambiguous {
                w.beginObject()
                w.key("cloudIdentifier"); w.string(a.cloudIdentifier)
                w.key("localIdentifiers"); w.beginArray(); for id in a.localIdentifiers { w.string(id) }; w.endArray()
                w.endObject()
            }
            w.endArray()
            w.endObject()
        }
    }

    /// `GET /v1/library/status`'s answer.
    static func libraryStatus(_ status: LibraryStatus) -> HTTPResponse {
        self.json { w in
            w.beginObject()
            self.counts([("objects", status.objects), ("withFingerprint", status.withFingerprint), ("withKey", status.withKey),
                         ("linked", status.linked), ("wanted", status.wanted)], into: &w)
            w.endObject()
        }
    }
}
