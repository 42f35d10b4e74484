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
        var last = [ByteKey: Int](minimumCapacity: links.count)
        var repeated = false
        for (i, l) in links.enumerated() where last.updateValue(i, forKey: ByteKey(l.localIdentifier)) != nil { repeated = true }
        guard repeated else { return links }
        return links.enumerated().filter { last[ByteKey($0.element.localIdentifier)] == $0.offset }.map(\.element)
    }
}
