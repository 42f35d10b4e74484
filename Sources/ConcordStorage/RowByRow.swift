import ConcordBytes

/// What a batch write keeps of a list that names one row more than once, so that one statement does
/// what one statement per item did. Both engines write with it; only their SQL differs.
enum RowByRow {
    /// Fills with a fingerprint, the first of each record only: a later fill would find the record
    /// filled already (`fillRecordFingerprints`). In input order.
    static func firstFillPerRecord(_ fills: [(guid: String, fingerprint: String)]) -> [(guid: String, fingerprint: String)] {
        var seen = Set<String>()
        return fills.filter { !$0.fingerprint.isEmpty && seen.insert($0.guid).inserted }
    }

    /// The last link of each object, objects told apart by their identifier's bytes: a later link
    /// replaces an earlier one (`setLinks`). In input order.
    /// A batch naming each object once (nearly every one) comes back as it is.
    static func lastLinkPerObject(_ links: [(localIdentifier: String, guid: String)]) -> [(localIdentifier: String, guid: String)] {
        guard let positions = self.lastLinkPositions(links) else { return links }
        return positions.map { links[$0] }
    }

    /// The positions of `lastLinkPerObject`'s links in `links`, in order; nil when every object
    /// is named once (all of them).
    static func lastLinkPositions(_ links: [(localIdentifier: String, guid: String)]) -> [Int]? {
        var last = [ByteKey: Int](minimumCapacity: links.count)
        var repeated = false
        for (i, l) in links.enumerated() where last.updateValue(i, forKey: ByteKey(l.localIdentifier)) != nil { repeated = true }
        guard repeated else { return nil }
        return links.indices.filter { last[ByteKey(links[$0].localIdentifier)] == $0 }
    }
}
