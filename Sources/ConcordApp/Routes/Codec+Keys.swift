import ConcordDomain
import ConcordHTTP
import ConcordJSON

/// Bodies and answers of the key-first mapping (API.md §5, issue 21).
extension Codec {
    /// A cloud → local batch and its optional `contentMatch` (default true). The in-place reader
    /// takes only a body with the one member, so a body that names `contentMatch` is parsed.
    static func cloudIdentifierBatch(_ request: RequestContext, maxBatch: Int, maxElements: Int) throws(APIError) -> (IdentifierBatch, contentMatch: Bool) {
        let batch = try self.identifierBatch(request, "cloudIdentifiers", maxBatch: maxBatch, maxElements: maxElements)
        // A body the scanner took has no other member; only a parsed one can say `contentMatch`.
        guard request.request.body.count > 14, self.mayName(request.request.body, "contentMatch") else { return (batch, true) }
        let object = try request.jsonBody(maxElements: maxElements)
        return (batch, try self.bool(object, "contentMatch", path: "contentMatch") ?? true)
    }

    /// Whether `bytes` hold `name` at all (a cheap test before parsing a body a second time).
    private static func mayName(_ bytes: [UInt8], _ name: String) -> Bool {
        let needle = Array(name.utf8)
        guard bytes.count >= needle.count else { return false }
        var i = 0
        while i + needle.count <= bytes.count {
            if bytes[i] == needle[0], Array(bytes[i..<(i + needle.count)]) == needle { return true }
            i += 1
        }
        return false
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
