import ConcordDomain
import ConcordHTTP
import ConcordJSON

/// Answers of a device's library; the objects and changes themselves are written
/// by `Codec.write(_:into:)` (Codec.swift).
extension Codec {
    /// A library write's result (`POST /v1/library/changes`, `PUT /v1/library`, an upload's commit).
    static func changeResult(_ result: LibraryChangeResult) -> HTTPResponse {
        Codec.json { Codec.write(result, into: &$0) }
    }

    /// One object (`GET /v1/library/objects/{localIdentifier}`).
    static func object(_ object: LibraryObject) -> HTTPResponse {
        Codec.json { Codec.write(object, into: &$0) }
    }

    /// `{"objects": [...], "next": ...}`: a page of the library.
    static func objectsPage(_ objects: [LibraryObject], next: String?) -> HTTPResponse {
        Codec.list("objects", objects, bytesEach: 160, write: { Codec.write($0, into: &$1) }) { w in
            w.key("next"); Codec.optional(next, &w)
        }
    }

    /// `{"parts", "objects"}`: an upload's progress after a part.
    static func uploadProgress(_ progress: UploadProgress) -> HTTPResponse {
        Codec.json { w in
            w.beginObject()
            w.key("parts"); w.int(progress.parts)
            w.key("objects"); w.int(progress.objects)
            w.endObject()
        }
    }
}
